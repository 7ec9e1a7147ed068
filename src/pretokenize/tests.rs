//! The scanners against the generic regex engine (fancy-regex, tiktoken's engine) on
//! hand-picked tricky strings and on many pseudo-random ones. The Python tests
//! compare them with the `regex` package too, which defines the patterns.

use super::regex_engine::RegexSplitter;
use super::*;
use crate::testutil::Rng;

#[test]
fn gpt2_splits_like_cs336() {
    let p = Pretokenizer::new("gpt2").unwrap();
    assert_eq!(p.kind(), Kind::Gpt2);
    assert_eq!(
        p.pieces("some text that i'll pre-tokenize  x\n\n").unwrap(),
        ["some", " text", " that", " i", "'ll", " pre", "-", "tokenize", " ", " x", "\n\n"]
    );
}

#[test]
fn custom_pattern_is_used() {
    let p = Pretokenizer::new(r"\S+|\s+").unwrap();
    assert_eq!(p.kind(), Kind::Custom);
    assert_eq!(p.pieces("ab  cd").unwrap(), ["ab", "  ", "cd"]);
}

#[test]
fn bad_pattern_is_an_error() {
    assert!(Pretokenizer::new("(").is_err());
    assert!(Pretokenizer::new("").is_err());
}

#[test]
fn named_patterns_get_scanners() {
    for (name, kind) in [
        ("gpt2", Kind::Gpt2),
        ("r50k_base", Kind::Gpt2),
        ("cl100k_base", Kind::Cl100k),
        ("llama3", Kind::Cl100k),
        ("o200k", Kind::O200k),
    ] {
        assert_eq!(Pretokenizer::new(name).unwrap().kind(), kind);
    }
    // The same pattern text wrapped in a group runs on the regex engine.
    let wrapped = format!("(?:{})", patterns::GPT2);
    assert_eq!(Pretokenizer::new(&wrapped).unwrap().kind(), Kind::Custom);
}

const NAMED: [(&str, &str); 4] = [
    ("gpt2", patterns::GPT2),
    ("cl100k", patterns::CL100K),
    ("llama3", patterns::LLAMA3),
    ("o200k", patterns::O200K),
];

/// Each scanner, with each block kernel this CPU has, and its pattern on the regex
/// engine, compiled once.
fn engines() -> Vec<(Pretokenizer, RegexSplitter)> {
    let mut out = Vec::new();
    for (name, pattern) in NAMED {
        for simd in [Simd::Baseline, Simd::Avx2, Simd::Avx512] {
            let scanner = Pretokenizer::new(name).unwrap().with_simd(simd);
            // A kernel this CPU lacks falls back to the baseline, tested already.
            if scanner.simd() == simd {
                out.push((scanner, RegexSplitter::new(pattern).unwrap()));
            }
        }
    }
    // A CPU with AVX2 and the bit instructions runs the AVX2 kernel here, so that a
    // broken detection cannot leave it untested.
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        if has!("avx2") && has!("bmi1") && has!("bmi2") && has!("lzcnt") && has!("popcnt") {
            assert!(out.iter().any(|(s, _)| s.simd() == Simd::Avx2));
        }
    }
    out
}

/// Panics with the first difference between each scanner and the regex engine on `text`.
fn check(engines: &[(Pretokenizer, RegexSplitter)], text: &str) {
    for (scanner, regex) in engines {
        let got = scanner.pieces(text).unwrap();
        let mut want = Vec::new();
        regex.for_each_piece(text, |p| want.push(p)).unwrap();
        assert_eq!(
            got,
            want,
            "{:?} {:?} on {text:?}",
            scanner.kind(),
            scanner.simd()
        );
    }
}

const TRICKY: &[&str] = &[
    "",
    " ",
    "a",
    "   ",
    "Hello world",
    "  hello",
    "hello  ",
    "hello \n",
    "a  \n  b",
    "x\r\ny\r\n\r\n  z\r",
    "x \r \n \u{85}\u{2028} y",
    "I'll I'LL I'Ll you'RE we'Ve it'S don't DON'T he'd she'M '",
    "'s 's'S ''s 'ſ 'ſa ’s ’S x’ll",
    "a'sb 'sam !'s ?'ll  's",
    "camelCaseWord HTTPServer ABCdef ǅungla ǅ ǈǉ",
    "中A 中文abc ʰA Aʰ AʰB aʰ ゙A",
    "e\u{301} \u{301}A \u{301}\u{301} !\u{301} \u{301}a A\u{301}B",
    "👨\u{200d}👩\u{200d}👧 ❤\u{fe0f} 1\u{fe0f}\u{20e3} 🇺🇸",
    "\u{e0100}a \u{e0100}A \u{e0100}",
    "123456789 ١٢٣٤ ०१२३ １２３４ ²³¹ ⅫⅩ ½ 12a 1.5",
    "\u{1c}\u{1d}\u{1e}\u{1f} x\u{1f}y \u{180e}a\u{200b}b\u{feff}c",
    "\t\tword \tword \u{a0}word \u{3000}漢字 \u{b}a\u{c}b",
    "a/b //x !/\n/y ://path/to \n/x",
    "!!!\n\n\nabc ...\r\n\r\n",
    "   !x  1  \u{301}",
    "a\n\n",
    "\n",
    "\r",
    "  \n",
    "\u{2029}\u{2029}x",
];

#[test]
fn scanners_match_regex_on_tricky_strings() {
    let engines = engines();
    for text in TRICKY {
        check(&engines, text);
    }
}

/// Characters the random strings are drawn from: every kind the patterns tell apart,
/// and the lookalikes they must not confuse.
const ALPHABET: &[char] = &[
    ' ',
    ' ',
    ' ',
    ' ',
    '\t',
    '\n',
    '\n',
    '\r',
    '\u{b}',
    '\u{c}',
    '\u{85}',
    '\u{a0}',
    '\u{1680}',
    '\u{2000}',
    '\u{2028}',
    '\u{202f}',
    '\u{3000}',
    '\u{1c}',
    '\u{1f}',
    '\u{180e}',
    '\u{200b}',
    '\u{feff}',
    'a',
    'b',
    's',
    't',
    'l',
    'e',
    'v',
    'r',
    'm',
    'd',
    'S',
    'L',
    'E',
    'V',
    'R',
    'D',
    'T',
    'M',
    'ſ',
    '\u{212a}',
    'k',
    '\'',
    '\'',
    '\'',
    '’',
    '!',
    '.',
    '/',
    '/',
    '-',
    '"',
    '0',
    '1',
    '9',
    '٣',
    '५',
    '５',
    '²',
    'Ⅻ',
    '½',
    'ǅ',
    'ʰ',
    '中',
    '日',
    'A',
    'Z',
    'é',
    'ß',
    'İ',
    'Ω',
    'ω',
    'ﬁ',
    '\u{301}',
    '\u{903}',
    '\u{20dd}',
    '\u{200d}',
    '\u{fe0f}',
    '\u{e0100}',
    '😀',
    '👩',
    'ㄱ',
    'ア',
];

#[test]
fn scanners_match_regex_on_random_strings() {
    let engines = engines();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..50_000 {
        let len = rng.below(32);
        let text: String = (0..len)
            .map(|_| ALPHABET[rng.below(ALPHABET.len())])
            .collect();
        check(&engines, &text);
    }
}

/// Long, mostly ASCII strings, so the 64-byte block paths are exercised, including
/// blocks ending inside runs, contractions and whitespace runs.
#[test]
fn scanners_match_regex_on_long_ascii_strings() {
    const ASCII: &[u8] = b"   \n\n\r\t\x0b\x0c\x1c''sdmtlvreSLTabcXY0123!.,/-";
    let engines = engines();
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for _ in 0..6_000 {
        let len = 64 + rng.below(400);
        let text: String = (0..len)
            .map(|_| {
                if rng.below(40) == 0 {
                    ALPHABET[rng.below(ALPHABET.len())]
                } else {
                    char::from(ASCII[rng.below(ASCII.len())])
                }
            })
            .collect();
        check(&engines, &text);
    }
}

/// Prose-like ASCII with many punctuation runs before line breaks and slashes (o200k's
/// `[\r\n/]*` after punctuation), several to a 64-byte block, each followed by every
/// kind of byte: letters, digits, punctuation, spaces and more breaks.
#[test]
fn scanners_match_regex_on_punctuation_before_line_breaks() {
    const PARTS: &[&str] = &[
        "word", " the", "Camel", "X", "42", "1234", "'s", "'LL", ".", "!?", ",", "'", "(", "\"",
        "-", "/", "//", "\n", "\r\n", "\r", "\n\n", "\n/", "/\n", " ", "  ", "\t", " .", ".\n",
        ".\r\n", "!\n\n", ":/\n", ".\n ", ".\n\t", "'\n", ")\n(",
    ];
    let engines = engines();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..4_000 {
        let parts = 20 + rng.below(120);
        let text: String = (0..parts).map(|_| PARTS[rng.below(PARTS.len())]).collect();
        check(&engines, &text);
    }
}
