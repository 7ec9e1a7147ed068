//! The front of a tokenizer loaded from HF `tokenizers`' `tokenizer.json`: what it does
//! to a text before the pre-tokenizer, in `tokenizers`' order (`AddedVocabulary::
//! extract_and_normalize`, then `ByteLevel`'s prefix space):
//!
//! 1. the added tokens that are not normalized are found in the raw text;
//! 2. each text between them is normalized on its own, and the normalized added tokens
//!    are found in it;
//! 3. each text left gets a space before it where `add_prefix_space` asks, or
//!    `Metaspace`'s change (`metaspace`: spaces to `▁`, a `▁` before it), and goes
//!    through the engine (pre-tokenizer, then BPE).
//!
//! SentencePiece-style files decode through `decode`'s chain of decoders, on token
//! texts rather than bytes.
//!
//! Files are encoded in chunks cut at line cuts and before special tokens
//! (`corpus::safe_cut`); [`Front::line_cuts`] and [`Front::special_cuts`] say which of
//! them keep the ids of the whole text here.

mod added;
mod align;
mod decode;
mod metaspace;
mod normalize;
mod quick;
mod sp_spans;
mod space_map;
mod spans;

pub use added::AddedToken;
pub use decode::DecodeStep;
pub use metaspace::{Metaspace, Prepend};
pub use normalize::NormSpec;

use decode::TextDecoder;

use added::{AddedSet, Part};
use normalize::Normalizer;

use crate::encode::engine::{Engine, Workspace};
use crate::error::Result;
use crate::specials::Specials;

/// `text` through the normalizers `specs` (what an added token marked `normalized`
/// is matched and decoded as).
pub fn normalize(specs: &[NormSpec], text: &str) -> Result<String> {
    Ok(Normalizer::new(specs)?.apply(text)?.into_owned())
}

/// What a `tokenizer.json` asks of the text around the pre-tokenizer.
#[derive(Clone, Debug, Default)]
pub struct FrontSpec {
    pub normalizers: Vec<NormSpec>,
    pub added: Vec<AddedToken>,
    /// `ByteLevel`'s `add_prefix_space`: a space before each text that lacks one.
    pub prefix_space: bool,
    /// The `Metaspace` pre-tokenizer's change to each text.
    pub metaspace: Option<Metaspace>,
    /// A whole text (after `metaspace`) that is a token is that token: `ignore_merges`
    /// where the BPE model's word is the whole text, which the engine gets in pieces.
    pub whole_text_lookup: bool,
    /// The decoders of a SentencePiece-style file (`None`: `ByteLevel`, bytes joined).
    pub decoder: Option<Vec<DecodeStep>>,
}

#[derive(Clone, Debug)]
pub(crate) struct Front {
    normalizer: Normalizer,
    raw: AddedSet,
    normalized: AddedSet,
    prefix_space: bool,
    metaspace: Option<Metaspace>,
    whole_text_lookup: bool,
    decoder: Option<TextDecoder>,
    none: Specials,
    /// The bytes of text each id of a SentencePiece-style file stands for, made on the
    /// first offsets asked for (`sp_spans`).
    char_lens: std::sync::OnceLock<Box<[u32]>>,
    /// The spec, spelled out: part of the encoder's fingerprint.
    description: String,
}

impl Front {
    pub(crate) fn new(spec: FrontSpec) -> Result<Self> {
        let description = format!("{spec:?}");
        let normalizer = Normalizer::new(&spec.normalizers)?;
        let (mut normalized, raw): (Vec<_>, Vec<_>) =
            spec.added.into_iter().partition(|t| t.normalized);
        // A normalized token is matched by its normalized content.
        for t in &mut normalized {
            t.content = normalizer.apply(&t.content)?.into_owned();
        }
        Ok(Self {
            normalizer,
            raw: AddedSet::new(raw)?,
            normalized: AddedSet::new(normalized)?,
            prefix_space: spec.prefix_space,
            metaspace: spec.metaspace,
            whole_text_lookup: spec.whole_text_lookup,
            decoder: spec.decoder.map(TextDecoder::new).transpose()?,
            none: Specials::default(),
            char_lens: std::sync::OnceLock::new(),
            description,
        })
    }

    pub(crate) fn description(&self) -> &str {
        &self.description
    }

    /// The added tokens matched in the raw text, as the encoder's special tokens:
    /// their matcher is shared, not built again (a 10 MB token took ~1 s to match).
    pub(crate) fn raw_specials(&self) -> Specials {
        Specials {
            matcher: self.raw.matcher().clone(),
            ids: self.raw.tokens().iter().map(|t| t.id).collect(),
        }
    }

    /// Whether a text may be cut before a match of its raw added tokens and each part
    /// encoded alone: such a match starts a new text for the normalizer and the
    /// prefix space too, unless a token reads the text around it.
    pub(crate) fn special_cuts(&self) -> bool {
        let all = self.raw.tokens().iter().chain(self.normalized.tokens());
        !all.into_iter().any(AddedToken::looks_around)
    }

    /// Whether the pre-tokenizer's line cuts keep the ids here too: the normalizer
    /// keeps them, no added token holds a line break or reads the text around it, and
    /// no text between them gets a prefix space (a part would start a new text).
    pub(crate) fn line_cuts(&self) -> bool {
        let all = self.raw.tokens().iter().chain(self.normalized.tokens());
        self.special_cuts()
            && self.normalizer.keeps_line_cuts()
            && !self.prefix_space
            && self.metaspace.is_none()
            && !self.whole_text_lookup
            && !all.into_iter().any(|t| t.content.contains(['\n', '\r']))
    }

    /// Appends the ids of `text`. Special added tokens count where `allowed` holds
    /// them (its ids are the raw added tokens'; a normalized special token counts when
    /// any does): `tokenizers` recognises them all, or with `encode_special_tokens`
    /// none.
    pub(crate) fn encode_into(
        &self,
        engine: &Engine,
        text: &str,
        allowed: &Specials,
        ws: &mut Workspace,
        out: &mut Vec<u32>,
    ) -> Result<()> {
        let recognise = |id: u32| allowed.ids.contains(&id);
        let any = !allowed.ids.is_empty();
        // Whether the next part starts the input (`Metaspace`'s "first" scheme).
        let mut first = true;
        self.raw.split(text, recognise, |part| match part {
            Part::Token(id, _) => {
                first = false;
                out.push(id);
                Ok(())
            }
            Part::Text(t) if self.normalizer.is_empty() => {
                self.normalized_part(engine, t, any, &mut first, ws, out)
            }
            Part::Text(t) => {
                let t = self.normalizer.apply(t)?;
                self.normalized_part(engine, &t, any, &mut first, ws, out)
            }
        })
    }

    /// The text of `ids` through the decoders of a SentencePiece-style file, or `None`
    /// where the file's decoder joins bytes (`ByteLevel`). `text(id)` is an id's token
    /// text (an error for an id the vocabulary lacks).
    pub(crate) fn decode_text(
        &self,
        ids: &[u32],
        text: impl Fn(u32) -> Result<String>,
    ) -> Option<Result<String>> {
        let decoder = self.decoder.as_ref()?;
        Some(
            ids.iter()
                .map(|&id| text(id))
                .collect::<Result<Vec<_>>>()
                .map(|tokens| decoder.decode(tokens)),
        )
    }

    /// The bytes of one token text inside a decoded text, or `None` where the
    /// file's decoder joins bytes.
    pub(crate) fn token_bytes(&self, text: &str) -> Option<Vec<u8>> {
        Some(self.decoder.as_ref()?.token_bytes(text))
    }

    /// The text the BPE model gets of a text part (`Metaspace`'s change); `first`:
    /// the part starts the input.
    fn model_text<'t>(&self, t: &'t str, first: bool) -> std::borrow::Cow<'t, str> {
        match &self.metaspace {
            Some(m) => m.apply(t, first),
            None => std::borrow::Cow::Borrowed(t),
        }
    }

    /// Step 2's matches in a normalized text, and the texts between them encoded;
    /// `specials`: whether special tokens count.
    fn normalized_part(
        &self,
        engine: &Engine,
        text: &str,
        specials: bool,
        first: &mut bool,
        ws: &mut Workspace,
        out: &mut Vec<u32>,
    ) -> Result<()> {
        let recognise = |_: u32| specials;
        self.normalized.split(text, recognise, |part| {
            let starts = std::mem::replace(first, false);
            match part {
                Part::Token(id, _) => {
                    out.push(id);
                    Ok(())
                }
                Part::Text(t) if self.prefix_space && !t.starts_with(' ') => {
                    let spaced = format!(" {t}");
                    engine.encode_into(&spaced, &self.none, ws, out)
                }
                Part::Text(t) => {
                    let t = self.model_text(t, starts);
                    if self.whole_text_lookup {
                        if let Some(id) = engine.bpe.id_of(t.as_bytes()) {
                            out.push(id);
                            return Ok(());
                        }
                    }
                    engine.encode_into(&t, &self.none, ws, out)
                }
            }
        })
    }
}
