//! Offsets of a SentencePiece-style file (a vocabulary of characters), as `tokenizers`
//! gives them. Each text between added tokens is normalized and changed by
//! `Metaspace` with its alignments (`align`: every byte of the model's text stands for
//! a range of the input; a `▁` for a space stands for the space, a prepended `▁` for
//! the text's first character), encoded as plain `encode` encodes it, and its ids'
//! spans in the model's text are walked from their lengths: `tokenizers`' `Word` gives
//! a part the bytes of its character, 1 to a byte token (so the tokens of one
//! character's bytes all span the character), the run of characters to an unknown
//! token, and a merged token its parts' sum; a token spans the input from the start
//! of its first byte's range to the end of its last's (`expand_alignments`).
//!
//! The lengths come from a table by id made on the first offsets asked for; only an
//! unknown token's depends on the text, and texts that hold one are walked again by
//! piece for them.

use super::added::Part;
use super::align::Aligned;
use super::space_map::SpaceMap;
use super::spans::{offset_in, push_added};
use super::{Front, Metaspace};
use crate::encode::engine::{Chars, Engine, Span, Spans, Workspace};
use crate::encode::vocab::{recover_merges, Bpe};
use crate::error::{Error, Result};
use crate::specials::Specials;

/// A length that depends on the text (an unknown token), or that merges give two
/// ways.
const VARIES: u32 = u32::MAX;

/// The bytes of the model's text each id stands for, where it does not depend on the
/// text ([`VARIES`] otherwise). A token's text, but 1 for a byte token and the sum of
/// a merge's parts for a token merged from byte or unknown tokens (whose texts are not
/// the text they stand for).
pub(super) fn char_lens(bpe: &Bpe) -> Result<Box<[u32]>> {
    let Some(model) = bpe.chars() else {
        return Err(Error::invalid("offsets: not a vocabulary of characters"));
    };
    let mut lens: Vec<u32> = (0..bpe.id_limit())
        .map(|id| bpe.token(id as u32).map_or(VARIES, |t| t.len() as u32))
        .collect();
    for id in model.byte_token_ids() {
        lens[id as usize] = 1;
    }
    if let Some(unk) = model.unk().and_then(|u| lens.get_mut(u as usize)) {
        *unk = VARIES;
    }
    let mut merged = vec![false; lens.len()];
    for (left, right) in recover_merges(bpe)? {
        let Some((_, id)) = bpe.pair(left, right) else {
            continue;
        };
        let part = |i: u32| lens.get(i as usize).copied().unwrap_or(VARIES);
        let sum = match (part(left), part(right)) {
            (VARIES, _) | (_, VARIES) => VARIES,
            (l, r) => l.saturating_add(r),
        };
        let i = id as usize;
        if let (Some(len), Some(seen)) = (lens.get(i).copied(), merged.get_mut(i)) {
            lens[i] = if *seen && len != sum { VARIES } else { sum };
            *seen = true;
        }
    }
    Ok(lens.into_boxed_slice())
}

/// The lengths of the unknown tokens of `text` (a model's text), in order: its pieces'
/// first parts, as the engine merges them (a piece that is a token whole has none).
fn unknown_lens(engine: &Engine, text: &str) -> Result<Vec<usize>> {
    let (bpe, mut lens, mut failed) = (&engine.bpe, Vec::new(), None);
    let Some(model) = bpe.chars() else {
        return Ok(lens);
    };
    let unk = model.unk();
    engine.pretok.for_each_span(text, |s, e| {
        let piece = &text.as_bytes()[s..e];
        if failed.is_some() || (bpe.whole_piece_lookup() && bpe.id_of(piece).is_some()) {
            return;
        }
        let parts = model.for_each_part(piece, |id, n| {
            if Some(id) == unk {
                lens.push(n);
            }
        });
        failed = parts.err();
    })?;
    failed.map_or(Ok(lens), Err)
}

/// How a text part's bytes after the normalizers and `Metaspace` stand for the
/// original: a forward cursor where the only changes are a mark for each space and a
/// prefix ([`SpaceMap`]), else every byte's alignment ([`Aligned`]).
enum Way<'a> {
    /// The normalizers change nothing; `Metaspace` changes each text between added
    /// tokens.
    Metaspace(&'a Metaspace),
    /// The normalizers put `rep` for each space and `prefix` before the text; no
    /// `Metaspace`.
    Marks {
        prefix: usize,
        rep: usize,
    },
    Aligned,
}

impl Front {
    fn way(&self) -> Way<'_> {
        match (&self.metaspace, self.normalizer.space_marks()) {
            (Some(m), _) if self.normalizer.is_empty() => Way::Metaspace(m),
            (None, Some((prefix, rep))) => Way::Marks {
                prefix: prefix.len(),
                rep: rep.len(),
            },
            _ => Way::Aligned,
        }
    }

    /// [`Front::encode_spans`] of a SentencePiece-style file.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn char_spans(
        &self,
        engine: &Engine,
        text: &str,
        allowed: &Specials,
        ws: &mut Workspace,
        out: &mut Vec<u32>,
        spans: &mut Spans,
        chars: &mut Chars<'_>,
    ) -> Result<()> {
        let lens: &[u32] = match self.char_lens.get() {
            Some(lens) => lens,
            None => {
                let lens = char_lens(&engine.bpe)?;
                self.char_lens.get_or_init(|| lens)
            }
        };
        let recognise = |id: u32| allowed.ids.contains(&id);
        let any = !allowed.ids.is_empty();
        let way = self.way();
        // Whether the next part starts the input, as `normalized_part` keeps it.
        let mut first = true;
        let mut ctx = (engine, lens, ws, out, spans, chars);
        self.raw.split(text, recognise, |part| {
            let (_, _, _, out, spans, chars) = &mut ctx;
            let t = match part {
                Part::Token(id, r) => {
                    first = false;
                    let at = chars.span([r.start, r.end]);
                    push_added(id, &text[r], at, out, spans);
                    return Ok(());
                }
                Part::Text(t) => t,
            };
            let base = offset_in(text, t);
            match way {
                Way::Metaspace(meta) => self.normalized.split(
                    t,
                    |_| any,
                    |sub| {
                        let starts = std::mem::replace(&mut first, false);
                        let (_, _, _, out, spans, chars) = &mut ctx;
                        let part = match sub {
                            Part::Token(id, r) => {
                                let at = chars.span([base + r.start, base + r.end]);
                                push_added(id, &t[r], at, out, spans);
                                return Ok(());
                            }
                            Part::Text(part) => part,
                        };
                        let base = chars.at(base + offset_in(t, part));
                        let model = meta.apply(part, starts);
                        let prefix = match meta.prepends(part, starts) {
                            true => meta.rep_len(),
                            false => 0,
                        };
                        let mut map = SpaceMap::new(part, prefix, meta.rep_len());
                        self.model_spans(&mut ctx, &model, |_, s, e| {
                            let (s, e) = map.span(s, e);
                            [base + s, base + e]
                        })
                    },
                ),
                Way::Marks { prefix, rep } => {
                    let normalized = self.normalizer.apply(t)?;
                    let mut map = SpaceMap::new(t, prefix, rep);
                    let base = chars.at(base);
                    self.normalized.split(
                        &normalized,
                        |_| any,
                        |sub| {
                            first = false;
                            let (_, _, _, out, spans, _) = &mut ctx;
                            let (at, model) = match sub {
                                Part::Token(id, r) => {
                                    let (s, e) = map.span(r.start, r.end);
                                    push_added(
                                        id,
                                        &normalized[r],
                                        [base + s, base + e],
                                        out,
                                        spans,
                                    );
                                    return Ok(());
                                }
                                Part::Text(sub) => (offset_in(&normalized, sub), sub),
                            };
                            self.model_spans(&mut ctx, model, |_, s, e| {
                                let (s, e) = map.span(at + s, at + e);
                                [base + s, base + e]
                            })
                        },
                    )
                }
                Way::Aligned => {
                    let a = match self.normalizer.apply_aligned(t)? {
                        Some(a) => a,
                        None => Aligned::new(t),
                    };
                    self.normalized.split(
                        &a.text,
                        |_| any,
                        |sub| {
                            let starts = std::mem::replace(&mut first, false);
                            let (_, _, _, out, spans, chars) = &mut ctx;
                            let sub = match sub {
                                Part::Token(id, r) => {
                                    let (s, e) = a.expand(r.start, r.end);
                                    let at = chars.span([base + s, base + e]);
                                    push_added(id, &a.text[r], at, out, spans);
                                    return Ok(());
                                }
                                Part::Text(sub) => sub,
                            };
                            let at = offset_in(&a.text, sub);
                            let mut m = a.sub(at..at + sub.len());
                            if let Some(meta) = &self.metaspace {
                                meta.apply_aligned(&mut m, starts);
                            }
                            self.model_spans(&mut ctx, &m.text, |chars, s, e| {
                                let (s, e) = m.expand(s, e);
                                chars.span([base + s, base + e])
                            })
                        },
                    )
                }
            }
        })
    }

    /// The ids of `model`, a text as the BPE model gets it, and their spans, which
    /// `map` makes of their byte ranges in `model`.
    fn model_spans(
        &self,
        ctx: &mut Ctx<'_, '_>,
        model: &str,
        mut map: impl FnMut(&mut Chars<'_>, usize, usize) -> Span,
    ) -> Result<()> {
        let (engine, lens, ws, out, spans, chars) = ctx;
        let from = out.len();
        if let Some(id) = self
            .whole_text_lookup
            .then(|| engine.bpe.id_of(model.as_bytes()))
            .flatten()
        {
            out.push(id);
            spans.spans.push(map(chars, 0, model.len()));
            return Ok(());
        }
        engine.encode_into(model, &self.none, ws, out)?;
        walk(
            engine,
            lens,
            model,
            &out[from..],
            &mut spans.spans,
            |s, e| map(chars, s, e),
        )
    }
}

/// What encoding a text part with offsets works with.
type Ctx<'e, 'c> = (
    &'e Engine,
    &'e [u32],
    &'e mut Workspace,
    &'e mut Vec<u32>,
    &'e mut Spans,
    &'e mut Chars<'c>,
);

/// Pushes the span of each of `ids`, the ids of the model's text `text`, as `map`
/// makes it of the token's bytes in `text`. Lengths that do not add up are an error,
/// never a wrong offset.
fn walk(
    engine: &Engine,
    lens: &[u32],
    text: &str,
    ids: &[u32],
    spans: &mut Vec<Span>,
    mut map: impl FnMut(usize, usize) -> Span,
) -> Result<()> {
    spans
        .try_reserve(ids.len())
        .map_err(|_| Error::out_of_memory::<Span>("offsets", spans.len() + ids.len()))?;
    let model = engine.bpe.chars();
    let unk = model.and_then(|m| m.unk());
    let mut unknown = match unk.is_some_and(|u| ids.contains(&u)) {
        true => unknown_lens(engine, text)?.into_iter(),
        false => Vec::new().into_iter(),
    };
    let mut at = 0;
    for &id in ids {
        let n = match lens.get(id as usize).copied() {
            _ if Some(id) == unk => unknown.next(),
            Some(VARIES) | None => None,
            Some(n) => Some(n as usize),
        };
        let n = n.ok_or_else(|| {
            Error::invalid(format!(
                "offsets: how much text token id {id} stands for is not known (merges \
                 that use byte or unknown tokens make it two ways); encode() gives its ids"
            ))
        })?;
        spans.push(map(at, at + n));
        at += n;
    }
    let drops = model.is_some_and(|m| m.drops_chars());
    if at > text.len() || (at < text.len() && !drops) {
        return Err(Error::invalid(format!(
            "offsets: the tokens stand for {at} bytes, the text has {}",
            text.len()
        )));
    }
    Ok(())
}
