//! Pre-tokenizers: split text into the pieces that BPE merges never cross.
//!
//! [`Pretokenizer`] is what training and encoding call. Named patterns (gpt2,
//! cl100k, o200k) are served by hand-written scanners that give exactly the pieces
//! the `regex` package gives for their pattern text, 4-58x faster than the regex
//! engine (see `benchmarks/`); any other pattern goes through the generic
//! regex engine, so a custom pattern is never ignored. (To time the regex engine on
//! a named pattern, wrap its text in `(?:...)`.)
//!
//! Each scanner has `piece_end(bytes, start) -> end` for any text and
//! `block_starts` for 64 bytes of plain ASCII at once (`common::scan_blocks` drives
//! both): the pieces are byte ranges of the input (`for_each_span`), found without
//! allocating. The block's class masks come from a kernel picked at run time
//! ([`Simd`]): the whole scan loop, with the caller's callback inlined, is compiled
//! once per kernel. Character classes come from `unicode_tables.rs`, generated from
//! the pinned `regex` package by `scripts/gen_unicode_tables.py`.

mod ascii_block;
mod cl100k;
mod common;
mod gpt2;
pub(crate) mod line_cut;
mod metaspace;
mod o200k;
pub mod patterns;
mod pipeline;
mod regex_engine;
pub mod unicode;
mod unicode_tables;

#[cfg(test)]
mod tests;

use std::sync::Arc;

use crate::error::{Error, Result};
use ascii_block::{Baseline, Classify};
pub use pipeline::Behavior;
use pipeline::{Matcher, Spans, Step};
use regex_engine::RegexSplitter;

/// Which engine splits the text: a named pattern's scanner, or (`Custom`) the regex
/// engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Gpt2,
    Cl100k,
    O200k,
    Custom,
}

#[derive(Clone, Debug)]
pub struct Pretokenizer {
    scanner: Scanner,
    pattern: String,
    simd: Simd,
}

/// What splits the text: a named pattern's scanner, or the regex engine with a
/// compiled custom pattern (the scanners need none).
#[derive(Clone, Debug)]
enum Scanner {
    Named(Named),
    Regex(RegexSplitter),
    Pipeline(Vec<Step>),
    Cuts(metaspace::Cuts),
}

/// One step of a chain of pre-tokenizers ([`Pretokenizer::from_steps`]), as
/// HF `tokenizers` describes it.
#[derive(Clone, Debug)]
pub enum StepSpec {
    /// `Split`: a regex (`literal`: a string matched as it is), the behavior, invert.
    Split {
        pattern: String,
        literal: bool,
        behavior: Behavior,
        invert: bool,
    },
    /// `Digits`: runs of numeric characters, or each on its own.
    Digits { individual: bool },
    /// `ByteLevel`'s split: GPT-2's pattern when `use_regex`, else none.
    ByteLevel { use_regex: bool },
}

/// The patterns with a scanner of their own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Named {
    Gpt2,
    Cl100k,
    Llama3,
    O200k,
}

/// Whether `pattern` is a bare word (a letter, then letters, digits, `_` or `-`):
/// what a pattern name looks like. As a regex such a word matches only itself,
/// which no pre-tokenizer wants, so one that is no name is a name mistyped ("GPT2",
/// "gpt3", "o200k-base"). The Python side's `patterns.unknown_name` agrees.
fn looks_like_a_name(pattern: &str) -> bool {
    let mut chars = pattern.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

impl Pretokenizer {
    /// `spec` is a name from [`patterns::NAMED`] or a regex. A regex whose text is
    /// exactly a named pattern's gets that pattern's engine.
    pub fn new(spec: &str) -> Result<Self> {
        let text = patterns::NAMED
            .iter()
            .find(|(name, _)| *name == spec)
            .map_or(spec, |(_, text)| *text);
        let named = match text {
            patterns::GPT2 => Some(Named::Gpt2),
            patterns::CL100K => Some(Named::Cl100k),
            patterns::LLAMA3 => Some(Named::Llama3),
            patterns::O200K => Some(Named::O200k),
            _ => None,
        };
        if text.is_empty() {
            return Err(Error::invalid("pre-tokenizer pattern is empty"));
        }
        let scanner = match named {
            Some(named) => Scanner::Named(named),
            None if looks_like_a_name(text) => {
                let names: Vec<&str> = patterns::NAMED.iter().map(|(n, _)| *n).collect();
                return Err(Error::invalid(format!(
                    "unknown pattern name {text:?}; the names are {}, and any other \
                     pattern is a regex (a bare word as a regex matches only itself)",
                    names.join(", ")
                )));
            }
            None => Scanner::Regex(RegexSplitter::new(text)?),
        };
        Ok(Self {
            scanner,
            pattern: text.to_owned(),
            simd: Simd::detect(),
        })
    }

    /// A chain of pre-tokenizers as HF `tokenizers` runs them. A chain that is one
    /// split by a named pattern gets that pattern's scanner: `Isolated`, or `Removed`
    /// inverted, which keeps the matches and drops the text between, of which a named
    /// pattern leaves none (its alternatives take whitespace, letters, numbers and
    /// everything else, `\s+` last). `ByteLevel` without its regex splits nothing.
    pub fn from_steps(steps: &[StepSpec]) -> Result<Self> {
        let mut chain = Vec::new();
        let mut described = Vec::new();
        // The scanner of the last named step (the one that counts when it is alone).
        let mut single_named = None;
        for spec in steps {
            let (matcher, behavior, invert) = match spec {
                StepSpec::ByteLevel { use_regex: false } => continue,
                StepSpec::ByteLevel { use_regex: true } => {
                    let named = Self::new("gpt2")?;
                    single_named = Some(named.clone());
                    (Matcher::Regex(Arc::new(named)), Behavior::Isolated, false)
                }
                StepSpec::Digits { individual } => (
                    Matcher::Numeric,
                    match individual {
                        true => Behavior::Isolated,
                        false => Behavior::Contiguous,
                    },
                    false,
                ),
                StepSpec::Split {
                    pattern,
                    literal: true,
                    behavior,
                    invert,
                } => {
                    if pattern.is_empty() {
                        return Err(Error::invalid("a Split's string pattern is empty"));
                    }
                    (Matcher::Literal(pattern.clone()), *behavior, *invert)
                }
                StepSpec::Split {
                    pattern,
                    literal: false,
                    behavior,
                    invert,
                } => {
                    let named = patterns::NAMED.iter().any(|(_, text)| text == pattern);
                    let matcher = match named {
                        true => {
                            let named = Self::new(pattern)?;
                            single_named = Some(named.clone());
                            Matcher::Regex(Arc::new(named))
                        }
                        false => Matcher::Generic(RegexSplitter::new(pattern)?),
                    };
                    (matcher, *behavior, *invert)
                }
            };
            described.push(format!("{spec:?}"));
            chain.push(Step {
                matcher,
                behavior,
                invert,
            });
        }
        let simd = Simd::detect();
        if let [Step {
            matcher: Matcher::Regex(_),
            behavior,
            invert,
        }] = chain.as_slice()
        {
            let keeps_matches = matches!(
                (behavior, invert),
                (Behavior::Isolated, _) | (Behavior::Removed, true)
            );
            if let (true, Some(named)) = (keeps_matches, single_named) {
                return Ok(named);
            }
        }
        Ok(Self {
            scanner: Scanner::Pipeline(chain),
            pattern: format!("pipeline: {}", described.join(", ")),
            simd,
        })
    }

    /// SentencePiece-style text: cut before each `rep` whose previous character is not
    /// in `joins` (`metaspace` module); `rep` `None`: the whole text is one piece.
    pub fn cuts_before(rep: Option<char>, joins: Vec<char>) -> Self {
        let cuts = match rep {
            Some(rep) => metaspace::Cuts::before(rep, joins),
            None => metaspace::Cuts::whole(),
        };
        Self {
            pattern: format!("metaspace: {}", cuts.describe()),
            scanner: Scanner::Cuts(cuts),
            simd: Simd::detect(),
        }
    }

    /// Whether a step may drop text (a `Split` with behavior `Removed`): its pieces
    /// then do not spell the text, which offsets assume.
    pub fn may_remove_text(&self) -> bool {
        match &self.scanner {
            Scanner::Pipeline(chain) => chain.iter().any(|s| s.behavior == Behavior::Removed),
            _ => false,
        }
    }

    pub fn kind(&self) -> Kind {
        match self.scanner {
            Scanner::Named(Named::Gpt2) => Kind::Gpt2,
            // The two split every text alike but at its very end, so their line cuts
            // (`line_cut`) are the same.
            Scanner::Named(Named::Cl100k | Named::Llama3) => Kind::Cl100k,
            Scanner::Named(Named::O200k) => Kind::O200k,
            Scanner::Regex(_) | Scanner::Pipeline(_) | Scanner::Cuts(_) => Kind::Custom,
        }
    }

    /// The regex text this pre-tokenizer is exactly equivalent to.
    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// Calls `f(start, end)` with the byte range of each piece of `text`, in order.
    /// The pieces are contiguous and cover `text`: a custom pattern's unmatched text
    /// comes as pieces of its own ([`RegexSplitter::for_each_piece`]).
    pub fn for_each_span<F: FnMut(usize, usize)>(&self, text: &str, f: F) -> Result<()> {
        let named = match &self.scanner {
            Scanner::Named(named) => *named,
            Scanner::Regex(regex) => return regex_spans(regex, text, f),
            Scanner::Pipeline(steps) => return pipeline_spans(steps, text, f),
            Scanner::Cuts(cuts) => {
                cuts.for_each_span(text, f);
                return Ok(());
            }
        };
        let scanned = match self.simd {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `Simd::Avx512` is only chosen on a CPU that has it.
            Simd::Avx512 => unsafe { scan_avx512(named, text, f) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `Simd::Avx2` is only chosen on a CPU that has it.
            Simd::Avx2 => unsafe { scan_avx2(named, text, f) },
            _ => scan_named::<Baseline>(named, text, f),
        };
        scanned.ok_or_else(|| scanner_bug(text))
    }

    /// The same pre-tokenizer using the block kernel `simd` (for tests; the default
    /// is [`Simd::detect`]'s). A kernel the CPU lacks falls back to the baseline.
    #[cfg(test)]
    pub(crate) fn with_simd(mut self, simd: Simd) -> Self {
        let best = Simd::best();
        self.simd = match simd {
            Simd::Baseline => Simd::Baseline,
            Simd::Avx2 if best != Simd::Baseline => Simd::Avx2,
            Simd::Avx512 if best == Simd::Avx512 => Simd::Avx512,
            _ => Simd::Baseline,
        };
        self
    }

    #[cfg(test)]
    pub(crate) fn simd(&self) -> Simd {
        self.simd
    }

    /// Calls `f` with each piece of `text`, in order.
    #[inline(always)]
    pub fn for_each_piece<'t, F: FnMut(&'t str)>(&self, text: &'t str, mut f: F) -> Result<()> {
        self.for_each_span(text, |start, end| {
            // Every span is on character boundaries (checked by the scanners' scalar
            // path; block boundaries are ASCII bytes), so `get` always succeeds.
            if let Some(piece) = text.get(start..end) {
                f(piece);
            }
        })
    }

    /// All pieces of `text` (for inspection and tests; hot paths use `for_each_piece`).
    pub fn pieces<'t>(&self, text: &'t str) -> Result<Vec<&'t str>> {
        let mut out = Vec::new();
        self.for_each_piece(text, |p| out.push(p))?;
        Ok(out)
    }
}

impl Spans for Pretokenizer {
    fn spans(&self, text: &str, f: &mut dyn FnMut(usize, usize)) -> Result<()> {
        self.for_each_span(text, f)
    }
}

/// The instruction set of the scanners' block kernel ([`ascii_block::Classify`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Simd {
    /// SSE2 on x86_64 (every such CPU has it), plain code elsewhere.
    Baseline,
    /// AVX2 with BMI1, BMI2 and LZCNT (Haswell, Zen and later): half the compares
    /// and mask moves of SSE2.
    Avx2,
    /// AVX-512BW: about 1.1x the baseline scan on English (see `benchmarks/`).
    Avx512,
}

impl Simd {
    pub fn name(self) -> &'static str {
        match self {
            Simd::Baseline => "baseline",
            Simd::Avx2 => "avx2",
            Simd::Avx512 => "avx512",
        }
    }
}

impl Simd {
    /// The kernel the scanners use: the best this CPU runs, unless the environment
    /// variable `BPEKIT_SIMD` asks for `baseline`, or for `avx2` on a CPU with
    /// AVX-512 (to compare the kernels, or to rule one out); any other value, or a
    /// kernel the CPU lacks, leaves the best. Read once per process.
    pub fn detect() -> Self {
        static CHOSEN: std::sync::OnceLock<Simd> = std::sync::OnceLock::new();
        *CHOSEN.get_or_init(|| {
            let best = Simd::best();
            match std::env::var("BPEKIT_SIMD").as_deref() {
                Ok("baseline") => Simd::Baseline,
                Ok("avx2") if best == Simd::Avx512 => Simd::Avx2,
                _ => best,
            }
        })
    }

    /// The best kernel this CPU runs.
    pub(crate) fn best() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            use std::is_x86_feature_detected as has;
            let bits = has!("bmi1") && has!("bmi2") && has!("lzcnt") && has!("popcnt");
            // AVX2 too: a virtual CPU may report the two apart, and `BPEKIT_SIMD=avx2`
            // picks AVX2 on a CPU with AVX-512.
            if bits && has!("avx2") && has!("avx512f") && has!("avx512bw") {
                return Simd::Avx512;
            }
            if bits && has!("avx2") {
                return Simd::Avx2;
            }
        }
        Simd::Baseline
    }
}

/// [`Pretokenizer::for_each_span`] for a chain of pre-tokenizers, out of line as
/// `regex_spans` is.
#[inline(never)]
fn pipeline_spans(steps: &[Step], text: &str, mut f: impl FnMut(usize, usize)) -> Result<()> {
    pipeline::for_each_span(steps, text, 0, &mut f)
}

/// [`Pretokenizer::for_each_span`] for a custom pattern: the regex engine, out of line.
/// How the scanners' loop compiles (with the caller's callback inlined into it)
/// depends on everything else in the function it is in: with the regex engine's
/// search inlined beside it, a 1-thread gpt2 count ran 0.8% more instructions
/// (callgrind, python311_docs_rst).
#[inline(never)]
fn regex_spans(regex: &RegexSplitter, text: &str, mut f: impl FnMut(usize, usize)) -> Result<()> {
    regex.for_each_piece(text, |p| {
        let start = (p.as_ptr() as usize).wrapping_sub(text.as_ptr() as usize);
        f(start, start + p.len());
    })
}

/// The scanner of a named pattern with block kernel `C`, inlined with the caller's
/// callback into one loop.
#[inline(always)]
fn scan_named<C: Classify>(named: Named, text: &str, f: impl FnMut(usize, usize)) -> Option<()> {
    match named {
        Named::Gpt2 => gpt2::scan::<C>(text, f),
        Named::Cl100k => cl100k::scan::<C, false>(text, f),
        Named::Llama3 => cl100k::scan::<C, true>(text, f),
        Named::O200k => o200k::scan::<C>(text, f),
    }
}

/// [`scan_named`] compiled for AVX-512 (with BMI for the bit scans), callback included.
///
/// # Safety
/// The CPU must have AVX-512F, AVX-512BW, BMI1, BMI2, LZCNT and POPCNT
/// ([`Simd::detect`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,bmi1,bmi2,lzcnt,popcnt")]
unsafe fn scan_avx512(named: Named, text: &str, f: impl FnMut(usize, usize)) -> Option<()> {
    scan_named::<ascii_block::Avx512>(named, text, f)
}

/// [`scan_named`] compiled for AVX2 (with BMI for the bit scans), callback included.
///
/// # Safety
/// The CPU must have AVX2, BMI1, BMI2, LZCNT and POPCNT ([`Simd::detect`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
unsafe fn scan_avx2(named: Named, text: &str, f: impl FnMut(usize, usize)) -> Option<()> {
    scan_named::<ascii_block::Avx2>(named, text, f)
}

/// The error for a scanner that broke its promise (a piece that is empty or not on
/// character boundaries): never expected, but reported rather than a panic or a hang.
#[cold]
fn scanner_bug(text: &str) -> Error {
    let head: String = text.chars().take(80).collect();
    Error::Regex(format!(
        "pre-tokenizer scanner failed on a text starting {head:?}: please report this input"
    ))
}
