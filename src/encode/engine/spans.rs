//! Offsets: where each id of a text came from. The ids are made by the same loop as
//! `encode`'s; their byte spans come after, from the tokens' lengths (the ids of a
//! text's pieces spell its bytes in order), so plain encoding pays nothing for them.
//! Then byte spans -> character offsets, and `tokenizers`' `trim_offsets`.
//!
//! The rule, `tokenizers`' for byte-level BPE: a token spans the characters its bytes
//! touch, so two tokens that share a character's bytes both span all of it.

use crate::encode::vocab::Bpe;
use crate::error::{Error, Result};

/// A byte (or character) range of the original text.
pub(crate) type Span = (usize, usize);

/// Offsets as they are collected: a span per id, and for the ids whose text is not
/// their token's bytes (added tokens) the whitespace characters at either end of the
/// text they matched, which `trim_offsets` reads.
#[derive(Debug, Default)]
pub(crate) struct Spans {
    pub(crate) spans: Vec<Span>,
    /// `(index of the id, leading, trailing)`, by index.
    pub(crate) ends: Vec<(usize, usize, usize)>,
}

/// `tokenizers`' `ByteLevel` post-processor with `trim_offsets`: each span loses the
/// spaces its token starts and ends with.
#[derive(Clone, Copy, Debug, Default)]
pub struct Trim {
    /// The processor's `add_prefix_space`: the first token keeps one leading space.
    pub prefix_space: bool,
    /// The index of the text's first id in the whole encoding (after a BOS that a
    /// template before the processor adds, 1).
    pub first_index: usize,
}

/// Whether byte `b` starts a character.
#[inline(always)]
fn starts_char(b: u8) -> bool {
    (b as i8) >= -0x40
}

/// The start of the character holding byte `i` of `text`.
pub(crate) fn char_floor(text: &[u8], mut i: usize) -> usize {
    while i > 0 && text.get(i).is_some_and(|&b| !starts_char(b)) {
        i -= 1;
    }
    i
}

/// The end of the character holding byte `i - 1` of `text`.
pub(crate) fn char_ceil(text: &[u8], mut i: usize) -> usize {
    while text.get(i).is_some_and(|&b| !starts_char(b)) {
        i += 1;
    }
    i
}

/// Pushes onto `spans` the span of each of `ids` in their text, which is `len` bytes
/// long and spelled by their tokens' bytes one after another, as `map` makes it of
/// the token's range in that text. A length that does not add up is an error, never a
/// wrong offset.
pub(crate) fn token_spans(
    bpe: &Bpe,
    ids: &[u32],
    len: usize,
    spans: &mut Vec<Span>,
    mut map: impl FnMut(usize, usize) -> Span,
) -> Result<()> {
    spans
        .try_reserve(ids.len())
        .map_err(|_| Error::out_of_memory::<Span>("offsets", spans.len() + ids.len()))?;
    let mut at = 0;
    for &id in ids {
        let n = bpe.token(id).ok_or(Error::UnknownTokenId { id })?.len();
        spans.push(map(at, at + n));
        at += n;
    }
    if at != len {
        return Err(Error::invalid(format!(
            "offsets: the tokens' bytes add up to {at} bytes, the text has {len}"
        )));
    }
    Ok(())
}

/// Byte offsets of `text` -> character offsets, for offsets that mostly go forward:
/// characters are counted from the last offset asked, not from the start.
struct CharCount<'t> {
    text: &'t [u8],
    byte: usize,
    chars: usize,
}

impl CharCount<'_> {
    /// The characters before byte `b` (a character's first byte, or the end).
    fn at(&mut self, b: usize) -> usize {
        let count = |r: &[u8]| r.iter().filter(|&&x| starts_char(x)).count();
        if b >= self.byte {
            self.chars += count(self.text.get(self.byte..b).unwrap_or_default());
        } else {
            self.chars -= count(self.text.get(b..self.byte).unwrap_or_default());
        }
        self.byte = b;
        self.chars
    }
}

/// `spans`, byte offsets of `text`, made character offsets (code points).
pub(crate) fn to_chars(text: &str, spans: &mut [Span]) {
    if text.is_ascii() {
        return;
    }
    let mut count = CharCount {
        text: text.as_bytes(),
        byte: 0,
        chars: 0,
    };
    for span in spans {
        *span = (count.at(span.0), count.at(span.1));
    }
}

/// Spaces (byte-level's `Ġ` and whitespace) at the start and the end of `text`, in
/// characters, as `trim_offsets` counts them.
pub(crate) fn space_ends(text: &str) -> (usize, usize) {
    let space = |c: &char| *c == '\u{120}' || c.is_whitespace();
    let lead = text.chars().take_while(space).count();
    let trail = text.chars().rev().take_while(space).count();
    (lead, trail)
}

/// `trim_offsets` on character spans: `ByteLevel`'s `process_offsets`, with each
/// token's spaces counted in its bytes (a byte-level token's `Ġ` is a space byte) or,
/// for an added token, in the text it matched (`ends`).
pub(crate) fn trim(bpe: &Bpe, ids: &[u32], spans: &mut Spans, how: Trim) {
    let mut ends = spans.ends.iter().peekable();
    for (i, (span, &id)) in spans.spans.iter_mut().zip(ids).enumerate() {
        let (mut lead, trail) = match ends.next_if(|e| e.0 == i) {
            Some(&(_, l, t)) => (l, t),
            None => {
                let bytes = bpe.token(id).unwrap_or_default();
                let lead = bytes.iter().take_while(|&&b| b == b' ').count();
                let trail = bytes.iter().rev().take_while(|&&b| b == b' ').count();
                (lead, trail)
            }
        };
        if lead > 0 {
            let first = i + how.first_index == 0 || span.0 == 0;
            if first && how.prefix_space && lead == 1 {
                lead = 0;
            }
            span.0 = (span.0 + lead).min(span.1);
        }
        if trail > 0 && span.1 >= trail {
            span.1 = (span.1 - trail).max(span.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn characters_are_counted_both_ways() {
        let text = "aé😀b";
        let mut spans = vec![(0, 1), (1, 3), (3, 7), (1, 7), (7, 8), (0, 8)];
        to_chars(text, &mut spans);
        assert_eq!(spans, [(0, 1), (1, 2), (2, 3), (1, 3), (3, 4), (0, 4)]);
        assert_eq!(
            (char_floor(b"a\xc3\xa9", 2), char_ceil(b"a\xc3\xa9", 2)),
            (1, 3)
        );
        assert_eq!(space_ends(" \u{120}a  "), (2, 2));
    }
}
