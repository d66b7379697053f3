"""Alpha-beta search: iterative deepening PVS with a transposition table, quiescence (delta
pruning, a cheap SEE, quiet checks at its first ply), null move, killers/history, late-move
reductions, reverse futility, futility and late-move pruning near the leaves, check extension,
mate-distance scores and repetition rules (constants and result types: ``search_defs``).
The static score is the incremental tables plus positional terms (``evaluate.positional``) cached by
key and skipped when the tables alone are far outside the window (lazy evaluation).

Entry point: ``search(pos, depth=…, time_limit=…, nodes=…, multipv=…, stop=…, on_info=…)`` or a
reusable ``Searcher`` (keeps its transposition table between calls; ``stop()`` from any thread).
Scores are centipawns from the side to move's point of view; ``MATE - n`` means mate in ``n`` plies.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable

from moddesk.xiangqi.core.board import KING, LINES, PAWN, SENSITIVE, Move, Position, is_attacked
from moddesk.xiangqi.core.evaluate import PIECE_VALUES, PST, evaluate_red, positional
from moddesk.xiangqi.core.search_defs import (
    CHECK_TO,
    EXACT,
    FUTILITY_MARGIN,
    INF,
    LAZY_MARGIN,
    LMP_COUNT,
    LOWER,
    MATE,
    MATE_BOUND,
    MAX_PLY,
    MVV_LVA,
    POSITIONAL_CACHE,
    RFP_MARGIN,
    RFP_MAX,
    UPPER,
    Line,
    SearchInfo,
    SearchResult,
    SearchStopped,
    cycle_score,
    game_checks,
    mate_in,
    principal_variation,
)

__all__ = [
    "CHECK_TO",
    "INF",
    "MATE",
    "MATE_BOUND",
    "Line",
    "SearchInfo",
    "SearchResult",
    "Searcher",
    "mate_in",
    "search",
]


class Searcher:
    """A search engine instance; reuse it to keep the transposition table between searches."""

    def __init__(self, tt_entries: int = 1 << 20, quiet_checks: bool = True) -> None:
        """``quiet_checks``: quiescence also tries quiet checks at its first ply (off for the capped
        local-opponent levels, which were measured without it)."""
        self.quiet_checks = quiet_checks
        self.tt: dict[int, tuple[int, int, int, tuple[int, int] | None]] = {}
        self.tt_entries = tt_entries
        self.pcache: dict[int, int] = {}  # Zobrist key -> positional terms (Red's view)
        self._stop_event = threading.Event()
        self._external_stop: threading.Event | None = None
        self.nodes = 0
        self.seldepth = 0

    def stop(self) -> None:
        """Ask a running search to stop soon and return its best result so far (thread-safe)."""
        self._stop_event.set()

    def resize(self, tt_entries: int) -> None:
        """Change the transposition table bound (entries) and clear it."""
        self.tt_entries = max(1024, tt_entries)
        self.tt.clear()

    # ----- public entry --------------------------------------------------------------------

    def search(
        self,
        pos: Position,
        depth: int | None = None,
        time_limit: float | None = None,
        nodes: int | None = None,
        multipv: int = 1,
        stop: threading.Event | None = None,
        history: Iterable[int] | None = None,
        on_info: Callable[[SearchInfo], None] | None = None,
    ) -> SearchResult:
        """Search ``pos`` (left unchanged) until a depth, time (seconds) or node limit, or ``stop``.

        ``history``: Zobrist keys of earlier game positions, so repeating one scores as a draw, or as
        a loss for a perpetual checker where ``pos`` was reached by pushing those positions' moves.
        With no limit at all the search runs until stopped (or depth 64).
        """
        self._stop_event.clear()
        self._external_stop = stop
        self.pos = pos.copy()
        self.board = self.pos.board
        self.nodes = 0
        self.seldepth = 0
        self.start = time.monotonic()
        self.deadline = self.start + time_limit if time_limit is not None else None
        self.node_limit = nodes
        max_depth = depth if depth is not None else 64
        self.killers: list[list[tuple[int, int] | None]] = [[None, None] for _ in range(MAX_PLY + 2)]
        self.hist = [0] * 8100  # by from * 90 + to
        self.ev = evaluate_red(self.pos)
        self.ev_stack: list[int] = []
        window = self.pos.halfmove
        keys = list(history or [])
        if keys and keys[-1] == self.pos.key:
            keys.pop()
        recent = keys[-window:] if window else []
        self.game_keys = set(recent)
        self.game_checks = game_checks(self.pos, recent)
        self.game_path = recent[len(recent) - len(self.game_checks) :]
        self.path_keys = [self.pos.key]
        self.path_checks = [self.pos.is_check()]
        self.null_plies: list[int] = []
        self.root_best: tuple[tuple[int, int], int] | None = None
        self.rep_hits = 0
        if len(self.tt) > self.tt_entries:
            self.tt.clear()
        if len(self.pcache) > POSITIONAL_CACHE:
            self.pcache.clear()

        root_moves = self.pos.generate_legal()
        if not root_moves:
            return SearchResult(None, [], 0, 0, 0.0)
        multipv = max(1, min(multipv, len(root_moves)))
        lines: list[Line] = []
        completed = 0
        stopped = False
        scores: dict[tuple[int, int], int] = {}
        for d in range(1, max_depth + 1):
            self.root_depth = d
            new_lines: list[Line] = []
            excluded: list[tuple[int, int]] = []
            try:
                for k in range(multipv):
                    candidates = [m for m in root_moves if m not in excluded]
                    candidates.sort(key=lambda m: -scores.get(m, -INF))
                    move, score = self._root(d, candidates, scores)
                    excluded.append(move)
                    pv = principal_variation(self.pos, self.tt, move, d)
                    line = Line(Move(*move), score, mate_in(score), d, pv)
                    new_lines.append(line)
                    if on_info is not None:
                        on_info(self._info(line, k + 1))
            except SearchStopped:
                stopped = True
                if multipv == 1 and self.root_best is not None:
                    # the unfinished depth searched its first move fully (and maybe found a better
                    # one): that result is deeper than the last finished depth's
                    move, score = self.root_best
                    lines = [
                        Line(
                            Move(*move),
                            score,
                            mate_in(score),
                            d,
                            principal_variation(self.pos, self.tt, move, d),
                        )
                    ]
                elif not lines:
                    lines = new_lines  # depth 1 did not finish: keep whatever it found
                break
            lines = sorted(new_lines, key=lambda ln: -ln.score)
            completed = d
            best = lines[0].score
            mate = mate_in(best)
            if mate is not None and multipv == 1 and d >= 2 * abs(mate) + 2:
                break  # the mate was found with room to spare: deeper search will not change it
            if (
                multipv > 1
                and self.deadline is not None
                and time.monotonic() - self.start > 0.55 * (self.deadline - self.start)
            ):
                # another depth would most likely not finish in time (a single line uses the rest:
                # an unfinished depth still reports its best move once the first move is searched)
                break
        if not lines:
            first = Move(*root_moves[0])
            lines = [Line(first, 0, None, 0, [first])]
        elapsed = time.monotonic() - self.start
        return SearchResult(lines[0].move, lines, completed, self.nodes, elapsed, stopped)

    # ----- internals -------------------------------------------------------------------------

    def _info(self, line: Line, index: int) -> SearchInfo:
        elapsed = time.monotonic() - self.start
        return SearchInfo(
            depth=line.depth,
            seldepth=self.seldepth,
            multipv=index,
            score=line.score,
            mate=line.mate,
            nodes=self.nodes,
            nps=int(self.nodes / elapsed) if elapsed > 0 else 0,
            time=elapsed,
            pv=line.pv,
        )

    def _check_limits(self) -> None:
        if self._stop_event.is_set() or (self._external_stop is not None and self._external_stop.is_set()):
            raise SearchStopped
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise SearchStopped
        if self.node_limit is not None and self.nodes >= self.node_limit:
            raise SearchStopped

    def _make(self, m: tuple[int, int]) -> bool:
        """Play ``m``; return whether it gives check."""
        frm, to = m
        board = self.board
        p = board[frm]
        self.ev_stack.append(self.ev)
        self.ev += PST[p][to] - PST[p][frm] - PST[board[to]][to]
        pos = self.pos
        enemy_king = pos.kings[1 - pos.turn]
        pos.push(m)
        check = (frm in SENSITIVE[enemy_king] or to in CHECK_TO[enemy_king]) and pos.is_check()
        self.path_keys.append(pos.key)
        self.path_checks.append(check)
        return check

    def _try(self, m: tuple[int, int], king: int, in_check: bool) -> int:
        """Play a pseudo-legal ``m``: -1 (and nothing played) if it leaves our king attacked,
        else 1 if it gives check, 0 if not."""
        frm, to = m
        board = self.board
        pos = self.pos
        p = board[frm]
        cap = board[to]
        enemy_king = pos.kings[1 - pos.turn]
        pos.push(m)
        # only a king move, an evasion, or a move on/off the king's lines can expose the king
        if (in_check or frm == king or frm in SENSITIVE[king] or to in LINES[king]) and is_attacked(
            board, pos.kings[1 - pos.turn], pos.sign
        ):
            pos.pop()
            return -1
        self.ev_stack.append(self.ev)
        self.ev += PST[p][to] - PST[p][frm] - PST[cap][to]
        check = (frm in SENSITIVE[enemy_king] or to in CHECK_TO[enemy_king]) and pos.is_check()
        self.path_keys.append(pos.key)
        self.path_checks.append(check)
        return 1 if check else 0

    def _unmake(self) -> None:
        self.pos.pop()
        self.ev = self.ev_stack.pop()
        self.path_keys.pop()
        self.path_checks.pop()

    def _repetition(self, ply: int) -> int | None:
        """Score of a repeated position (draw, or a loss for a perpetual checker), else None."""
        keys = self.path_keys
        key = keys[ply]
        reversible = self.pos.halfmove
        # a cycle may not span a null move (the side to move was swapped there)
        floor = self.null_plies[-1] if self.null_plies else 0
        j = ply - 4
        while j >= floor and ply - j <= reversible:
            if keys[j] == key:
                return cycle_score(self.path_checks, 0, ply, j)
            j -= 2
        if reversible >= ply and not self.null_plies and key in self.game_keys:
            # a position of the game before the search: judge the cycle if the record reaches it
            path = self.game_path
            for j in range(-1, -len(path) - 1, -1):
                if path[j] == key and ply - j <= reversible:
                    offset = len(path)
                    return cycle_score([*self.game_checks, *self.path_checks[: ply + 1]], offset, ply, j)
            return 0
        return None

    def _order(
        self, moves: list[tuple[int, int]], tt_move: tuple[int, int] | None, ply: int
    ) -> list[tuple[int, int]]:
        board = self.board
        k0, k1 = self.killers[ply]
        hist = self.hist
        scored = []
        for m in moves:
            frm, to = m
            victim = board[to]
            if m == tt_move:
                s = 10_000_000
            elif victim:
                s = 1_000_000 + MVV_LVA[abs(victim)][abs(board[frm])]
            elif m == k0:
                s = 900_000
            elif m == k1:
                s = 800_000
            else:
                s = hist[frm * 90 + to]
            scored.append((s, m))
        scored.sort(reverse=True)
        return [m for _, m in scored]

    def _root(
        self, depth: int, moves: list[tuple[int, int]], scores: dict[tuple[int, int], int]
    ) -> tuple[tuple[int, int], int]:
        alpha, beta = -INF, INF
        best_move = moves[0]
        self.root_best = None
        for i, m in enumerate(moves):
            gives = self._make(m)
            try:
                nd = depth - 1 + (1 if gives else 0)
                if i == 0:
                    score = -self._negamax(nd, -beta, -alpha, 1, gives, True)
                else:
                    score = -self._negamax(nd, -alpha - 1, -alpha, 1, gives, True)
                    if score > alpha:
                        score = -self._negamax(nd, -beta, -alpha, 1, gives, True)
            finally:
                self._unmake()
            if score > alpha:
                alpha = score
                best_move = m
                self.root_best = (m, score)
            else:
                # a fail-low is an upper bound that may equal alpha (pruned nodes return alpha): rank
                # it strictly below the best so the next depth searches the best move first
                score = min(score, alpha - 1)
            scores[m] = score
        self._store(self.pos.key, depth, EXACT, alpha, best_move, 0)
        return best_move, alpha

    def _store(
        self, key: int, depth: int, flag: int, score: int, move: tuple[int, int] | None, ply: int
    ) -> None:
        if score > MATE_BOUND:
            score += ply
        elif score < -MATE_BOUND:
            score -= ply
        self.tt[key] = (depth, flag, score, move)

    def _negamax(self, depth: int, alpha: int, beta: int, ply: int, in_check: bool, allow_null: bool) -> int:
        self.nodes += 1
        if not self.nodes & 255:
            self._check_limits()
        rep = self._repetition(ply)
        if rep is not None:
            self.rep_hits += 1
            return rep
        # mate-distance pruning
        if alpha < -MATE + ply:
            alpha = -MATE + ply
        if beta > MATE - ply - 1:
            beta = MATE - ply - 1
        if alpha >= beta:
            return alpha
        if depth <= 0 or ply >= MAX_PLY:
            return self._quiesce(alpha, beta, ply, in_check, self.quiet_checks)
        pos = self.pos
        key = pos.key
        pv_node = beta - alpha > 1
        entry = self.tt.get(key)
        tt_move = None
        if entry is not None:
            e_depth, flag, score, tt_move = entry
            if e_depth >= depth and not pv_node:
                if score > MATE_BOUND:
                    score -= ply
                elif score < -MATE_BOUND:
                    score += ply
                if flag == EXACT or (flag == LOWER and score >= beta) or (flag == UPPER and score <= alpha):
                    return score
        static = self._static() if depth <= 3 and not pv_node and not in_check else self.ev * pos.sign
        # reverse futility: far above beta near the leaves, a quiet position stays above it. Not with a
        # winning material lead (a rook and more): there the mating net is what matters, and an
        # unproven static win would hide it (Stockfish keeps the same rule for known wins)
        if (
            not pv_node
            and not in_check
            and depth <= 3
            and abs(beta) < RFP_MAX
            and static - RFP_MARGIN[depth] >= beta
            and static < RFP_MAX
        ):
            return static - RFP_MARGIN[depth]
        # null move: give the opponent a free move; if we still beat beta, this node is not worth it.
        # Not when beta is a mated score: the reduced search after the pass cannot see the mate, so
        # the cutoff would hide a shorter mate found deeper (the parent then reports a longer one)
        if (
            allow_null
            and not pv_node
            and not in_check
            and depth >= 3
            and beta > -MATE_BOUND
            and static >= beta
            and self._has_pieces(pos.turn)
        ):
            pos.push_null()
            self.path_keys.append(pos.key)
            self.path_checks.append(False)
            self.null_plies.append(ply + 1)
            try:
                reduce = 4 if depth >= 6 else 3
                score = -self._negamax(depth - reduce, -beta, -beta + 1, ply + 1, False, False)
            finally:
                pos.pop_null()
                self.path_keys.pop()
                self.path_checks.pop()
                self.null_plies.pop()
            if score >= beta and score < MATE_BOUND:
                return beta
        # a score that depends on a repetition in the current path is not a property of the
        # position: keep it out of the table (graph-history interaction)
        rep_hits = self.rep_hits
        ordered = self._order(pos.pseudo_moves(), tt_move, ply)
        board = self.board
        king = pos.kings[pos.turn]
        best = -INF
        best_move = None
        original_alpha = alpha
        extend_ok = ply < 2 * self.root_depth + 4
        killers = self.killers[ply]
        # futility: near the leaves and far below alpha, only captures and checks can matter
        prune_quiets = (
            not pv_node and not in_check and depth <= 3 and alpha > -MATE_BOUND and beta < MATE_BOUND
        )
        futile = prune_quiets and depth <= 2 and static + FUTILITY_MARGIN[depth] <= alpha
        late = LMP_COUNT[depth] if prune_quiets else 1000
        enemy_king = pos.kings[1 - pos.turn]
        check_from, check_to = SENSITIVE[enemy_king], CHECK_TO[enemy_king]
        i = -1
        pruned = False
        for m in ordered:
            frm, to = m
            quiet = not board[to]
            if (
                quiet
                and i >= 0
                and (futile or i + 1 >= late)
                and frm not in check_from
                and to not in check_to
                and m not in killers
            ):
                i += 1  # skipped unplayed: it cannot give check (and may be illegal, no matter)
                pruned = True
                continue
            tried = self._try(m, king, in_check)
            if tried < 0:
                continue  # illegal: leaves our king attacked
            i += 1
            gives = tried == 1
            try:
                nd = depth - 1 + (1 if gives and extend_ok else 0)
                if i == 0:
                    score = -self._negamax(nd, -beta, -alpha, ply + 1, gives, True)
                else:
                    reduction = 0
                    if depth >= 3 and i >= 3 and quiet and not in_check and not gives and m not in killers:
                        reduction = 2 if i >= 10 and depth >= 5 else 1
                    score = -self._negamax(nd - reduction, -alpha - 1, -alpha, ply + 1, gives, True)
                    if score > alpha and reduction:
                        score = -self._negamax(nd, -alpha - 1, -alpha, ply + 1, gives, True)
                    if alpha < score < beta:
                        score = -self._negamax(nd, -beta, -alpha, ply + 1, gives, True)
            finally:
                self._unmake()
            if score > best:
                best = score
                best_move = m
                if score > alpha:
                    alpha = score
                    if score >= beta:
                        if quiet:
                            if killers[0] != m:
                                killers[1] = killers[0]
                                killers[0] = m
                            self.hist[m[0] * 90 + m[1]] += depth * depth
                        break
        if i < 0:
            return -MATE + ply  # no legal move: checkmate and stalemate both lose
        if pruned and best < alpha:
            best = alpha  # the skipped moves were not searched: claim no more than a fail-low
        flag = LOWER if best >= beta else EXACT if best > original_alpha else UPPER
        if self.rep_hits == rep_hits:
            self._store(key, depth, flag, best, best_move, ply)
        elif entry is None or entry[3] is None:
            self.tt[key] = (-1, UPPER, INF, best_move)  # keep only the move for ordering
        return best

    def _static(self) -> int:
        """The full static score (tables + positional terms) for the side to move."""
        pos = self.pos
        extra = self.pcache.get(pos.key)
        if extra is None:
            extra = positional(self.board, pos.pieces, pos.kings)
            self.pcache[pos.key] = extra
        return (self.ev + extra) * pos.sign

    def _has_pieces(self, color: int) -> bool:
        """True if ``color`` has a rook, horse or cannon (null move is unsafe in bare endings)."""
        board = self.board
        return any(abs(board[sq]) in (4, 5, 6) for sq in self.pos.pieces[color])

    def _quiesce(self, alpha: int, beta: int, ply: int, in_check: bool, checks: bool = False) -> int:
        """Captures (all evasions in check) until quiet; ``checks``: also quiet checking moves (the
        first quiescence ply only), so a mate or a fork by check just past the horizon is seen."""
        self.nodes += 1
        if not self.nodes & 255:
            self._check_limits()
        if ply > self.seldepth:
            self.seldepth = ply
        pos = self.pos
        if ply >= MAX_PLY:
            return self.ev * pos.sign
        if in_check:
            moves = pos.pseudo_moves()
            best = -INF
        else:
            stand = self.ev * pos.sign
            if stand - LAZY_MARGIN < beta:
                stand = self._static()
            if stand >= beta:
                return stand
            if stand > alpha:
                alpha = stand
            best = stand
            moves = pos.pseudo_moves(captures_only=True)
        king = pos.kings[pos.turn]
        legal = 0
        board = self.board
        scored = sorted(((MVV_LVA[abs(board[m[1]])][abs(board[m[0]])], m) for m in moves), reverse=True)
        them = -pos.sign
        for _, m in scored:
            if not in_check and best > -MATE_BOUND:
                # delta pruning: even winning this piece cannot lift alpha
                victim = abs(board[m[1]])
                gain = PIECE_VALUES[victim] + (100 if victim == PAWN else 0)
                if victim and best + gain + 200 < alpha:
                    continue
                # a bigger piece taking a defended smaller one loses material (a cheap SEE)
                attacker = abs(board[m[0]])
                if (
                    victim
                    and attacker != KING
                    and PIECE_VALUES[attacker] > gain + 50
                    and is_attacked(board, m[1], them)
                ):
                    continue
            tried = self._try(m, king, in_check)
            if tried < 0:
                continue
            legal += 1
            try:
                score = -self._quiesce(-beta, -alpha, ply + 1, tried == 1)
            finally:
                self._unmake()
            if score > best:
                best = score
                if score > alpha:
                    alpha = score
                    if score >= beta:
                        break
        if in_check and not legal:
            return -MATE + ply
        if checks and not in_check and best < beta:
            best = self._quiet_checks(alpha, beta, ply, best)
        return best

    def _quiet_checks(self, alpha: int, beta: int, ply: int, best: int) -> int:
        """Quiet moves that give check, searched one quiescence ply deep (see ``_quiesce``)."""
        pos = self.pos
        board = self.board
        king = pos.kings[pos.turn]
        enemy_king = pos.kings[1 - pos.turn]
        check_from, check_to = SENSITIVE[enemy_king], CHECK_TO[enemy_king]
        for m in pos.pseudo_moves():
            frm, to = m
            if board[to] or (frm not in check_from and to not in check_to):
                continue
            tried = self._try(m, king, False)
            if tried != 1:
                if tried == 0:
                    self._unmake()
                continue
            try:
                score = -self._quiesce(-beta, -alpha, ply + 1, True)
            finally:
                self._unmake()
            if score > best:
                best = score
                if score > alpha:
                    alpha = score
                    if score >= beta:
                        break
        return best


def search(
    pos: Position,
    depth: int | None = None,
    time_limit: float | None = None,
    nodes: int | None = None,
    multipv: int = 1,
    stop: threading.Event | None = None,
    history: Iterable[int] | None = None,
    on_info: Callable[[SearchInfo], None] | None = None,
    quiet_checks: bool = True,
) -> SearchResult:
    """Search ``pos`` with a fresh ``Searcher`` (see ``Searcher.search`` for the limits)."""
    return Searcher(quiet_checks=quiet_checks).search(
        pos, depth, time_limit, nodes, multipv, stop, history, on_info
    )
