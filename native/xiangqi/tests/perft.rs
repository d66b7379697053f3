//! Perft equality on every reference position of the shared corpus (`perft.json`, read when
//! `MODDESK_CORPORA` is set) and on the start position's published counts.

use moddesk_xiangqi::{perft, Position, START_FEN};

#[test]
fn start_position_counts() {
    let mut pos = Position::from_fen(START_FEN).unwrap();
    for (depth, expected) in [(1, 44), (2, 1920), (3, 79_666), (4, 3_290_240)] {
        assert_eq!(perft(&mut pos, depth), expected, "depth {depth}");
    }
    assert_eq!(pos.fen(), START_FEN);
}

#[test]
fn corpus_positions() {
    let Some(dir) = std::env::var_os("MODDESK_CORPORA") else {
        eprintln!("MODDESK_CORPORA not set: corpus perft skipped");
        return;
    };
    let path = std::path::Path::new(&dir).join("xiangqi/perft.json");
    let text = std::fs::read_to_string(&path).expect("perft.json");
    // a tiny reader for this file's shape: "fen": "...", "perft": [n, n, ...]
    // depth 5 (up to 194 M leaves) with MODDESK_PERFT_FULL=1; depth 4 keeps `make test` short
    let max_depth = if std::env::var_os("MODDESK_PERFT_FULL").is_some() {
        5
    } else {
        4
    };
    let mut checked = 0;
    for chunk in text.split("\"fen\"").skip(1) {
        let fen = chunk.split('"').nth(1).unwrap();
        let list = chunk.split("\"perft\"").nth(1).unwrap();
        let inner = &list[list.find('[').unwrap() + 1..list.find(']').unwrap()];
        let counts: Vec<u64> = inner
            .split(',')
            .map(|s| s.trim().parse().unwrap())
            .collect();
        let mut pos = Position::from_fen(fen).unwrap();
        for (i, &expected) in counts.iter().enumerate().take(max_depth) {
            assert_eq!(
                perft(&mut pos, i as u32 + 1),
                expected,
                "{fen} depth {}",
                i + 1
            );
        }
        checked += 1;
    }
    assert!(checked >= 5, "only {checked} positions read");
}
