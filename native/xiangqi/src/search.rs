//! The search: iterative deepening PVS over a transposition table, with aspiration windows, null
//! move, late-move reductions, killers and history, reverse futility / futility / late-move
//! pruning near the leaves, check extensions, quiescence (captures, all evasions in check, quiet
//! checks at its first ply), mate-distance pruning and the reference's repetition scoring
//! (a repeated position is a draw unless one side checked with every move: it loses).
//!
//! Limits: depth, time (a deadline checked every 1024 nodes), nodes, and a stop flag
//! (`Arc<AtomicBool>`) any thread may set. Scores are centipawns for the side to move;
//! `MATE - n` means mate in `n` plies.

use crate::board::{Move, MoveList, Position};
use crate::eval::{self, PIECE_VALUES, TEMPO};
use crate::tables::{has, zobrist_row, CANNON, HORSE, KING, PAWN, RED, ROOK};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const MATE: i32 = 30000;
pub const MATE_BOUND: i32 = MATE - 500;
pub const INF: i32 = 32000;
pub const MAX_PLY: usize = 120;
const EXACT: u8 = 0;
const LOWER: u8 = 1;
const UPPER: u8 = 2;
const ORDER_VALUE: [i32; 8] = [0, 10000, 200, 200, 400, 900, 450, 100];

/// Moves to mate for a mate score (+ the side to move mates, − it is mated), else None.
pub fn mate_in(score: i32) -> Option<i32> {
    if score > MATE_BOUND {
        Some((MATE - score + 1) / 2)
    } else if score < -MATE_BOUND {
        Some(-((MATE + score) / 2))
    } else {
        None
    }
}

#[derive(Clone, Copy, Default)]
struct Entry {
    key: u64,
    mv: Move,
    score: i16,
    depth: i8,
    flag: u8,
}

/// What to search for; every limit is optional (none at all: until stopped, or depth 100).
#[derive(Clone, Debug, Default)]
pub struct Limits {
    pub depth: Option<u32>,
    pub time: Option<Duration>,
    pub nodes: Option<u64>,
    pub multipv: usize,
}

#[derive(Clone, Debug)]
pub struct Line {
    pub mv: Move,
    pub score: i32,
    pub mate: Option<i32>,
    pub depth: u32,
    pub pv: Vec<Move>,
}

/// Progress after every finished depth and MultiPV line.
#[derive(Clone, Debug)]
pub struct Info {
    pub depth: u32,
    pub seldepth: u32,
    pub multipv: usize,
    pub score: i32,
    pub mate: Option<i32>,
    pub nodes: u64,
    pub nps: u64,
    pub time: f64,
    pub pv: Vec<Move>,
}

#[derive(Clone, Debug)]
pub struct SearchResult {
    pub best: Option<Move>,
    pub lines: Vec<Line>,
    pub depth: u32,
    pub nodes: u64,
    pub time: f64,
    pub stopped: bool,
}

/// A reusable engine: keeps its transposition table between searches.
pub struct Searcher {
    tt: Vec<Entry>,
    stop: Arc<AtomicBool>,
    /// quiescence also tries quiet checks at its first ply
    pub quiet_checks: bool,
}

impl Default for Searcher {
    fn default() -> Self {
        Searcher::new(32)
    }
}

impl Searcher {
    /// A searcher with a table of about `hash_mb` megabytes.
    pub fn new(hash_mb: usize) -> Searcher {
        let mut s = Searcher {
            tt: Vec::new(),
            stop: Arc::new(AtomicBool::new(false)),
            quiet_checks: true,
        };
        s.resize(hash_mb);
        s
    }

    /// Change the table size (megabytes, rounded down to a power of two entries) and clear it.
    pub fn resize(&mut self, hash_mb: usize) {
        let bytes = hash_mb.clamp(1, 4096) << 20;
        let mut entries = 1usize;
        while entries * 2 * std::mem::size_of::<Entry>() <= bytes {
            entries *= 2;
        }
        self.tt = vec![Entry::default(); entries];
    }

    pub fn clear(&mut self) {
        self.tt.iter_mut().for_each(|e| *e = Entry::default());
    }

    /// The flag that stops a running search (set it from any thread).
    pub fn stop_handle(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.stop)
    }

    /// Search `pos` (its pushed moves are the game so far). `history`: Zobrist keys of earlier
    /// game positions, so repeating one scores as a draw (or a loss for a perpetual checker).
    /// The stop flag is cleared when the search begins: set it only while a search runs.
    pub fn search(
        &mut self,
        pos: &Position,
        limits: &Limits,
        history: &[u64],
        on_info: &mut dyn FnMut(&Info),
    ) -> SearchResult {
        self.stop.store(false, Ordering::Relaxed);
        let mut run = Run::new(self, pos, limits, history);
        let result = run.iterate(limits, on_info);
        drop(run);
        result
    }
}

struct Run<'a> {
    tt: &'a mut Vec<Entry>,
    stop: &'a AtomicBool,
    quiet_checks: bool,
    pos: Position,
    ev: i32,
    nodes: u64,
    seldepth: u32,
    start: Instant,
    deadline: Option<Instant>,
    node_limit: Option<u64>,
    stopped: bool,
    killers: Vec<[Move; 2]>,
    history: Vec<i32>,
    path_keys: Vec<u64>,
    path_checks: Vec<bool>,
    null_plies: Vec<usize>,
    game_keys: HashSet<u64>,
    game_path: Vec<u64>,
    game_checks: Vec<bool>,
    root_best: Option<(Move, i32)>,
    rep_hits: u64,
    root_depth: u32,
    lmr: [[u8; 64]; 64],
}

impl<'a> Run<'a> {
    fn new(
        searcher: &'a mut Searcher,
        pos: &Position,
        limits: &Limits,
        history: &[u64],
    ) -> Run<'a> {
        let start = Instant::now();
        let pos = pos.clone();
        let window = pos.halfmove as usize;
        let mut keys: Vec<u64> = history.to_vec();
        if keys.last() == Some(&pos.key) {
            keys.pop();
        }
        let recent: Vec<u64> = keys[keys.len().saturating_sub(window)..].to_vec();
        let game_checks = game_checks(&pos, &recent);
        let game_path = recent[recent.len() - game_checks.len()..].to_vec();
        let mut lmr = [[0u8; 64]; 64];
        for (d, row) in lmr.iter_mut().enumerate().skip(1) {
            for (i, cell) in row.iter_mut().enumerate().skip(1) {
                *cell = (0.5 + (d as f64).ln() * (i as f64).ln() / 2.2) as u8;
            }
        }
        let in_check = pos.is_check();
        Run {
            ev: eval::table_score(&pos.board),
            path_keys: vec![pos.key],
            path_checks: vec![in_check],
            pos,
            tt: &mut searcher.tt,
            stop: &searcher.stop,
            quiet_checks: searcher.quiet_checks,
            nodes: 0,
            seldepth: 0,
            start,
            deadline: limits.time.map(|t| start + t),
            node_limit: limits.nodes,
            stopped: false,
            killers: vec![[Move::NONE; 2]; MAX_PLY + 2],
            history: vec![0; 8100],
            null_plies: Vec::new(),
            game_keys: recent.iter().copied().collect(),
            game_path,
            game_checks,
            root_best: None,
            rep_hits: 0,
            root_depth: 0,
            lmr,
        }
    }

    fn elapsed(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    fn iterate(&mut self, limits: &Limits, on_info: &mut dyn FnMut(&Info)) -> SearchResult {
        let mut root_moves = self.pos.legal_vec();
        if root_moves.is_empty() {
            return SearchResult {
                best: None,
                lines: vec![],
                depth: 0,
                nodes: 0,
                time: 0.0,
                stopped: false,
            };
        }
        let multipv = limits.multipv.clamp(1, root_moves.len());
        let max_depth = limits.depth.unwrap_or(100).clamp(1, MAX_PLY as u32 - 8);
        let mut lines: Vec<Line> = Vec::new();
        let mut completed = 0;
        let mut scores: Vec<(Move, i32)> = root_moves.iter().map(|&m| (m, -INF)).collect();
        // order the first depth by a one-ply look: captures first
        root_moves.sort_by_key(|m| -PIECE_VALUES[self.pos.board[m.to()].unsigned_abs() as usize]);
        for d in 1..=max_depth {
            self.root_depth = d;
            let mut new_lines: Vec<Line> = Vec::new();
            let mut excluded: Vec<Move> = Vec::new();
            for k in 0..multipv {
                let mut candidates: Vec<Move> = root_moves
                    .iter()
                    .copied()
                    .filter(|m| !excluded.contains(m))
                    .collect();
                candidates
                    .sort_by_key(|m| -scores.iter().find(|(x, _)| x == m).map_or(-INF, |s| s.1));
                let previous = lines.get(k).map(|l| l.score);
                let (mv, score) = self.root_aspiration(d, &candidates, &mut scores, previous);
                if self.stopped {
                    break;
                }
                excluded.push(mv);
                let pv = self.principal_variation(mv, d);
                let line = Line {
                    mv,
                    score,
                    mate: mate_in(score),
                    depth: d,
                    pv,
                };
                on_info(&self.info(&line, k + 1));
                new_lines.push(line);
            }
            if self.stopped {
                if multipv == 1 {
                    if let Some((mv, score)) = self.root_best {
                        // the unfinished depth searched its first move fully (maybe found a better one)
                        let pv = self.principal_variation(mv, d);
                        lines = vec![Line {
                            mv,
                            score,
                            mate: mate_in(score),
                            depth: d,
                            pv,
                        }];
                    }
                } else if lines.is_empty() {
                    lines = new_lines;
                }
                break;
            }
            new_lines.sort_by_key(|l| -l.score);
            lines = new_lines;
            completed = d;
            if let Some(mate) = lines[0].mate {
                if multipv == 1 && d >= 2 * mate.unsigned_abs() + 2 {
                    break; // found with room to spare: deeper search will not change it
                }
            }
            if let Some(deadline) = self.deadline {
                let budget = (deadline - self.start).as_secs_f64();
                let share = if multipv > 1 { 0.55 } else { 0.6 };
                if self.elapsed() > share * budget && d >= 4 {
                    break; // the next depth would most likely not finish in time
                }
            }
        }
        if lines.is_empty() {
            let first = root_moves[0];
            lines = vec![Line {
                mv: first,
                score: 0,
                mate: None,
                depth: 0,
                pv: vec![first],
            }];
        }
        SearchResult {
            best: Some(lines[0].mv),
            lines,
            depth: completed,
            nodes: self.nodes,
            time: self.elapsed(),
            stopped: self.stopped,
        }
    }

    fn info(&self, line: &Line, index: usize) -> Info {
        let time = self.elapsed();
        Info {
            depth: line.depth,
            seldepth: self.seldepth,
            multipv: index,
            score: line.score,
            mate: line.mate,
            nodes: self.nodes,
            nps: if time > 0.0 {
                (self.nodes as f64 / time) as u64
            } else {
                0
            },
            time,
            pv: line.pv.clone(),
        }
    }

    fn check_limits(&mut self) {
        if self.stop.load(Ordering::Relaxed) {
            self.stopped = true;
        }
        if let Some(deadline) = self.deadline {
            if Instant::now() >= deadline {
                self.stopped = true;
            }
        }
        if let Some(limit) = self.node_limit {
            if self.nodes >= limit {
                self.stopped = true;
            }
        }
    }

    // ----- make / unmake ------------------------------------------------------------------

    /// Play a pseudo-legal move: false (nothing played) if it leaves our king attacked.
    #[inline]
    fn make(&mut self, m: Move, in_check: bool) -> Option<bool> {
        if self.pos.leaves_king_attacked(m, in_check) {
            return None;
        }
        let pst = eval::pst();
        let (from, to) = (m.from(), m.to());
        let p = self.pos.board[from];
        let cap = self.pos.board[to];
        self.ev += pst[zobrist_row(p)][to] - pst[zobrist_row(p)][from];
        if cap != 0 {
            self.ev -= pst[zobrist_row(cap)][to];
        }
        let t = self.pos.t;
        let enemy_king = self.pos.kings[1 - self.pos.turn];
        self.pos.push(m);
        let check = (has(t.sensitive[enemy_king], from) || has(t.check_to[enemy_king], to))
            && self.pos.is_check();
        self.path_keys.push(self.pos.key);
        self.path_checks.push(check);
        Some(check)
    }

    #[inline]
    fn unmake(&mut self) {
        let m = self.pos.pop();
        let pst = eval::pst();
        let (from, to) = (m.from(), m.to());
        let p = self.pos.board[from];
        let cap = self.pos.board[to];
        self.ev -= pst[zobrist_row(p)][to] - pst[zobrist_row(p)][from];
        if cap != 0 {
            self.ev += pst[zobrist_row(cap)][to];
        }
        self.path_keys.pop();
        self.path_checks.pop();
    }

    fn static_eval(&self) -> i32 {
        (self.ev + eval::positional(&self.pos)) * i32::from(self.pos.sign()) + TEMPO
    }

    // ----- repetition ---------------------------------------------------------------------

    /// Score of a repeated position (draw, or a loss for a perpetual checker), else None.
    fn repetition(&self, ply: usize) -> Option<i32> {
        let keys = &self.path_keys;
        let key = keys[ply];
        let reversible = self.pos.halfmove as usize;
        // a cycle may not span a null move (the side to move was swapped there)
        let floor = self.null_plies.last().copied().unwrap_or(0);
        let mut j = ply as isize - 4;
        while j >= floor as isize && ply - j as usize <= reversible {
            if keys[j as usize] == key {
                return Some(cycle_score(&self.path_checks, 0, ply as isize, j));
            }
            j -= 2;
        }
        if reversible >= ply && self.null_plies.is_empty() && self.game_keys.contains(&key) {
            // a position of the game before the search: judge the cycle if the record reaches it
            let path = &self.game_path;
            for back in 1..=path.len() {
                let j = -(back as isize);
                if path[path.len() - back] == key && (ply as isize - j) as usize <= reversible {
                    let mut checks = self.game_checks.clone();
                    checks.extend_from_slice(&self.path_checks[..=ply]);
                    return Some(cycle_score(&checks, path.len() as isize, ply as isize, j));
                }
            }
            return Some(0);
        }
        None
    }

    // ----- transposition table ------------------------------------------------------------

    #[inline]
    fn probe(&self, key: u64) -> Option<Entry> {
        let e = self.tt[(key as usize) & (self.tt.len() - 1)];
        (e.key == key && e.flag != u8::MAX).then_some(e)
    }

    fn store(&mut self, key: u64, depth: i32, flag: u8, score: i32, mv: Move, ply: usize) {
        let score = if score > MATE_BOUND {
            score + ply as i32
        } else if score < -MATE_BOUND {
            score - ply as i32
        } else {
            score
        };
        let index = (key as usize) & (self.tt.len() - 1);
        let slot = &mut self.tt[index];
        // keep a deeper entry of the same position unless this one is exact
        if slot.key == key && slot.depth as i32 > depth && flag != EXACT {
            if slot.mv == Move::NONE {
                slot.mv = mv;
            }
            return;
        }
        let mv = if mv == Move::NONE && slot.key == key {
            slot.mv
        } else {
            mv
        };
        *slot = Entry {
            key,
            mv,
            score: score.clamp(-INF, INF) as i16,
            depth: depth.clamp(-1, 127) as i8,
            flag,
        };
    }

    fn principal_variation(&mut self, first: Move, depth: u32) -> Vec<Move> {
        let mut line = vec![first];
        self.pos.push(first);
        let mut seen = vec![self.pos.key];
        let mut pushed = 1;
        while line.len() < depth as usize + 4 {
            let Some(entry) = self.probe(self.pos.key) else {
                break;
            };
            if entry.mv == Move::NONE || !self.pos.is_legal(entry.mv) {
                break;
            }
            self.pos.push(entry.mv);
            pushed += 1;
            line.push(entry.mv);
            if seen.contains(&self.pos.key) {
                break;
            }
            seen.push(self.pos.key);
        }
        for _ in 0..pushed {
            self.pos.pop();
        }
        line
    }

    // ----- root ---------------------------------------------------------------------------

    fn root_aspiration(
        &mut self,
        depth: u32,
        moves: &[Move],
        scores: &mut [(Move, i32)],
        previous: Option<i32>,
    ) -> (Move, i32) {
        let Some(prev) = previous.filter(|p| depth >= 5 && p.abs() < MATE_BOUND) else {
            return self.root(depth, moves, scores, -INF, INF);
        };
        let mut delta = 30;
        let (mut alpha, mut beta) = (prev - delta, prev + delta);
        loop {
            let (mv, score) = self.root(depth, moves, scores, alpha, beta);
            if self.stopped {
                return (mv, score);
            }
            if score <= alpha {
                alpha = (alpha - delta).max(-INF);
            } else if score >= beta {
                beta = (beta + delta).min(INF);
            } else {
                return (mv, score);
            }
            delta *= 2;
            if delta > 500 {
                alpha = -INF;
                beta = INF;
            }
        }
    }

    fn root(
        &mut self,
        depth: u32,
        moves: &[Move],
        scores: &mut [(Move, i32)],
        lo: i32,
        hi: i32,
    ) -> (Move, i32) {
        let (mut alpha, beta) = (lo, hi);
        let mut best_move = moves[0];
        let mut best = -INF;
        self.root_best = None;
        let in_check = self.path_checks[0];
        for (i, &m) in moves.iter().enumerate() {
            let Some(gives) = self.make(m, in_check) else {
                continue;
            };
            let nd = depth as i32 - 1 + i32::from(gives);
            let mut score;
            if i == 0 {
                score = -self.negamax(nd, -beta, -alpha, 1, gives, true);
            } else {
                score = -self.negamax(nd, -alpha - 1, -alpha, 1, gives, true);
                if score > alpha && score < beta && !self.stopped {
                    score = -self.negamax(nd, -beta, -alpha, 1, gives, true);
                }
            }
            self.unmake();
            if self.stopped {
                break;
            }
            let improved = score > alpha;
            if score > best {
                best = score;
                best_move = m;
            }
            // a fail-low is an upper bound that may equal alpha: rank it below the best
            let ranked = if improved {
                score
            } else {
                score.min(alpha - 1)
            };
            if let Some(slot) = scores.iter_mut().find(|(x, _)| *x == m) {
                slot.1 = ranked;
            }
            if improved {
                alpha = score;
                self.root_best = Some((m, score));
                if score >= beta {
                    break;
                }
            }
        }
        if let Some(slot) = scores.iter_mut().find(|(x, _)| *x == best_move) {
            slot.1 = best;
        }
        if !self.stopped {
            let flag = if best >= beta {
                LOWER
            } else if best > lo {
                EXACT
            } else {
                UPPER
            };
            let key = self.pos.key;
            self.store(key, depth as i32, flag, best, best_move, 0);
        }
        (best_move, best)
    }

    // ----- the tree -------------------------------------------------------------------------

    fn has_pieces(&self, color: usize) -> bool {
        let sign: i8 = if color == RED { 1 } else { -1 };
        self.pos.board.iter().any(|&p| {
            let k = p * sign;
            k == HORSE || k == ROOK || k == CANNON
        })
    }

    fn order_scores(&self, moves: &MoveList, tt_move: Move, ply: usize, out: &mut [i32; 160]) {
        let board = &self.pos.board;
        let [k0, k1] = self.killers[ply];
        for (i, &m) in moves.as_slice().iter().enumerate() {
            let victim = board[m.to()].unsigned_abs() as usize;
            out[i] = if m == tt_move {
                10_000_000
            } else if victim != 0 {
                let attacker = board[m.from()].unsigned_abs() as usize;
                1_000_000 + ORDER_VALUE[victim] * 16 - ORDER_VALUE[attacker] / 16
            } else if m == k0 {
                900_000
            } else if m == k1 {
                800_000
            } else {
                self.history[m.from() * 90 + m.to()]
            };
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn negamax(
        &mut self,
        depth: i32,
        mut alpha: i32,
        mut beta: i32,
        ply: usize,
        in_check: bool,
        allow_null: bool,
    ) -> i32 {
        self.nodes += 1;
        if self.nodes & 1023 == 0 {
            self.check_limits();
        }
        if self.stopped {
            return 0;
        }
        if let Some(rep) = self.repetition(ply) {
            self.rep_hits += 1;
            return rep;
        }
        // mate-distance pruning
        alpha = alpha.max(-MATE + ply as i32);
        beta = beta.min(MATE - ply as i32 - 1);
        if alpha >= beta {
            return alpha;
        }
        if depth <= 0 || ply >= MAX_PLY {
            return self.quiesce(alpha, beta, ply, in_check, self.quiet_checks);
        }
        let key = self.pos.key;
        let pv_node = beta - alpha > 1;
        let entry = self.probe(key);
        let mut tt_move = Move::NONE;
        if let Some(e) = entry {
            tt_move = e.mv;
            if e.depth as i32 >= depth && !pv_node {
                let mut score = e.score as i32;
                if score > MATE_BOUND {
                    score -= ply as i32;
                } else if score < -MATE_BOUND {
                    score += ply as i32;
                }
                if e.flag == EXACT
                    || (e.flag == LOWER && score >= beta)
                    || (e.flag == UPPER && score <= alpha)
                {
                    return score;
                }
            }
        }
        let static_eval = if in_check { -INF } else { self.static_eval() };
        // reverse futility: far above beta near the leaves, a quiet position stays above it
        if !pv_node
            && !in_check
            && depth <= 6
            && beta.abs() < MATE_BOUND
            && static_eval - 110 * depth >= beta
        {
            return static_eval - 110 * depth;
        }
        // null move: give the opponent a free move; if we still beat beta, prune
        if allow_null
            && !pv_node
            && !in_check
            && depth >= 3
            && beta > -MATE_BOUND
            && static_eval >= beta
            && self.has_pieces(self.pos.turn)
        {
            self.pos.push_null();
            self.path_keys.push(self.pos.key);
            self.path_checks.push(false);
            self.null_plies.push(ply + 1);
            let reduce = 3 + depth / 4 + ((static_eval - beta) / 200).min(2);
            let score = -self.negamax(depth - 1 - reduce, -beta, -beta + 1, ply + 1, false, false);
            self.pos.pop_null();
            self.path_keys.pop();
            self.path_checks.pop();
            self.null_plies.pop();
            if self.stopped {
                return 0;
            }
            if score >= beta && score < MATE_BOUND {
                return beta;
            }
        }
        // internal iterative reduction: no move to try first at a PV node deep enough
        let depth = if tt_move == Move::NONE && depth >= 6 {
            depth - 1
        } else {
            depth
        };
        let rep_hits = self.rep_hits;
        let mut moves = MoveList::default();
        self.pos.pseudo_moves(false, &mut moves);
        let mut order = [0i32; 160];
        self.order_scores(&moves, tt_move, ply, &mut order);
        let t = self.pos.t;
        let enemy_king = self.pos.kings[1 - self.pos.turn];
        let (check_from, check_to) = (t.sensitive[enemy_king], t.check_to[enemy_king]);
        let killers = self.killers[ply];
        let prune_quiets = !pv_node && !in_check && alpha > -MATE_BOUND && beta < MATE_BOUND;
        let futile = prune_quiets && depth <= 3 && static_eval + 100 + 120 * depth <= alpha;
        let late = if prune_quiets && depth <= 4 {
            4 + depth * depth * 2
        } else {
            1000
        };
        let original_alpha = alpha;
        let mut best = -INF;
        let mut best_move = Move::NONE;
        let mut legal = 0i32;
        let mut tried = 0i32;
        let mut pruned = false;
        let mut quiets_tried: [Move; 64] = [Move::NONE; 64];
        let mut quiet_count = 0usize;
        let extend_ok = ply < 2 * self.root_depth as usize + 4;
        let n = moves.len();
        for index in 0..n {
            // pick the best remaining move (selection: most nodes cut after a few moves)
            let mut pick = index;
            for j in index + 1..n {
                if order[j] > order[pick] {
                    pick = j;
                }
            }
            let all = &mut moves;
            let (m, s) = (all.as_slice()[pick], order[pick]);
            order.swap(index, pick);
            swap_moves(all, index, pick);
            let quiet = self.pos.board[m.to()] == 0;
            if quiet
                && tried > 0
                && (futile || tried >= late)
                && !has(check_from, m.from())
                && !has(check_to, m.to())
                && m != killers[0]
                && m != killers[1]
            {
                pruned = true;
                tried += 1;
                continue;
            }
            let Some(gives) = self.make(m, in_check) else {
                continue;
            };
            legal += 1;
            tried += 1;
            let ext = i32::from(gives && extend_ok);
            let nd = depth - 1 + ext;
            let mut score;
            if legal == 1 {
                score = -self.negamax(nd, -beta, -alpha, ply + 1, gives, true);
            } else {
                let mut reduction = 0;
                if depth >= 3 && legal >= 3 && quiet && !in_check && !gives && s < 800_000 {
                    reduction = self.lmr[depth.min(63) as usize][(legal as usize).min(63)] as i32;
                    if pv_node {
                        reduction -= 1;
                    }
                    if s > 4000 {
                        reduction -= 1; // a move that cut often before
                    }
                    reduction = reduction.clamp(0, nd - 1);
                }
                score = -self.negamax(nd - reduction, -alpha - 1, -alpha, ply + 1, gives, true);
                if score > alpha && reduction > 0 && !self.stopped {
                    score = -self.negamax(nd, -alpha - 1, -alpha, ply + 1, gives, true);
                }
                if score > alpha && score < beta && !self.stopped {
                    score = -self.negamax(nd, -beta, -alpha, ply + 1, gives, true);
                }
            }
            self.unmake();
            if self.stopped {
                return 0;
            }
            if score > best {
                best = score;
                best_move = m;
                if score > alpha {
                    alpha = score;
                    if score >= beta {
                        if quiet {
                            let k = &mut self.killers[ply];
                            if k[0] != m {
                                k[1] = k[0];
                                k[0] = m;
                            }
                            let bonus = depth * depth;
                            self.bump_history(m, bonus);
                            for &q in &quiets_tried[..quiet_count] {
                                self.bump_history(q, -bonus);
                            }
                        }
                        break;
                    }
                }
            }
            if quiet && quiet_count < 64 {
                quiets_tried[quiet_count] = m;
                quiet_count += 1;
            }
        }
        if legal == 0 {
            if pruned {
                return alpha; // only pruned quiet moves were left: claim a fail-low
            }
            return -MATE + ply as i32; // checkmate and stalemate both lose
        }
        if pruned && best < alpha {
            best = alpha;
        }
        let flag = if best >= beta {
            LOWER
        } else if best > original_alpha {
            EXACT
        } else {
            UPPER
        };
        if self.rep_hits == rep_hits {
            self.store(key, depth, flag, best, best_move, ply);
        } else if entry.is_none() {
            // a score that depends on a repetition in the path is no property of the position:
            // keep only the move for ordering
            let index = (key as usize) & (self.tt.len() - 1);
            self.tt[index] = Entry {
                key,
                mv: best_move,
                score: 0,
                depth: -1,
                flag: UPPER,
            };
        }
        best
    }

    fn bump_history(&mut self, m: Move, bonus: i32) {
        let h = &mut self.history[m.from() * 90 + m.to()];
        *h += bonus - *h * bonus.abs() / 16384;
    }

    fn quiesce(
        &mut self,
        mut alpha: i32,
        beta: i32,
        ply: usize,
        in_check: bool,
        checks: bool,
    ) -> i32 {
        self.nodes += 1;
        if self.nodes & 1023 == 0 {
            self.check_limits();
        }
        if self.stopped {
            return 0;
        }
        if ply as u32 > self.seldepth {
            self.seldepth = ply as u32;
        }
        if ply >= MAX_PLY {
            return self.static_eval();
        }
        let mut moves = MoveList::default();
        let mut best;
        if in_check {
            self.pos.pseudo_moves(false, &mut moves);
            best = -INF;
        } else {
            let stand = self.static_eval();
            if stand >= beta {
                return stand;
            }
            if stand > alpha {
                alpha = stand;
            }
            best = stand;
            self.pos.pseudo_moves(true, &mut moves);
        }
        let board = self.pos.board;
        let mut order = [0i32; 160];
        for (i, m) in moves.as_slice().iter().enumerate() {
            let victim = board[m.to()].unsigned_abs() as usize;
            let attacker = board[m.from()].unsigned_abs() as usize;
            order[i] = ORDER_VALUE[victim] * 16 - ORDER_VALUE[attacker] / 16;
        }
        let them = -self.pos.sign();
        let mut legal = 0;
        let n = moves.len();
        for index in 0..n {
            let mut pick = index;
            for j in index + 1..n {
                if order[j] > order[pick] {
                    pick = j;
                }
            }
            let m = moves.as_slice()[pick];
            order.swap(index, pick);
            swap_moves(&mut moves, index, pick);
            if !in_check && best > -MATE_BOUND {
                let victim = board[m.to()].unsigned_abs() as usize;
                let gain = PIECE_VALUES[victim] + if victim == PAWN as usize { 100 } else { 0 };
                // delta pruning: even winning this piece cannot lift alpha
                if victim != 0 && best + gain + 200 < alpha {
                    continue;
                }
                // a bigger piece taking a defended smaller one loses material (a cheap SEE)
                let attacker = board[m.from()].unsigned_abs() as usize;
                if victim != 0
                    && attacker != KING as usize
                    && PIECE_VALUES[attacker] > gain + 50
                    && crate::board::is_attacked(self.pos.t, &self.pos.board, m.to(), them)
                {
                    continue;
                }
            }
            let Some(gives) = self.make(m, in_check) else {
                continue;
            };
            legal += 1;
            let score = -self.quiesce(-beta, -alpha, ply + 1, gives, false);
            self.unmake();
            if self.stopped {
                return 0;
            }
            if score > best {
                best = score;
                if score > alpha {
                    alpha = score;
                    if score >= beta {
                        break;
                    }
                }
            }
        }
        if in_check && legal == 0 {
            return -MATE + ply as i32;
        }
        if checks && !in_check && best < beta {
            best = self.quiet_checks(alpha, beta, ply, best);
        }
        best
    }

    /// Quiet moves that give check, one quiescence ply deep (a mate just past the horizon).
    fn quiet_checks(&mut self, mut alpha: i32, beta: i32, ply: usize, mut best: i32) -> i32 {
        let t = self.pos.t;
        let enemy_king = self.pos.kings[1 - self.pos.turn];
        let (check_from, check_to) = (t.sensitive[enemy_king], t.check_to[enemy_king]);
        let mut moves = MoveList::default();
        self.pos.pseudo_moves(false, &mut moves);
        for &m in moves.as_slice() {
            if self.pos.board[m.to()] != 0 || (!has(check_from, m.from()) && !has(check_to, m.to()))
            {
                continue;
            }
            let Some(gives) = self.make(m, false) else {
                continue;
            };
            if !gives {
                self.unmake();
                continue;
            }
            let score = -self.quiesce(-beta, -alpha, ply + 1, true, false);
            self.unmake();
            if self.stopped {
                return best;
            }
            if score > best {
                best = score;
                if score > alpha {
                    alpha = score;
                    if score >= beta {
                        break;
                    }
                }
            }
        }
        best
    }
}

fn swap_moves(list: &mut MoveList, a: usize, b: usize) {
    if a != b {
        let (x, y) = (list.as_slice()[a], list.as_slice()[b]);
        list.set(a, y);
        list.set(b, x);
    }
}

/// Score of the cycle from ply `j` back to `ply` (`checks[offset + i]`: the side to move at ply `i`
/// is in check): perpetual check loses for the checker, anything else is a draw.
fn cycle_score(checks: &[bool], offset: isize, ply: isize, j: isize) -> i32 {
    let at = |i: isize| checks[(offset + i) as usize];
    // positions ply-1, ply-3 … follow the side to move's own moves; ply, ply-2 … the opponent's
    let we_checked = (j + 1..ply).rev().step_by(2).all(at);
    let they_checked = (j + 2..=ply).rev().step_by(2).all(at);
    if we_checked && !they_checked {
        return -(MATE - ply as i32);
    }
    if they_checked && !we_checked {
        return MATE - ply as i32;
    }
    0
}

/// Whether the side to move was in check in each of the last game positions of `recent`
/// (oldest first), read off `root`'s own moves for as far as they match `recent`.
fn game_checks(root: &Position, recent: &[u64]) -> Vec<bool> {
    let mut pos = root.clone();
    let mut checks = Vec::new();
    for &key in recent.iter().rev() {
        if pos.ply() == 0 {
            break;
        }
        pos.pop();
        if pos.key != key {
            break;
        }
        checks.push(pos.is_check());
    }
    checks.reverse();
    checks
}
