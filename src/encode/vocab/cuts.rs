//! Where a piece may be cut into parts that merge on their own: between two
//! characters that no token of the vocabulary spans.
//!
//! Every part a merge makes is a token whose bytes lie in the piece, so where no token
//! could lie across the border of two characters, no merge ever joins them, and the
//! two sides merge as they would apart (each side's merges come in its own order of
//! rank and position). Runs of CJK letters are single pieces under the Llama 3 and
//! o200k patterns (24-34 bytes on average in the multilingual corpus, a few hundred at
//! most) but few tokens hold two of their characters, so most borders are cuts: the
//! parts are one or two characters, which the engine looks up in its piece cache
//! instead of merging the run byte by byte.
//!
//! A token spans the border of characters `a` and `b` only if it holds, at one of its
//! own character borders (a byte that is not a UTF-8 continuation byte), either the
//! whole of `a` or a tail of it, followed by the whole of `b` or a head of it. The
//! table records each such border of each token as `(a, b)`, where a side the token
//! holds only part of is recorded as just its byte at the border ([`PARTIAL`]), and a
//! border of a piece is a cut only if none of the four records that could describe it
//! is there. The records are bits of a filter: a false "there" only leaves a cut out.

/// Marks a side recorded by its byte at the border, not by its code point.
const PARTIAL: u32 = 1 << 21;

/// Filter bits per record, about: 1 in 32 absent records reads as there.
const BITS_PER_RECORD: usize = 32;

/// The borders of characters that some token spans, as a one-hash bit filter.
#[derive(Debug)]
pub struct Cuts {
    bits: Box<[u64]>,
    /// `64 - log2(bits)`: the hash keeps the top bits of a product.
    shift: u32,
}

/// The character at the start of `bytes`: its code point and length, or `None` where
/// the bytes there are not one well-formed UTF-8 character.
#[inline]
fn char_at(bytes: &[u8]) -> Option<(u32, usize)> {
    let &lead = bytes.first()?;
    let (len, bits) = match lead {
        0..=0x7F => return Some((u32::from(lead), 1)),
        0xC2..=0xDF => (2, lead & 0x1F),
        0xE0..=0xEF => (3, lead & 0x0F),
        0xF0..=0xF4 => (4, lead & 0x07),
        _ => return None,
    };
    let mut code = u32::from(bits);
    for &c in bytes.get(1..len)? {
        if c & 0xC0 != 0x80 {
            return None;
        }
        code = (code << 6) | u32::from(c & 0x3F);
    }
    Some((code, len))
}

#[inline]
fn record(left: u32, right: u32) -> u64 {
    (u64::from(left) << 32) | u64::from(right)
}

#[inline]
fn is_continuation(b: u8) -> bool {
    b & 0xC0 == 0x80
}

impl Cuts {
    /// The table of `tokens` (every token a merge may make, or more).
    ///
    /// Built on the first piece a process cuts, so its time is that call's. The
    /// records go into a set as they are found (o200k: 187K records, 21K distinct)
    /// rather than all into a list that is sorted: o200k's first call with a CJK word,
    /// 12.7-14.5 -> 10.0-13.4 ms (3 fresh processes each, interleaved). The rest is the
    /// walk over the tokens' bytes.
    pub fn new<'a>(tokens: impl Iterator<Item = &'a [u8]>) -> Self {
        let mut records = hashbrown::HashSet::<u64, rustc_hash::FxBuildHasher>::default();
        for t in tokens.filter(|t| !t.is_ascii()) {
            for q in 1..t.len() {
                if is_continuation(t[q]) || (t[q - 1].is_ascii() && t[q].is_ascii()) {
                    continue;
                }
                // The character of `t` that ends at `q`, if `t` holds all of it.
                let from = (q.saturating_sub(4)..q)
                    .rev()
                    .find(|&j| !is_continuation(t[j]));
                let whole = from.and_then(|j| char_at(&t[j..q]).filter(|&(_, n)| j + n == q));
                let left = whole.map_or(PARTIAL | u32::from(t[q - 1]), |(code, _)| code);
                let right = char_at(&t[q..]).map_or(PARTIAL | u32::from(t[q]), |(code, _)| code);
                records.insert(record(left, right));
            }
        }
        let n_bits = (records.len() * BITS_PER_RECORD)
            .next_power_of_two()
            .max(1 << 12);
        let mut cuts = Self {
            bits: vec![0; n_bits / 64].into_boxed_slice(),
            shift: 64 - n_bits.trailing_zeros(),
        };
        for &r in &records {
            let i = cuts.index(r);
            cuts.bits[i / 64] |= 1 << (i % 64);
        }
        cuts
    }

    #[inline]
    fn index(&self, record: u64) -> usize {
        (record.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> self.shift) as usize
    }

    #[inline]
    fn holds(&self, left: u32, right: u32) -> bool {
        let i = self.index(record(left, right));
        self.bits[i / 64] & (1 << (i % 64)) != 0
    }

    /// Whether some token may span the border of character `a` (whose last byte is
    /// `a_last`) and character `b` (whose first byte is `b_lead`).
    #[inline]
    fn spanned(&self, a: u32, a_last: u8, b: u32, b_lead: u8) -> bool {
        let (pa, pb) = (PARTIAL | u32::from(a_last), PARTIAL | u32::from(b_lead));
        self.holds(a, b) || self.holds(pa, b) || self.holds(a, pb) || self.holds(pa, pb)
    }

    /// Appends to `ends` the end of each part of `piece` between cuts, in order (one
    /// end, `piece.len()`, when there is no cut). Only borders of two well-formed
    /// characters, not both ASCII, are cuts (tokens span nearly every border of ASCII
    /// letters, and leaving them out keeps the table small): bytes that are not UTF-8
    /// stay with their neighbours.
    pub fn ends(&self, piece: &[u8], ends: &mut Vec<u32>) {
        let mut at = 0;
        let mut last: Option<(u32, u8)> = None;
        while at < piece.len() {
            let (this, len) = match char_at(&piece[at..]) {
                Some(c) => c,
                None => {
                    last = None;
                    at += 1;
                    continue;
                }
            };
            if let Some((prev, prev_last)) = last {
                let ascii = prev_last.is_ascii() && piece[at].is_ascii();
                if !ascii && !self.spanned(prev, prev_last, this, piece[at]) {
                    ends.push(at as u32);
                }
            }
            at += len;
            last = Some((this, piece[at - 1]));
        }
        ends.push(piece.len() as u32);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts<'p>(cuts: &Cuts, piece: &'p [u8]) -> Vec<&'p [u8]> {
        let mut ends = Vec::new();
        cuts.ends(piece, &mut ends);
        let mut start = 0;
        ends.iter()
            .map(|&e| {
                let part = &piece[start..e as usize];
                start = e as usize;
                part
            })
            .collect()
    }

    #[test]
    fn borders_no_token_spans_are_cuts() {
        let tokens: Vec<&[u8]> = vec!["中国".as_bytes(), b"ab", "é".as_bytes()];
        let cuts = Cuts::new(tokens.iter().copied());
        let s = |t: &'static str| t.as_bytes();
        assert_eq!(parts(&cuts, s("中国人")), [s("中国"), s("人")]);
        assert_eq!(parts(&cuts, s("人中国")), [s("人"), s("中国")]);
        assert_eq!(
            parts(&cuts, s("abc")),
            [s("abc")],
            "ASCII borders are never cut"
        );
        assert_eq!(parts(&cuts, s("éaé")), [s("é"), s("a"), s("é")]);
        assert_eq!(parts(&cuts, s("")), [s("")]);
        assert_eq!(parts(&cuts, s("x")), [s("x")]);
    }

    #[test]
    fn a_token_holding_part_of_a_character_keeps_its_borders() {
        // The tail byte of "中" (0xAD) then "国": every character ending in 0xAD
        // stays joined to "国"; the head byte of "国" (0xE5) after "人": every
        // character starting 0xE5 stays joined to "人".
        let zhong = "中".as_bytes();
        let guo = "国".as_bytes();
        let tail: Vec<u8> = [&zhong[2..], guo].concat();
        let head: Vec<u8> = ["人".as_bytes(), &guo[..1]].concat();
        let cuts = Cuts::new([tail.as_slice(), head.as_slice()].into_iter());
        let s = |t: &'static str| t.as_bytes();
        assert_eq!(parts(&cuts, s("中国")), [s("中国")]);
        assert_eq!(parts(&cuts, s("人国")), [s("人国")]);
        assert_eq!(parts(&cuts, s("人中")), [s("人"), s("中")]);
        assert_eq!(parts(&cuts, s("国中")), [s("国"), s("中")]);
        // A byte token of a character's head alone spans no border.
        let cuts = Cuts::new([&guo[..2]].into_iter());
        assert_eq!(parts(&cuts, s("国国")), [s("国"), s("国")]);
    }

    #[test]
    fn bytes_that_are_not_utf8_are_never_cut_from_their_neighbours() {
        let cuts = Cuts::new(std::iter::empty());
        let piece = b"a\xffb\xe4\xb8c";
        assert_eq!(parts(&cuts, piece), [&b"a\xffb\xe4\xb8c"[..]]);
        assert_eq!(
            parts(&cuts, b"\xc3\xa9b\xff"),
            [&b"\xc3\xa9"[..], &b"b\xff"[..]]
        );
    }

    use crate::testutil::Rng;

    type Pair = (Vec<u8>, Vec<u8>);

    /// Merges learned from `corpus` as BPE training learns them (the most frequent
    /// adjacent pair of the words' parts, first seen on a tie), so that tokens hold
    /// whole characters, parts of them, and pairs across their borders.
    fn trained(words: &[Vec<u8>], n_merges: usize) -> (Vec<(u32, Vec<u8>)>, Vec<Pair>) {
        let mut parts: Vec<Vec<Vec<u8>>> = words
            .iter()
            .map(|w| w.iter().map(|&b| vec![b]).collect())
            .collect();
        let mut vocab: Vec<(u32, Vec<u8>)> = (0..=255u8).map(|b| (u32::from(b), vec![b])).collect();
        let mut merges = Vec::new();
        while merges.len() < n_merges {
            let mut counts: Vec<(Pair, usize)> = Vec::new();
            for w in &parts {
                for pair in w.windows(2) {
                    let key = (pair[0].clone(), pair[1].clone());
                    match counts.iter_mut().find(|(k, _)| *k == key) {
                        Some((_, n)) => *n += 1,
                        None => counts.push((key, 1)),
                    }
                }
            }
            let Some(best) = counts
                .iter()
                .max_by_key(|(_, n)| *n)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            let joined = [best.0.as_slice(), best.1.as_slice()].concat();
            for w in &mut parts {
                let mut i = 0;
                while i + 1 < w.len() {
                    if w[i] == best.0 && w[i + 1] == best.1 {
                        w[i] = joined.clone();
                        w.remove(i + 1);
                    }
                    i += 1;
                }
            }
            vocab.push((vocab.len() as u32, joined));
            merges.push(best);
        }
        (vocab, merges)
    }

    #[test]
    fn parts_merge_as_the_whole_piece_does() {
        use super::super::{merge_piece, Bpe, Scratch};
        use crate::ids::NONE;
        let alphabet = [
            "a",
            "b",
            "\u{e9}",
            "\u{4e2d}",
            "\u{56fd}",
            "\u{4eba}",
            "\u{1f600}",
            "\u{436}",
        ];
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let word = |rng: &mut Rng, max: usize| -> Vec<u8> {
            let n = 1 + rng.below(max);
            (0..n)
                .flat_map(|_| alphabet[rng.below(alphabet.len())].as_bytes().to_vec())
                .collect()
        };
        let (mut pieces, mut cut_pieces) = (0, 0);
        for round in 0..12 {
            let corpus: Vec<Vec<u8>> = (0..150).map(|_| word(&mut rng, 6)).collect();
            let (mut vocab, mut merges) = trained(&corpus, 20 + 10 * round);
            // Then merges of any two tokens whose bytes lie together in the corpus,
            // such as the last byte of one character with the first of the next:
            // training on whole characters rarely makes those.
            let text = corpus.concat();
            let mut tries = 0;
            while merges.len() < 40 + 15 * round && tries < 100_000 {
                tries += 1;
                let a = vocab[rng.below(vocab.len())].1.clone();
                let b = vocab[rng.below(vocab.len())].1.clone();
                let joined = [a.as_slice(), b.as_slice()].concat();
                let known = vocab.iter().any(|(_, t)| *t == joined);
                if known || !text.windows(joined.len()).any(|w| w == joined) {
                    continue;
                }
                vocab.push((vocab.len() as u32, joined));
                merges.push((a, b));
            }
            // In a random order that keeps each merge after those of its two sides, so
            // that a merge across characters may come before those inside them.
            let mut made: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
            let mut ordered = Vec::new();
            while !merges.is_empty() {
                let ready: Vec<usize> = (0..merges.len())
                    .filter(|&i| made.contains(&merges[i].0) && made.contains(&merges[i].1))
                    .collect();
                let (a, b) = merges.swap_remove(ready[rng.below(ready.len())]);
                made.push([a.as_slice(), b.as_slice()].concat());
                ordered.push((a, b));
            }
            let bpe = Bpe::from_merges(vocab, &ordered).unwrap();
            let cuts = bpe.cuts().unwrap();
            let mut s = Scratch::default();
            for _ in 0..200 {
                let piece = word(&mut rng, 40);
                let mut whole = Vec::new();
                merge_piece(&bpe, &piece, NONE, &mut s, &mut whole).unwrap();
                let mut by_parts = Vec::new();
                let mut ends = Vec::new();
                cuts.ends(&piece, &mut ends);
                let mut start = 0;
                for &end in &ends {
                    merge_piece(
                        &bpe,
                        &piece[start..end as usize],
                        NONE,
                        &mut s,
                        &mut by_parts,
                    )
                    .unwrap();
                    start = end as usize;
                }
                let show = String::from_utf8_lossy(&piece);
                assert_eq!(
                    by_parts, whole,
                    "round {round}, piece {show}, ends {ends:?}"
                );
                pieces += 1;
                cut_pieces += usize::from(ends.len() > 1);
            }
        }
        // The property is tested on pieces that were cut, most of them.
        assert!(
            cut_pieces * 2 > pieces,
            "{cut_pieces} of {pieces} pieces cut"
        );
    }
}
