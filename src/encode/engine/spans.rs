//! Offsets: where each id of a text came from. The ids are made by the same loop as
//! `encode`'s; their byte spans come after, from the tokens' lengths (the ids of a
//! text's pieces spell its bytes in order), so plain encoding pays nothing for them.
//! Then byte spans -> character offsets, and `tokenizers`' `trim_offsets`.
//!
//! The rule, `tokenizers`' for byte-level BPE: a token spans the characters its bytes
//! touch, so two tokens that share a character's bytes both span all of it.

use std::sync::OnceLock;

use crate::encode::vocab::Bpe;
use crate::error::{Error, Result};

/// A byte (or character) range of the original text, `[start, end]`: an array, so
/// that a vector of them is one of numbers too, handed to numpy without a copy.
pub(crate) type Span = [usize; 2];

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

/// What offsets read of each token, by id, made on the first offsets asked for: in
/// a `u16`, its length in bytes (bits 0-6; 127: read the token itself), the characters
/// that start in it (bits 7-13) and whether it starts inside a character (bit 14);
/// apart, for `trim_offsets`, the spaces it starts and ends with (a byte each; 255:
/// read the token).
///
/// Why: the vocabulary's 16-byte entries of a 100K-token vocabulary miss the cache,
/// and reading each id's length there was ~60% of the spans' time (perf, OLMo 2,
/// en-small documents); counting each span's characters in the text was ~20% more
/// (o200k_base, ml). Two bytes an id mostly stay in the cache (four missed twice as
/// often: o200k_base's 200K ids), and the characters come without reading the text.
#[derive(Debug, Default)]
pub(crate) struct TokenLens {
    cuts: OnceLock<Box<[u16]>>,
    spaces: OnceLock<Box<[[u8; 2]]>>,
}

/// A token's cut entry, or 127 (read the token) where it is too long.
fn pack(bytes: &[u8]) -> u16 {
    if bytes.is_empty() || bytes.len() >= 127 {
        return 127;
    }
    let starts = bytes.iter().filter(|&&b| starts_char(b)).count() as u16;
    let inside = bytes.first().is_some_and(|&b| !starts_char(b));
    bytes.len() as u16 | starts << 7 | u16::from(inside) << 14
}

/// The spaces `trim_offsets` counts at the ends of token `id`: its bytes' spaces (a
/// byte-level token's `Ġ`), or in a vocabulary of characters the whitespace
/// characters of its text, as `tokenizers` counts them in the token's string.
fn token_spaces(bpe: &Bpe, id: u32) -> (usize, usize) {
    let bytes = bpe.token(id).unwrap_or_default();
    match bpe.chars() {
        Some(_) => space_ends(&String::from_utf8_lossy(bytes)),
        None => space_bytes(bytes),
    }
}

/// The spaces a token's bytes start and end with.
fn space_bytes(bytes: &[u8]) -> (usize, usize) {
    let lead = bytes.iter().take_while(|&&b| b == b' ').count();
    let trail = bytes.iter().rev().take_while(|&&b| b == b' ').count();
    (lead, trail)
}

impl TokenLens {
    fn cuts<'a>(&'a self, bpe: &Bpe) -> &'a [u16] {
        self.cuts.get_or_init(|| {
            (0..bpe.id_limit())
                .map(|id| bpe.token(id as u32).map_or(127, pack))
                .collect()
        })
    }

    /// Token `id`'s leading and trailing spaces.
    fn spaces(&self, bpe: &Bpe, id: u32) -> (usize, usize) {
        let table = self.spaces.get_or_init(|| {
            (0..bpe.id_limit())
                .map(|id| {
                    let (l, t) = token_spaces(bpe, id as u32);
                    [l.min(255) as u8, t.min(255) as u8]
                })
                .collect()
        });
        match table.get(id as usize) {
            Some(&[l, t]) if l != 255 && t != 255 => (usize::from(l), usize::from(t)),
            _ => token_spaces(bpe, id),
        }
    }
}

/// A token's place in the text its run of ids spells: its bytes `start..end`, and
/// the characters it touches, `first..last` (from the one holding byte `start` to the
/// end of the one holding byte `end - 1`), counted from the text's start.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Cut {
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) first: usize,
    pub(crate) last: usize,
}

/// Pushes onto `spans` the span of each of `ids` in their text, which is `len` bytes
/// long and spelled by their tokens' bytes one after another, as `map` makes it of
/// the token's [`Cut`]. A length that does not add up is an error, never a wrong
/// offset.
///
/// Why one `extend` of a mapped slice: the vector's length then stays in a register
/// and is stored once (a `push` a token stored it and checked the capacity each time),
/// and the loop carries only the two running counts. `encode_with_offsets_to_numpy`
/// went from 1.29-1.30x plain `encode_to_numpy`'s thread CPU time to 1.22-1.25x (OLMo
/// 2, en-small documents of ~2 KB, one thread). Prefetching the table's entries 16 ids
/// ahead took more samples in this loop (706 against 589), not fewer: its loads of
/// many ids are in flight at once already.
pub(crate) fn token_spans(
    bpe: &Bpe,
    lens: &TokenLens,
    ids: &[u32],
    len: usize,
    spans: &mut Vec<Span>,
    mut map: impl FnMut(Cut) -> Span,
) -> Result<()> {
    spans
        .try_reserve(ids.len())
        .map_err(|_| Error::out_of_memory::<Span>("offsets", spans.len() + ids.len()))?;
    let table = lens.cuts(bpe);
    let (mut at, mut chars) = (0, 0);
    let mut unknown = None;
    spans.extend(ids.iter().map(|&id| {
        let p = table.get(id as usize).copied().unwrap_or(127);
        let (n, starts, inside) = match p & 127 {
            127 => long_cut(bpe, id).unwrap_or_else(|| {
                unknown = Some(id);
                (0, 0, false)
            }),
            n => (usize::from(n), usize::from(p >> 7 & 127), p >> 14 & 1 == 1),
        };
        let first = chars - usize::from(inside && chars > 0);
        let span = map(Cut {
            start: at,
            end: at + n,
            first,
            last: chars + starts,
        });
        at += n;
        chars += starts;
        span
    }));
    if let Some(id) = unknown {
        return Err(Error::UnknownTokenId { id });
    }
    if at != len {
        return Err(Error::invalid(format!(
            "offsets: the tokens' bytes add up to {at} bytes, the text has {len}"
        )));
    }
    Ok(())
}

/// A token's cut read from its bytes (one too long for the table), or `None` for an
/// id the vocabulary lacks.
#[cold]
#[inline(never)]
fn long_cut(bpe: &Bpe, id: u32) -> Option<(usize, usize, bool)> {
    let bytes = bpe.token(id)?;
    Some((
        bytes.len(),
        bytes.iter().filter(|&&b| starts_char(b)).count(),
        bytes.first().is_some_and(|&b| !starts_char(b)),
    ))
}

/// Byte offsets of a text -> character offsets, for offsets that mostly go forward:
/// characters are counted from the last offset asked, not from the start.
pub(crate) struct Chars<'t> {
    text: &'t [u8],
    byte: usize,
    chars: usize,
}

impl<'t> Chars<'t> {
    pub(crate) fn new(text: &'t str) -> Self {
        Self {
            text: text.as_bytes(),
            byte: 0,
            chars: 0,
        }
    }

    /// The characters before byte `b` (a character's first byte, or the end).
    pub(crate) fn at(&mut self, b: usize) -> usize {
        let count = |r: &[u8]| r.iter().filter(|&&x| starts_char(x)).count();
        if b >= self.byte {
            self.chars += count(self.text.get(self.byte..b).unwrap_or_default());
        } else {
            self.chars -= count(self.text.get(b..self.byte).unwrap_or_default());
        }
        self.byte = b;
        self.chars
    }

    /// The character span of byte span `span`.
    pub(crate) fn span(&mut self, span: Span) -> Span {
        [self.at(span[0]), self.at(span[1])]
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
pub(crate) fn trim(bpe: &Bpe, lens: &TokenLens, ids: &[u32], spans: &mut Spans, how: Trim) {
    let mut ends = spans.ends.iter().peekable();
    for (i, (span, &id)) in spans.spans.iter_mut().zip(ids).enumerate() {
        let (mut lead, trail) = match ends.next_if(|e| e.0 == i) {
            Some(&(_, l, t)) => (l, t),
            None => lens.spaces(bpe, id),
        };
        if lead > 0 {
            let first = i + how.first_index == 0 || span[0] == 0;
            if first && how.prefix_space && lead == 1 {
                lead = 0;
            }
            span[0] = (span[0] + lead).min(span[1]);
        }
        if trail > 0 && span[1] >= trail {
            span[1] = (span[1] - trail).max(span[0]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn characters_are_counted_both_ways() {
        let mut chars = Chars::new("aé😀b");
        let spans = [[0, 1], [1, 3], [3, 7], [1, 7], [7, 8], [0, 8]].map(|s| chars.span(s));
        assert_eq!(spans, [[0, 1], [1, 2], [2, 3], [1, 3], [3, 4], [0, 4]]);
        let bytes = "é😀".as_bytes();
        let (ascii, inside) = (pack(b"  a "), pack(&bytes[1..5]));
        assert_eq!((ascii & 127, ascii >> 7 & 127, ascii >> 14), (4, 4, 0));
        assert_eq!((inside & 127, inside >> 7 & 127, inside >> 14), (4, 1, 1));
        assert_eq!(pack(&[b' '; 130]), 127);
        assert_eq!(space_bytes(b"  a "), (2, 1));
        assert_eq!(
            (char_floor(b"a\xc3\xa9", 2), char_ceil(b"a\xc3\xa9", 2)),
            (1, 3)
        );
        assert_eq!(space_ends(" \u{120}a  "), (2, 2));
    }
}
