"""The rules and the built-in engine, pure (no I/O): board and FEN, legal moves, notations,
placement checks, evaluation, search, the opening book and the local opponent's levels.
"""
