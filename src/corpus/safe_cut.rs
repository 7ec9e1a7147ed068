//! Safe cuts: places where a text may be split in two, each part split on its special
//! tokens and pre-tokenized on its own, with exactly the segments and pieces of the
//! whole. Files are cut forward into chunks ([`next_cut`]); a stream is cut backward,
//! before the last place that later text cannot change ([`last_cut`]). Both search for
//! the same places.
//!
//! `p` (`0 < p < len`) is a safe cut of `data` for the pattern `kind` and the special
//! tokens `specials` when
//!
//! 1. an occurrence of a special token begins at `p`, or `p` is a line cut of `kind`
//!    ([`crate::pretokenize::line_cut`]), where for gpt2 a cut before a newline also asks
//!    that no special token may begin just after it ([`Rule::special_may_begin`]);
//! 2. no occurrence of a special token covers `p` ([`SpecialMatcher::covers`]): then
//!    leftmost-longest matching reaches `p` in the same state from any start, so the
//!    matches of the whole are those of the parts, and one that begins at `p` is a
//!    match. (A weaker condition would do where tokens overlap: none of the *matches*
//!    covers `p`. But which occurrences are matches depends on everything before `p`,
//!    and a file is cut without reading all of it.)
//! 3. the bytes within the longest special token of `p` are valid UTF-8. Special tokens
//!    are matched on raw bytes here, but under `errors="ignore"` invalid bytes vanish in
//!    decoding and can join two halves into a special token ("a\xff\nb" holds "a\nb").
//!    Text that is a `str` always passes.
//!
//! Each condition reads only the bytes within about the longest special token of `p`,
//! whatever the number of tokens.

use std::ops::Range;

use crate::pretokenize::{line_cut, Kind};
use crate::specials::SpecialMatcher;

/// The stretch that a search reads at a time: it stops at the first window that holds
/// a cut, so successive calls read disjoint stretches.
const WINDOW: usize = 64 << 10;

/// The first safe cut at or after `from` (and before the end), if any.
///
/// ```text
/// o200k, no special tokens: next_cut(b"ab\ncd", 1) == Some(3)
/// ```
pub(super) fn next_cut(
    data: &[u8],
    specials: &SpecialMatcher,
    from: usize,
    kind: Kind,
) -> Option<usize> {
    let rule = Rule::new(data, kind, specials);
    let mut at = from.max(1);
    while at < data.len() {
        let end = (at + WINDOW).min(data.len());
        let newline = rule
            .line_cuts(at - 1..end)
            .find(|&p| p >= at && rule.is_safe(p));
        // Only the stretch before the line cut can hold an earlier special token:
        // searching the whole window for each cut took ~6 ms of a 116 MB file's setup,
        // before any encoding.
        let limit = newline.unwrap_or(end);
        let special = rule.special_starts(at..limit).find(|&s| rule.is_safe(s));
        match special.or(newline) {
            Some(cut) => return Some(cut),
            None => at = end,
        }
    }
    None
}

/// The last safe cut of `data` at or before `limit`, or 0 where there is none.
/// Allocates nothing; reads a window at a time from `limit` back, and stops at the
/// first window that holds a cut.
///
/// `data` may be the start of a longer text (a stream's buffer): then `limit` must be
/// at most `data.len()` minus the longest special token the text may hold, so that no
/// later byte can change a match that begins at or before it, and the cut is a safe
/// cut of every text that starts with `data`. (The rule reads up to the longest token
/// past a cut; where that runs past `data`, it assumes a special token may begin.)
///
/// ```text
/// cl100k, "<|e|>": last_cut(b"ab\ncd<|e|>ef\ngh", 12) == 5    (the "\ngh" cut, 13, is past 12)
/// ```
pub(crate) fn last_cut(data: &[u8], limit: usize, kind: Kind, specials: &SpecialMatcher) -> usize {
    let rule = Rule::new(data, kind, specials);
    let mut hi = limit.min(data.len());
    while hi > 0 {
        let lo = hi.saturating_sub(WINDOW);
        // Cuts in `lo + 1..=hi`: line cuts (at a newline or just after it) from the
        // newlines in `lo..=hi`, the last first, then special-token starts after it.
        let newline = rule
            .line_cuts(lo..(hi + 1).min(data.len()))
            .rev()
            .find(|&p| lo < p && p <= hi && rule.is_safe(p));
        let special = rule
            .special_starts(newline.unwrap_or(lo) + 1..hi + 1)
            .filter(|&s| rule.is_safe(s))
            .last();
        match special.or(newline) {
            Some(cut) => return cut,
            None => hi = lo,
        }
    }
    0
}

/// The safe-cut rule (see the module docs) for one text.
struct Rule<'a> {
    data: &'a [u8],
    kind: Kind,
    specials: &'a SpecialMatcher,
    /// The longest special token's length.
    margin: usize,
}

impl<'a> Rule<'a> {
    fn new(data: &'a [u8], kind: Kind, specials: &'a SpecialMatcher) -> Self {
        Self {
            data,
            kind,
            specials,
            margin: specials.max_len(),
        }
    }

    /// Conditions 2 and 3 at `p`.
    fn is_safe(&self, p: usize) -> bool {
        !self.specials.covers(self.data, p) && self.valid_near(p)
    }

    /// The line cuts of the newlines in `newlines` (a range of positions), in order.
    fn line_cuts(&self, newlines: Range<usize>) -> impl DoubleEndedIterator<Item = usize> + '_ {
        // A custom pattern has no line cuts.
        let newlines = match self.kind {
            Kind::Custom => 0..0,
            _ => newlines,
        };
        let start = newlines.start;
        memchr::memchr_iter(b'\n', &self.data[newlines]).filter_map(move |i| {
            line_cut::cut_at_newline(self.data, start + i, self.kind, |x| {
                self.special_may_begin(x)
            })
        })
    }

    /// The starts in `starts` of the leftmost-longest matches found from its start: a
    /// superset of the starts there that no occurrence covers (a match that covered one
    /// would be such an occurrence), so every start that passes condition 2.
    fn special_starts(&self, starts: Range<usize>) -> impl Iterator<Item = usize> + '_ {
        let end = (starts.end + self.margin).min(self.data.len());
        let (from, to) = (starts.start, starts.end);
        let bytes = self.data.get(from..end).unwrap_or_default();
        self.specials
            .find_iter(bytes)
            .map(move |(s, _, _)| from + s)
            .take_while(move |&s| s < to)
    }

    /// Whether a special token may begin at `x` once the text is decoded: where the
    /// longest token's length of bytes from `x` is in `data` and valid UTF-8, whether an
    /// occurrence begins there; elsewhere, whether a token's first byte is there, since
    /// invalid bytes that vanish, or text that follows `data`, may complete one.
    fn special_may_begin(&self, x: usize) -> bool {
        if self.margin == 0 {
            return false;
        }
        let end = x + self.margin;
        if end <= self.data.len() && self.valid(x, end) {
            self.specials.starts_at(self.data, x)
        } else {
            self.data
                .get(x)
                .is_some_and(|&b| self.specials.is_first_byte(b))
        }
    }

    /// Whether the bytes within `margin` (the longest special token) of `p` are valid
    /// UTF-8.
    fn valid_near(&self, p: usize) -> bool {
        self.margin == 0 || self.valid(p.saturating_sub(self.margin), p + self.margin)
    }

    /// Whether the bytes `lo..hi`, widened to whole characters (at most 3 continuation
    /// bytes each way) and clipped to `data`, are valid UTF-8.
    fn valid(&self, lo: usize, hi: usize) -> bool {
        let data = self.data;
        let is_continuation = |b: u8| b & 0xc0 == 0x80;
        let (mut lo, mut hi) = (lo.min(data.len()), hi.min(data.len()));
        for _ in 0..3 {
            if lo > 0 && is_continuation(data[lo]) {
                lo -= 1;
            }
            if hi < data.len() && is_continuation(data[hi]) {
                hi += 1;
            }
        }
        std::str::from_utf8(&data[lo..hi]).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pretokenize::Pretokenizer;
    use crate::specials::Segment;
    use crate::testutil::Rng;

    /// A piece of the segmentation of a text: a pre-token, or a special token.
    #[derive(Debug, PartialEq, Eq)]
    enum Piece<'t> {
        Text(&'t str),
        Special(usize),
    }

    /// The special-token segments and pre-tokens of `text`, in order.
    fn pieces<'t>(
        text: &'t str,
        specials: &SpecialMatcher,
        pretokenizer: &Pretokenizer,
    ) -> Vec<Piece<'t>> {
        let mut out = Vec::new();
        specials.split(text, |segment| match segment {
            Segment::Text(t) => pretokenizer
                .for_each_piece(t, |p| out.push(Piece::Text(p)))
                .unwrap(),
            Segment::Special(i) => out.push(Piece::Special(i)),
        });
        out
    }

    /// The rule's cuts, found one position at a time.
    fn safe_cuts(data: &[u8], kind: Kind, specials: &SpecialMatcher) -> Vec<usize> {
        let rule = Rule::new(data, kind, specials);
        let mut line = vec![false; data.len() + 1];
        for p in rule.line_cuts(0..data.len()) {
            line[p] = true;
        }
        (1..data.len())
            .filter(|&p| (line[p] || specials.starts_at(data, p)) && rule.is_safe(p))
            .collect()
    }

    const FRAGMENTS: [&str; 25] = [
        "a",
        "Zé",
        "中",
        "}",
        ".",
        "/",
        "'s",
        "12",
        "😀",
        " ",
        "\t",
        "\n",
        "\n",
        "\r\n",
        " \n",
        "\n\n",
        "<|a|>",
        "<|a|>",
        "<|a|><|a|>",
        "b\nc",
        "x<",
        "|b|>",
        "<|endoftext|>",
        "<|endo",
        "ftext|>",
    ];

    /// Overlapping tokens, a token with a newline, the longest one with no prefix that
    /// is a token; and with a token of one byte.
    fn matchers() -> [SpecialMatcher; 2] {
        let tokens = ["<|a|>", "<|a|><|a|>", "b\nc", "<|b|>", "<|endoftext|>", "<"];
        let tokens = tokens.map(String::from);
        [&tokens[..5], &tokens[..]].map(|t| SpecialMatcher::new(t).unwrap())
    }

    fn random_text(rng: &mut Rng) -> String {
        (0..rng.below(40))
            .map(|_| FRAGMENTS[rng.below(FRAGMENTS.len())])
            .collect()
    }

    const KINDS: [(Kind, &str); 4] = [
        (Kind::Gpt2, "gpt2"),
        (Kind::Cl100k, "cl100k"),
        (Kind::O200k, "o200k"),
        (Kind::Custom, r"\p{L}+|\s+|[^\s\p{L}]+"),
    ];

    /// Every cut either search returns leaves the pieces of the whole text, and for a
    /// stream's buffer, of every text that starts with it; the searches return the
    /// first and the last of the rule's cuts.
    #[test]
    fn every_cut_keeps_the_pieces_of_the_whole() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        for ((kind, pattern), specials) in
            KINDS.into_iter().flat_map(|k| matchers().map(|m| (k, m)))
        {
            let max = specials.max_len();
            let pretokenizer = Pretokenizer::new(pattern).unwrap();
            assert_eq!(pretokenizer.kind(), kind);
            for _ in 0..300 {
                let text = random_text(&mut rng);
                let whole = pieces(&text, &specials, &pretokenizer);
                let split_at = |cut: usize| {
                    let mut got = pieces(&text[..cut], &specials, &pretokenizer);
                    got.extend(pieces(&text[cut..], &specials, &pretokenizer));
                    assert_eq!(got, whole, "{kind:?} {text:?} cut at {cut}");
                };
                let all = safe_cuts(text.as_bytes(), kind, &specials);
                for &cut in &all {
                    split_at(cut);
                }
                for from in 0..=text.len() {
                    let want = all.iter().copied().find(|&p| p >= from.max(1));
                    assert_eq!(next_cut(text.as_bytes(), &specials, from, kind), want);
                }
                for n in (0..=text.len()).filter(|&n| text.is_char_boundary(n)) {
                    let buf = &text.as_bytes()[..n];
                    let limit = n.saturating_sub(max);
                    let cut = last_cut(buf, limit, kind, &specials);
                    assert!(cut <= limit);
                    if cut > 0 {
                        split_at(cut);
                    }
                    // The last of the rule's cuts of the buffer (near its end, the rule
                    // assumes that a '<' may begin a special token).
                    let mine = safe_cuts(buf, kind, &specials);
                    let last = mine.iter().copied().rfind(|&p| p <= limit);
                    assert_eq!(cut, last.unwrap_or(0), "{kind:?} {text:?} {n}");
                }
            }
        }
    }

    /// Files may hold invalid UTF-8, which decoding replaces or drops: every cut of a
    /// file leaves the pieces of the whole decoded text either way.
    #[test]
    fn file_cuts_keep_the_pieces_under_replace_and_ignore() {
        const BYTES: [&[u8]; 14] = [
            b"<|endoftext|",
            b"\xff>",
            b"a",
            b"\xff",
            b"\xe2\x82",
            b"\n",
            b" \n",
            b"\r\n",
            b"<|endo",
            b"\xfftext|>",
            b"<|a|>",
            b"b\xff\nc",
            "é".as_bytes(),
            b"/",
        ];
        let decoders: [fn(&[u8]) -> String; 2] = [
            |b| String::from_utf8_lossy(b).into_owned(),
            super::super::utf8::decode_ignoring_errors,
        ];
        let mut rng = Rng(0x0bad_5eed_1234_5678);
        for ((kind, pattern), specials) in
            KINDS.into_iter().flat_map(|k| matchers().map(|m| (k, m)))
        {
            let pretokenizer = Pretokenizer::new(pattern).unwrap();
            for _ in 0..600 {
                let raw: Vec<u8> = (0..rng.below(30))
                    .flat_map(|_| BYTES[rng.below(BYTES.len())].iter().copied())
                    .collect();
                let ranges = crate::corpus::chunk_ranges(&raw, &specials, 1, kind);
                for decode in decoders {
                    let whole = decode(&raw);
                    let want = pieces(&whole, &specials, &pretokenizer);
                    let parts: Vec<String> =
                        ranges.iter().map(|r| decode(&raw[r.clone()])).collect();
                    let got: Vec<Piece> = parts
                        .iter()
                        .flat_map(|t| pieces(t, &specials, &pretokenizer))
                        .collect();
                    assert_eq!(got, want, "{kind:?} {raw:?} {ranges:?}");
                }
            }
        }
    }

    #[test]
    fn cuts_of_a_stream_buffer() {
        let specials = SpecialMatcher::new(&["<|e|>".to_string()]).unwrap();
        let text = b"ab\ncd<|e|>ef\ngh";
        assert_eq!(last_cut(text, 12, Kind::Cl100k, &specials), 5);
        assert_eq!(last_cut(text, 13, Kind::Cl100k, &specials), 13);
        assert_eq!(last_cut(text, 4, Kind::Cl100k, &specials), 3);
        assert_eq!(last_cut(text, 2, Kind::Cl100k, &specials), 0);
        assert_eq!(last_cut(text, 12, Kind::Gpt2, &specials), 12);
        assert_eq!(last_cut(text, 12, Kind::Custom, &specials), 5);
        // Right before a special token gpt2 makes no line cut: the document ends there.
        assert_eq!(last_cut(b"a\n<|e|>b", 3, Kind::Gpt2, &specials), 2);
        assert_eq!(last_cut(b"a\n<|e|>b", 1, Kind::Gpt2, &specials), 0);
        // Within the longest token of the end, a '<' may begin one: no cut before it.
        assert_eq!(last_cut(b"a\n<|e", 1, Kind::Gpt2, &specials), 0);
        assert_eq!(last_cut(b"a\n<div>\n", 3, Kind::Gpt2, &specials), 1);
    }
}
