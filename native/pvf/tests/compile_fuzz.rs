//! Fuzzing the text compiler and the document scanner (proptest): any text — arbitrary characters, or the lexer's own
//! pieces strung together — compiles or fails with BAD_TEXT at an offset inside the text, never
//! panics; a compiled text's string units all point into its string list, and encoding them with
//! references gives 5 bytes a unit (plus the classic magic).

use moddesk_pvf::compile::{self, char_offset};
use moddesk_pvf::scan;
use proptest::prelude::*;

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500)
}

const PIECES: &[&str] = &[
    "[a]",
    "[/a]",
    "[",
    "]",
    "`",
    "``",
    "`x`",
    "`a\nb`",
    "{",
    "}",
    "{6=",
    "{#5=",
    "{5=`(DOWN)`}",
    "{7=`,`}",
    "{6=`c`}",
    "{1=2}",
    "{256=0}",
    "<",
    ">",
    "<3::",
    "<12::key`shown`>",
    "::",
    "=",
    "#",
    "# c\n",
    "0",
    "-1",
    "+5",
    "4294967296",
    "-2147483648",
    "1.5",
    "1.",
    ".5",
    "1e5",
    "-.5e+2",
    "3.4e39",
    "e",
    ".",
    "+",
    "x",
    "中文",
    "١",
    "\t",
    " ",
    "\n",
    "\r\n",
    "\r",
    "\0",
];

fn check(text: &str) {
    for classic in [true, false] {
        let c = compile::compile(text, classic);
        if let Some(e) = &c.error {
            assert_eq!(e.code, "BAD_TEXT");
            assert!(e.offset <= char_offset(text, text.len()));
        }
        assert_eq!(c.strings.len(), c.sites.len());
        for &k in &c.string_units {
            assert!((c.units[k as usize].1 as usize) < c.strings.len());
        }
        let refs: Vec<u32> = (0..c.strings.len() as u32).map(|r| r * 7).collect();
        let mut out = Vec::new();
        compile::encode(&c.units, &c.string_units, &refs, classic, &mut out).expect("refs");
        assert_eq!(out.len(), 5 * c.units.len() + if classic { 2 } else { 0 });
        // the document scanner reads what the compiler's lexer reads, with spans inside the text
        let chars = char_offset(text, text.len());
        match scan::scan(text, classic) {
            Ok(s) => {
                for row in &s.rows {
                    assert!(row.start <= row.end && row.end <= chars && row.line >= 1);
                }
                assert!(s.last <= chars);
            }
            Err(e) => assert_eq!(e.code, "BAD_TEXT"),
        }
        // the owned form (what a lazily built document keeps) resolves every text it names
        if let Ok(doc) = scan::OwnedDocument::new(text, classic) {
            for row in &doc.rows {
                assert!(doc.str(&row.source).len() <= text.len());
                assert!(doc.str(&row.gap).len() <= text.len());
            }
            for sec in &doc.sections {
                assert!(doc.str(&sec.name).len() + 2 <= text.len());
            }
            // every section sits in exactly one body, its parent's (the top level for none)
            let mut seen = vec![0u32; doc.sections.len()];
            for owner in std::iter::once(None).chain((0..doc.sections.len()).map(Some)) {
                for item in doc.bodies.items(owner) {
                    if let scan::Item::Section(k) = *item {
                        assert_eq!(doc.sections[k].parent, owner);
                        seen[k] += 1;
                    }
                }
            }
            assert!(seen.iter().all(|&n| n == 1));
        }
    }
}

/// The reference's `int_value(int(word))`: i32 or u32 range, through Python's canonical text.
fn int_value_model(word: &str) -> Result<u32, String> {
    let canonical = compile::canonical_int(word);
    let (negative, digits) = match canonical.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, canonical.as_str()),
    };
    let magnitude: Option<u64> = if digits.len() <= 10 {
        digits.parse().ok()
    } else {
        None
    };
    match magnitude {
        Some(m) if negative && m <= 1 << 31 => Ok((m as i64).wrapping_neg() as u32),
        Some(m) if !negative && m <= 0xFFFF_FFFF => Ok(m as u32),
        _ => Err(format!("integer {canonical} does not fit in 32 bits")),
    }
}

/// `supported`'s model: no digit run longer than the limit, no non-ASCII numeral.
fn supported_model(text: &str) -> bool {
    let mut run = 0usize;
    for b in text.bytes() {
        run = if b.is_ascii_digit() { run + 1 } else { 0 };
        if run > compile::LONGEST_DIGIT_RUN {
            return false;
        }
    }
    text.chars().all(|c| c.is_ascii() || !c.is_numeric())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn int_values_match_the_model(word in "[+-]?0{0,12}[0-9]{0,14}") {
        prop_assert_eq!(compile::int_value(&word), int_value_model(&word));
    }

    #[test]
    fn supported_matches_the_model(
        runs in prop::collection::vec((0usize..700, "[ a`\\[\\]١中]{0,3}"), 0..6),
    ) {
        let text: String = runs.iter().map(|(n, sep)| "7".repeat(*n) + sep).collect();
        prop_assert_eq!(compile::supported(&text), supported_model(&text));
    }

    #[test]
    fn any_text_compiles_or_fails_cleanly(text in "\\PC{0,80}") {
        check(&text);
    }

    #[test]
    fn pieces_compile_or_fail_cleanly(
        picks in prop::collection::vec(0..PIECES.len(), 0..40),
        spaced in any::<bool>(),
    ) {
        let parts: Vec<&str> = picks.iter().map(|&i| PIECES[i]).collect();
        check(&parts.join(if spaced { " " } else { "" }));
    }
}
