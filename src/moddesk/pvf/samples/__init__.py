"""Generated sample archives (deterministic, both families), the demo that runs on them, and the
digests (``equality``) that prove a faster path gives the results of an earlier one.
"""
