//! What the `Encoder` constructors take from Python: a vocabulary and merges, an HF
//! tokenizer's pre-tokenizer steps and front (normalizers, added tokens), and the
//! memory check made before a vocabulary is loaded.

use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;

use crate::encode::{
    AddedToken, CharSpec, CharWords, DecodeStep, FrontSpec, Metaspace, NormSpec, Prepend,
};
use crate::pretokenize::{Behavior, StepSpec};

/// Memory a vocabulary takes to load, per token at most: its bytes and the Python
/// objects' Rust copies, its slots in the id, pair and short-token tables, its merge
/// (measured: o200k's 200K tokens peak at ~60 MB above the process, ~300 bytes a
/// token), with room to spare; and the fixed tables.
const LOAD_BYTES_PER_TOKEN: usize = 512;
const LOAD_BYTES_FIXED: usize = 8 << 20;

/// A `MemoryError` now, rather than an abort partway, where a vocabulary of
/// `tokens` tokens cannot be loaded ([`crate::hugemem::probe`]).
pub(crate) fn room_to_load(tokens: usize) -> PyResult<()> {
    let bytes = tokens
        .saturating_mul(LOAD_BYTES_PER_TOKEN)
        .saturating_add(LOAD_BYTES_FIXED);
    match crate::hugemem::probe(bytes) {
        true => Ok(()),
        false => Err(crate::Error::OutOfMemory {
            what: "loading a vocabulary",
            bytes,
        }
        .into()),
    }
}

/// An added token as the bindings take it: `(content, id, special, single_word,
/// lstrip, rstrip, normalized)`.
type AddedArgs = (String, u32, bool, bool, bool, bool, bool);

/// The front of an HF tokenizer as the bindings take it: normalizers, added tokens,
/// prefix space, and the bytes each added token's id decodes to.
pub(crate) type HfFrontArgs = (
    Vec<(String, String, bool, String)>,
    Vec<AddedArgs>,
    bool,
    Vec<(u32, Vec<u8>)>,
);

/// A SentencePiece-style model as the bindings take it: `(byte_fallback, unk id,
/// fuse_unk, replacement, split, prepend scheme, decoders)`: the replacement and
/// `split` of `Metaspace` (or the replacement a normalizer puts for spaces), the
/// scheme (`"always"`, `"first"`, `"never"`) where `Metaspace` changes the text (`None`:
/// no `Metaspace`), and the decoders `(kind, text, text, count, count)`: `("replace",
/// pattern, content, 0, 0)`, `("byte_fallback", ...)`, `("fuse", ...)`, `("strip",
/// content, "", start, stop)`, `("metaspace", replacement, "", prepends, 0)`.
pub(crate) type CharArgs = (
    bool,
    Option<u32>,
    bool,
    Option<char>,
    bool,
    Option<String>,
    Vec<(String, String, String, usize, usize)>,
);

fn one_char(text: &str, what: &str) -> crate::Result<char> {
    let mut chars = text.chars();
    match (chars.next(), chars.next()) {
        (Some(c), None) => Ok(c),
        _ => Err(crate::Error::invalid(format!(
            "{what} {text:?} is not one character"
        ))),
    }
}

/// The model, the `Metaspace` change and the decoders of [`CharArgs`].
pub(crate) fn char_words(
    args: CharArgs,
) -> PyResult<(CharWords, Option<Metaspace>, Vec<DecodeStep>)> {
    let (byte_fallback, unk, fuse_unk, rep, split, scheme, decoders) = args;
    let words = CharWords {
        chars: CharSpec {
            byte_fallback,
            unk,
            fuse_unk,
        },
        rep,
        split,
    };
    let metaspace = match scheme.as_deref() {
        None => None,
        Some(scheme) => Some(Metaspace {
            replacement: rep
                .ok_or_else(|| crate::Error::invalid("a Metaspace needs its replacement"))?,
            prepend: match scheme {
                "always" => Prepend::Always,
                "first" => Prepend::First,
                "never" => Prepend::Never,
                other => {
                    return Err(
                        crate::Error::invalid(format!("unknown prepend scheme {other:?}")).into(),
                    )
                }
            },
        }),
    };
    let steps = decoders
        .into_iter()
        .map(|(kind, a, b, n, m)| {
            Ok(match kind.as_str() {
                "replace" => DecodeStep::Replace {
                    pattern: a,
                    content: b,
                },
                "byte_fallback" => DecodeStep::ByteFallback,
                "fuse" => DecodeStep::Fuse,
                "strip" => DecodeStep::Strip {
                    content: one_char(&a, "a Strip decoder's content")?,
                    start: n,
                    stop: m,
                },
                "metaspace" => DecodeStep::Metaspace {
                    replacement: one_char(&a, "a Metaspace decoder's replacement")?,
                    prepend: n != 0,
                },
                other => {
                    return Err(crate::Error::invalid(format!(
                        "unknown decoder step {other:?}"
                    )))
                }
            })
        })
        .collect::<crate::Result<Vec<_>>>()?;
    Ok((words, metaspace, steps))
}

/// A vocab `[(id, bytes)]` and merges `[(bytes, bytes)]` from Python.
pub(crate) fn vocab_and_merges(
    vocab: &Bound<'_, PyAny>,
    merges: &Bound<'_, PyAny>,
) -> PyResult<VocabMerges> {
    let vocab: Vec<(u32, PyBackedBytes)> = vocab.extract()?;
    let merges: Vec<(PyBackedBytes, PyBackedBytes)> = merges.extract()?;
    let vocab = vocab.into_iter().map(|(i, b)| (i, b.to_vec())).collect();
    let merges = merges
        .into_iter()
        .map(|(a, b)| (a.to_vec(), b.to_vec()))
        .collect();
    Ok((vocab, merges))
}

pub(crate) type VocabMerges = (Vec<(u32, Vec<u8>)>, Vec<(Vec<u8>, Vec<u8>)>);

/// Normalizers as the bindings take them, `(kind, pattern, literal, content)`.
fn norm_specs(normalizers: Vec<(String, String, bool, String)>) -> crate::Result<Vec<NormSpec>> {
    normalizers
        .into_iter()
        .map(|(kind, pattern, literal, content)| {
            Ok(match kind.as_str() {
                "NFC" => NormSpec::Nfc,
                "NFD" => NormSpec::Nfd,
                "NFKC" => NormSpec::Nfkc,
                "NFKD" => NormSpec::Nfkd,
                "Lowercase" => NormSpec::Lowercase,
                "Replace" => NormSpec::Replace {
                    pattern,
                    literal,
                    content,
                },
                "Prepend" => NormSpec::Prepend(content),
                other => {
                    return Err(crate::Error::invalid(format!(
                        "unknown normalizer {other:?}"
                    )))
                }
            })
        })
        .collect()
}

/// `text` through HF normalizers given as `Encoder.from_hf` takes them.
#[pyfunction]
pub(crate) fn hf_normalize(
    normalizers: Vec<(String, String, bool, String)>,
    text: &str,
) -> PyResult<String> {
    Ok(crate::encode::normalize(&norm_specs(normalizers)?, text)?)
}

/// The pre-tokenizer steps of `Encoder.from_hf`, `(kind, pattern, flag, behavior,
/// invert)`.
pub(crate) fn pre_steps(
    steps: Vec<(String, String, bool, String, bool)>,
) -> PyResult<Vec<StepSpec>> {
    let steps = steps
        .into_iter()
        .map(|(kind, pattern, flag, behavior, invert)| {
            Ok(match kind.as_str() {
                "split" => StepSpec::Split {
                    pattern,
                    literal: flag,
                    behavior: Behavior::parse(&behavior)?,
                    invert,
                },
                "digits" => StepSpec::Digits { individual: flag },
                "bytelevel" => StepSpec::ByteLevel { use_regex: flag },
                other => {
                    return Err(crate::Error::invalid(format!(
                        "unknown pre-tokenizer step {other:?}"
                    )))
                }
            })
        })
        .collect::<crate::Result<Vec<_>>>()?;
    Ok(steps)
}

/// The bytes each added token's id decodes to.
type Decoded = Vec<(u32, Vec<u8>)>;

/// The front of `Encoder.from_hf`, and the bytes each added token's id decodes to.
pub(crate) fn front_spec(front: HfFrontArgs) -> PyResult<(FrontSpec, Decoded)> {
    let (normalizers, added, prefix_space, decode) = front;
    let normalizers = norm_specs(normalizers)?;
    let added = added
        .into_iter()
        .map(
            |(content, id, special, single_word, lstrip, rstrip, normalized)| AddedToken {
                content,
                id,
                special,
                single_word,
                lstrip,
                rstrip,
                normalized,
            },
        )
        .collect();
    let spec = FrontSpec {
        normalizers,
        added,
        prefix_space,
        ..FrontSpec::default()
    };
    Ok((spec, decode))
}
