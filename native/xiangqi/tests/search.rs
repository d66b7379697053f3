//! The search finds short mates, keeps its PV legal, honours the stop flag and node limits.

use moddesk_xiangqi::search::{Limits, Searcher};
use moddesk_xiangqi::Position;
use std::sync::atomic::Ordering;
use std::time::Duration;

const MATES: [(i32, &str); 4] = [
    (1, "9/9/1c3k3/9/9/5N3/6C2/9/4K4/p8 w"),
    (2, "3N1k3/9/9/7P1/2R6/9/6p2/9/3K5/9 w"),
    (2, "9/5k3/9/6c2/2R6/1n7/9/9/3N5/4K4 w"),
    (3, "4k4/9/9/9/9/8R/9/1pCK5/9/9 w"),
];

#[test]
fn finds_the_mates_with_legal_lines() {
    let mut searcher = Searcher::new(8);
    for (n, fen) in MATES {
        searcher.clear();
        let pos = Position::from_fen(fen).unwrap();
        let limits = Limits {
            depth: Some(2 * n as u32 + 2),
            multipv: 1,
            ..Limits::default()
        };
        let result = searcher.search(&pos, &limits, &[], &mut |_| {});
        let line = &result.lines[0];
        assert_eq!(line.mate, Some(n), "{fen}: {line:?}");
        let mut replay = pos.clone();
        for &m in &line.pv {
            assert!(replay.is_legal(m), "{fen}: {} in {:?}", m.iccs(), line.pv);
            replay.push(m);
        }
    }
}

#[test]
fn node_limit_and_stop_flag_end_the_search() {
    let mut searcher = Searcher::new(8);
    let pos = Position::start();
    let limits = Limits {
        nodes: Some(20_000),
        multipv: 1,
        ..Limits::default()
    };
    let result = searcher.search(&pos, &limits, &[], &mut |_| {});
    assert!(result.stopped && result.best.is_some() && result.nodes < 25_000);
    // a stop set from the info callback (as another thread would) ends an unlimited search
    let flag = searcher.stop_handle();
    let limits = Limits {
        time: Some(Duration::from_secs(600)),
        multipv: 1,
        ..Limits::default()
    };
    let result = searcher.search(&pos, &limits, &[], &mut |info| {
        if info.depth >= 3 {
            flag.store(true, Ordering::Relaxed);
        }
    });
    assert!(result.stopped && result.depth >= 3 && result.best.is_some());
}

#[test]
fn multipv_gives_distinct_moves_best_first() {
    let mut searcher = Searcher::new(8);
    let pos = Position::start();
    let limits = Limits {
        depth: Some(4),
        multipv: 3,
        ..Limits::default()
    };
    let result = searcher.search(&pos, &limits, &[], &mut |_| {});
    let moves: Vec<_> = result.lines.iter().map(|l| l.mv).collect();
    assert_eq!(moves.len(), 3);
    assert!(moves[0] != moves[1] && moves[1] != moves[2] && moves[0] != moves[2]);
    assert!(result.lines.windows(2).all(|w| w[0].score >= w[1].score));
}
