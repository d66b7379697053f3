//! `moddesk_native.xiangqi`: the engine functions Python calls (see `moddesk.xiangqi.core.native`).
//!
//! The boundary is text: a FEN plus the ICCS moves played from it (the game record), Zobrist keys
//! as ints, results as tuples and dicts. Errors are `ValueError(code, message, message_zh)` with
//! the reference's codes (`BAD_FEN`, `ILLEGAL_MOVE`, `BAD_NOTATION`, `INVALID_ARGUMENT`). Every
//! search and perft releases the GIL; a search stops on its limits or when `stop()` is called.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use moddesk_xiangqi::rules::{self, RuleSet};
use moddesk_xiangqi::search::{self, Info, Limits};
use moddesk_xiangqi::{Move, Position};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

fn error(code: &str, message: String, message_zh: String) -> PyErr {
    PyValueError::new_err((code.to_string(), message, message_zh))
}

/// The position after `moves` (ICCS) from `fen`, with those moves on its stack (the game record).
fn game(fen: &str, moves: &[String]) -> PyResult<Position> {
    let mut pos = Position::from_fen(fen)
        .map_err(|e| error("BAD_FEN", e.message.clone(), e.message_zh.clone()))?;
    for text in moves {
        let m = Move::parse_iccs(text).ok_or_else(|| {
            error(
                "BAD_NOTATION",
                format!("not an ICCS move: {text:?}"),
                format!("不是 ICCS 着法：{text:?}"),
            )
        })?;
        if !pos.is_legal(m) {
            return Err(error(
                "ILLEGAL_MOVE",
                format!("illegal move {text}"),
                format!("着法不合法：{text}"),
            ));
        }
        pos.push(m);
    }
    Ok(pos)
}

/// perft(fen, depth) -> leaf count of the legal move tree (the GIL is released).
#[pyfunction]
fn perft(py: Python<'_>, fen: &str, depth: u32) -> PyResult<u64> {
    let mut pos = game(fen, &[])?;
    if depth > 8 {
        return Err(error(
            "INVALID_ARGUMENT",
            "perft depth must be at most 8".into(),
            "perft 深度最多为 8".into(),
        ));
    }
    Ok(py.detach(move || moddesk_xiangqi::perft(&mut pos, depth)))
}

/// legal_moves(fen, moves) -> the legal moves (ICCS) after `moves`, in generation order.
#[pyfunction]
#[pyo3(signature = (fen, moves = Vec::new()))]
fn legal_moves(fen: &str, moves: Vec<String>) -> PyResult<Vec<String>> {
    let mut pos = game(fen, &moves)?;
    Ok(pos.legal_vec().into_iter().map(Move::iccs).collect())
}

/// position(fen, moves) -> (canonical FEN, Zobrist key, in check) after `moves`.
#[pyfunction]
#[pyo3(signature = (fen, moves = Vec::new()))]
fn position(fen: &str, moves: Vec<String>) -> PyResult<(String, u64, bool)> {
    let pos = game(fen, &moves)?;
    Ok((pos.fen(), pos.key, pos.is_check()))
}

/// game_status(fen, moves, rule_set, no_capture_limit, repetitions) -> (state, winner, code, reason_zh)
/// for the game recorded as `moves` from `fen` (winner 0 = Red, 1 = Black, None).
#[pyfunction]
#[pyo3(signature = (fen, moves, rule_set = "asian", no_capture_limit = 120, repetitions = 3))]
fn game_status(
    fen: &str,
    moves: Vec<String>,
    rule_set: &str,
    no_capture_limit: u32,
    repetitions: usize,
) -> PyResult<(String, Option<usize>, String, String)> {
    let rules_set = RuleSet::parse(rule_set).ok_or_else(|| {
        error(
            "INVALID_ARGUMENT",
            format!("unknown rule set {rule_set:?}"),
            format!("未知规则集：{rule_set:?}"),
        )
    })?;
    if !(2..=50).contains(&repetitions) {
        return Err(error(
            "INVALID_ARGUMENT",
            "repetitions must be 2..50".into(),
            "重复次数须为 2..50".into(),
        ));
    }
    let mut pos = game(fen, &moves)?;
    let status = rules::game_status(&mut pos, rules_set, no_capture_limit, repetitions);
    Ok((
        status.state.name().into(),
        status.winner,
        status.reason_code.into(),
        status.reason_zh,
    ))
}

/// replay(fen, moves, rule_set, no_capture_limit, repetitions) -> per position of the game (the
/// start and after each move): (sorted legal moves, Zobrist key, state, winner, code). The
/// differential test compares each entry with the reference.
#[pyfunction]
#[pyo3(signature = (fen, moves, rule_set = "asian", no_capture_limit = 120, repetitions = 3))]
#[allow(clippy::type_complexity)]
fn replay(
    py: Python<'_>,
    fen: &str,
    moves: Vec<String>,
    rule_set: &str,
    no_capture_limit: u32,
    repetitions: usize,
) -> PyResult<Vec<(Vec<String>, u64, &'static str, Option<usize>, &'static str)>> {
    let rules_set = RuleSet::parse(rule_set).ok_or_else(|| {
        error(
            "INVALID_ARGUMENT",
            format!("unknown rule set {rule_set:?}"),
            format!("未知规则集：{rule_set:?}"),
        )
    })?;
    let game_moves = game(fen, &moves)?.move_stack().collect::<Vec<_>>();
    let mut pos = game(fen, &[])?;
    Ok(py.detach(move || {
        let mut out = Vec::with_capacity(game_moves.len() + 1);
        for i in 0..=game_moves.len() {
            if i > 0 {
                pos.push(game_moves[i - 1]);
            }
            let mut legal: Vec<String> = pos.legal_vec().into_iter().map(Move::iccs).collect();
            legal.sort();
            let status =
                rules::game_status(&mut pos, rules_set, no_capture_limit, repetitions.max(2));
            out.push((
                legal,
                pos.key,
                status.state.name(),
                status.winner,
                status.reason_code,
            ));
        }
        out
    }))
}

/// evaluate(fen) -> the static score for the side to move (centipawns).
#[pyfunction]
fn evaluate(fen: &str) -> PyResult<i32> {
    Ok(moddesk_xiangqi::eval::evaluate(&game(fen, &[])?))
}

fn info_dict<'py>(py: Python<'py>, info: &Info) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("depth", info.depth)?;
    d.set_item("seldepth", info.seldepth)?;
    d.set_item("multipv", info.multipv)?;
    d.set_item("score", info.score)?;
    d.set_item("mate", info.mate)?;
    d.set_item("nodes", info.nodes)?;
    d.set_item("nps", info.nps)?;
    d.set_item("time", info.time)?;
    d.set_item("pv", info.pv.iter().map(|m| m.iccs()).collect::<Vec<_>>())?;
    Ok(d)
}

/// A reusable native engine (its transposition table survives between searches). `stop()` may be
/// called from any thread while `search` runs with the GIL released.
#[pyclass(module = "moddesk_native.xiangqi")]
struct Searcher {
    engine: Mutex<search::Searcher>,
    stop: Arc<AtomicBool>,
}

#[pymethods]
impl Searcher {
    #[new]
    #[pyo3(signature = (hash_mb = 32))]
    fn new(hash_mb: usize) -> Self {
        let engine = search::Searcher::new(hash_mb);
        let stop = engine.stop_handle();
        Searcher {
            engine: Mutex::new(engine),
            stop,
        }
    }

    /// Ask a running search to stop soon; it returns its best result so far.
    fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Forget the transposition table (a new game).
    fn clear(&self, py: Python<'_>) {
        py.detach(|| lock(&self.engine).clear());
    }

    /// Resize the transposition table (megabytes) and clear it.
    fn resize(&self, py: Python<'_>, hash_mb: usize) {
        py.detach(|| lock(&self.engine).resize(hash_mb));
    }

    /// search(fen, moves, history, depth, time_limit, nodes, multipv, quiet_checks, on_info) ->
    /// {best, lines: [{move, score, mate, depth, pv}], depth, nodes, time, stopped}.
    #[pyo3(signature = (fen, moves = Vec::new(), history = Vec::new(), depth = None, time_limit = None,
                        nodes = None, multipv = 1, quiet_checks = true, on_info = None))]
    #[allow(clippy::too_many_arguments)]
    fn search<'py>(
        &self,
        py: Python<'py>,
        fen: &str,
        moves: Vec<String>,
        history: Vec<u64>,
        depth: Option<u32>,
        time_limit: Option<f64>,
        nodes: Option<u64>,
        multipv: usize,
        quiet_checks: bool,
        on_info: Option<Py<PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let pos = game(fen, &moves)?;
        let time = match time_limit {
            Some(t) if !(t.is_finite() && t >= 0.0) => {
                return Err(error(
                    "INVALID_ARGUMENT",
                    "time_limit must be >= 0".into(),
                    "思考时间须 ≥ 0".into(),
                ))
            }
            Some(t) => Some(Duration::from_secs_f64(t.min(86_400.0))),
            None => None,
        };
        let limits = Limits {
            depth,
            time,
            nodes,
            multipv: multipv.clamp(1, 64),
        };
        let mut callback_error: Option<PyErr> = None;
        let result = py.detach(|| {
            let mut engine = lock(&self.engine);
            engine.quiet_checks = quiet_checks;
            let mut report = |info: &Info| {
                if let Some(cb) = &on_info {
                    Python::attach(|py| {
                        let outcome = info_dict(py, info).and_then(|d| cb.call1(py, (d,)));
                        if let Err(e) = outcome {
                            callback_error.get_or_insert(e);
                        }
                    });
                }
            };
            engine.search(&pos, &limits, &history, &mut report)
        });
        if let Some(e) = callback_error {
            return Err(e);
        }
        let out = PyDict::new(py);
        out.set_item("best", result.best.map(Move::iccs))?;
        let lines = PyList::empty(py);
        for line in &result.lines {
            let d = PyDict::new(py);
            d.set_item("move", line.mv.iccs())?;
            d.set_item("score", line.score)?;
            d.set_item("mate", line.mate)?;
            d.set_item("depth", line.depth)?;
            d.set_item("pv", line.pv.iter().map(|m| m.iccs()).collect::<Vec<_>>())?;
            lines.append(d)?;
        }
        out.set_item("lines", lines)?;
        out.set_item("depth", result.depth)?;
        out.set_item("nodes", result.nodes)?;
        out.set_item("time", result.time)?;
        out.set_item("stopped", result.stopped)?;
        Ok(out)
    }
}

/// The engine lock; a panic in an earlier search (a bug) must not make the engine unusable.
fn lock(engine: &Mutex<search::Searcher>) -> std::sync::MutexGuard<'_, search::Searcher> {
    engine
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let module = crate::add_submodule(parent, "xiangqi")?;
    module.add("VERSION", moddesk_xiangqi::VERSION)?;
    module.add("START_FEN", moddesk_xiangqi::START_FEN)?;
    module.add("MATE", search::MATE)?;
    module.add_function(wrap_pyfunction!(perft, &module)?)?;
    module.add_function(wrap_pyfunction!(legal_moves, &module)?)?;
    module.add_function(wrap_pyfunction!(position, &module)?)?;
    module.add_function(wrap_pyfunction!(game_status, &module)?)?;
    module.add_function(wrap_pyfunction!(evaluate, &module)?)?;
    module.add_function(wrap_pyfunction!(replay, &module)?)?;
    module.add_class::<Searcher>()?;
    Ok(())
}
