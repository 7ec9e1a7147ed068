//! The regex text of each named pre-tokenizer pattern, as the reference engines use it.
//! `python/bpekit/patterns.py` holds the same strings; a test keeps them equal.

/// CS336's `PAT`, GPT-2's pattern (tiktoken's r50k/p50k pattern behaves identically).
pub const GPT2: &str = r"'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+";

/// tiktoken's cl100k_base pattern.
pub const CL100K: &str = r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s";

/// cl100k's pattern as tiktoken gave it before making it possessive, as Llama 3 and
/// OLMo 2 ship it: cl100k's pieces, but for a final whitespace run holding a line break
/// (see `cl100k.rs`).
pub const LLAMA3: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// tiktoken's o200k_base pattern.
pub const O200K: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    "|",
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    "|",
    r"\p{N}{1,3}",
    "|",
    r" ?[^\s\p{L}\p{N}]+[\r\n/]*",
    "|",
    r"\s*[\r\n]+",
    "|",
    r"\s+(?!\S)",
    "|",
    r"\s+",
);

/// Names users may pass instead of a pattern's text, with the text each stands for.
pub(crate) const NAMED: &[(&str, &str)] = &[
    ("gpt2", GPT2),
    ("r50k_base", GPT2),
    ("p50k_base", GPT2),
    ("cl100k", CL100K),
    ("cl100k_base", CL100K),
    ("llama3", LLAMA3),
    ("o200k", O200K),
    ("o200k_base", O200K),
];
