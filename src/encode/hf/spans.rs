//! Offsets through the front: each id's span in the original text, as `tokenizers`
//! gives it. An added token spans what it matched (with the whitespace `lstrip` and
//! `rstrip` took); the ids of a text part span the original bytes their normalized
//! bytes stand for; the prefix space stands for the part's first character.

use super::added::Part;
use super::align::{Align, Aligned};
use super::Front;
use crate::encode::engine::{char_ceil, char_floor, space_ends, token_spans};
use crate::encode::engine::{Engine, Span, Spans, Workspace};
use crate::error::Result;
use crate::specials::Specials;

/// How the bytes of a normalized text stand for the original text.
enum Map<'a> {
    /// Unchanged: each byte is the original's byte `base` further on, standing for
    /// its character.
    Same { original: &'a [u8], base: usize },
    /// Changed: each byte's original range, from `base`.
    Table { align: &'a [Align], base: usize },
}

impl Map<'_> {
    /// The original span of normalized bytes `start..end` (not empty).
    fn span(&self, start: usize, end: usize) -> Span {
        match *self {
            Map::Same { original, base } => (
                char_floor(original, base + start),
                char_ceil(original, base + end),
            ),
            Map::Table { align, base } => {
                let (s, e) = Aligned::original(align, start, end);
                (base + s, base + e)
            }
        }
    }
}

/// Where `part`, a slice of `whole`, starts in it.
fn offset_in(whole: &str, part: &str) -> usize {
    (part.as_ptr() as usize).wrapping_sub(whole.as_ptr() as usize)
}

/// Records an added token that matched `value` (its text in the text it was found in)
/// and spans `span` of the original.
fn push_added(id: u32, value: &str, span: Span, out: &mut Vec<u32>, spans: &mut Spans) {
    let (lead, trail) = space_ends(value);
    spans.ends.push((out.len(), lead, trail));
    spans.spans.push(span);
    out.push(id);
}

impl Front {
    /// [`Front::encode_into`], with each id's byte span in `text` pushed onto `spans`.
    pub(crate) fn encode_spans(
        &self,
        engine: &Engine,
        text: &str,
        allowed: &Specials,
        ws: &mut Workspace,
        out: &mut Vec<u32>,
        spans: &mut Spans,
    ) -> Result<()> {
        let recognise = |id: u32| allowed.ids.contains(&id);
        let any = !allowed.ids.is_empty();
        let original = text.as_bytes();
        self.raw.split(text, recognise, |part| match part {
            Part::Token(id, r) => {
                push_added(id, &text[r.clone()], (r.start, r.end), out, spans);
                Ok(())
            }
            Part::Text(t) => {
                let base = offset_in(text, t);
                match self.normalizer.apply_aligned(t)? {
                    None => {
                        let map = Map::Same { original, base };
                        self.normalized_spans(engine, t, &map, any, ws, out, spans)
                    }
                    Some(a) => {
                        let map = Map::Table {
                            align: &a.align,
                            base,
                        };
                        self.normalized_spans(engine, &a.text, &map, any, ws, out, spans)
                    }
                }
            }
        })
    }

    /// [`Front::normalized_part`] with spans: `text` is normalized, and `map` says
    /// what of the original its bytes stand for.
    #[allow(clippy::too_many_arguments)]
    fn normalized_spans(
        &self,
        engine: &Engine,
        text: &str,
        map: &Map<'_>,
        specials: bool,
        ws: &mut Workspace,
        out: &mut Vec<u32>,
        spans: &mut Spans,
    ) -> Result<()> {
        let recognise = |_: u32| specials;
        self.normalized.split(text, recognise, |part| match part {
            Part::Token(id, r) => {
                push_added(id, &text[r.clone()], map.span(r.start, r.end), out, spans);
                Ok(())
            }
            Part::Text(t) => {
                let at = offset_in(text, t);
                let first = out.len();
                if self.prefix_space && !t.starts_with(' ') {
                    // Byte 0 of the spaced text is the space, which stands for the
                    // part's first character; byte k > 0 is the part's byte k - 1.
                    let spaced = format!(" {t}");
                    engine.encode_into(&spaced, &self.none, ws, out)?;
                    token_spans(
                        &engine.bpe,
                        &out[first..],
                        spaced.len(),
                        &mut spans.spans,
                        |s, e| map.span(at + s.saturating_sub(1), at + (e - 1).max(1)),
                    )
                } else {
                    engine.encode_into(t, &self.none, ws, out)?;
                    token_spans(
                        &engine.bpe,
                        &out[first..],
                        t.len(),
                        &mut spans.spans,
                        |s, e| map.span(at + s, at + e),
                    )
                }
            }
        })
    }
}
