//! FEN parsing never panics: any text is a position or a `BAD_FEN` error, and every accepted
//! position renders to a FEN that parses back to the same position and key.

use moddesk_xiangqi::{FenError, Position};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn any_text_is_a_position_or_bad_fen(text in "\\PC{0,120}") {
        check(&text);
    }

    #[test]
    fn fen_like_text_round_trips(text in "[KABNRCPEHkabnrcpeh1-9/]{10,90}( [wrbWRB-]( - - [0-9+_-]{0,4} [0-9]{0,3})?)?") {
        check(&text);
    }
}

fn check(text: &str) {
    match Position::from_fen(text) {
        Ok(pos) => {
            let again = Position::from_fen(&pos.fen()).expect("a rendered FEN parses");
            assert_eq!(again.fen(), pos.fen());
            assert_eq!(again.key, pos.key);
        }
        Err(FenError {
            message,
            message_zh,
        }) => {
            assert!(!message.is_empty() && !message_zh.is_empty());
        }
    }
}

#[test]
fn documented_refusals() {
    for (fen, needle) in [
        ("", "empty FEN"),
        ("9/9/9/9/9/9/9/9/9 w", "9 ranks"),
        ("4k4/9/9/9/9/9/9/9/9/4K4 w", "kings face"),
        ("4k4/9/9/9/9/9/9/9/9/3K5 x", "side to move"),
        ("4k4/9/9/9/9/9/9/9/9/3K5 w - - x 1", "integers"),
        ("4k4/9/9/9/9/9/9/9/9/3K5 w - - 100001 1", "out of range"),
        ("4k4/9/9/9/9/9/9/9/9/3K4X w", "unknown piece"),
        ("4k4/9/9/9/9/9/9/9/9/3K6 w", "10 files"),
        ("4k4/9/9/9/9/9/9/9/9/B2K5 w", "elephant"),
        ("9/9/9/9/9/9/9/9/9/3K5 w", "no king"),
    ] {
        let err = Position::from_fen(fen).expect_err(fen);
        assert!(err.message.contains(needle), "{fen}: {}", err.message);
    }
}
