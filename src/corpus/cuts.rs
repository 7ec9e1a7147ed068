//! Safe cuts: places where a text may be split in two, each part processed on its own
//! with exactly the result of the whole.

use crate::pretokenize::{cuts, Kind};
use crate::specials::SpecialMatcher;

/// The first safe cut at or after `from` (and before the end), if any. Reads a window
/// at a time and stops at the first cut, so successive calls read disjoint stretches.
pub(super) fn next_cut(
    data: &[u8],
    specials: &SpecialMatcher,
    from: usize,
    kind: Kind,
) -> Option<usize> {
    const WINDOW: usize = 64 << 10;
    let margin = specials.max_len();
    // Whether a special token may start at `p`: one whose first byte is there. Not a
    // full match: under errors="ignore" invalid bytes inside "<|endo\xfftext|>" vanish
    // and a special token starts there after decoding.
    let special_at = |p: usize| {
        let first = data.get(p).copied();
        specials
            .tokens()
            .iter()
            .any(|t| t.as_bytes().first().copied() == first)
    };
    let mut at = from.max(1);
    while at < data.len() {
        let end = (at + WINDOW).min(data.len());
        let newline = if kind == Kind::Custom {
            None
        } else {
            memchr::memchr_iter(b'\n', &data[at - 1..end])
                .filter_map(|i| cuts::cut_at_newline(data, at - 1 + i, kind, special_at))
                .find(|&p| {
                    p >= at && !inside_special(data, specials, p) && valid_near(data, p, margin)
                })
        };
        // A special token's start is a cut unless another occurrence covers it. One
        // this search skips is covered by the match it found instead. Only the stretch
        // before the newline cut can hold an earlier one: searching the whole window
        // for each cut took ~6 ms of a 116 MB file's setup, before any encoding.
        let limit = newline.unwrap_or(end);
        let special = specials
            .find_iter(&data[at..(limit + margin).min(data.len())])
            .map(|(s, _, _)| at + s)
            .take_while(|&s| s < limit)
            .find(|&s| !inside_special(data, specials, s) && valid_near(data, s, margin));
        match special.or(newline) {
            Some(cut) => return Some(cut),
            None => at = end,
        }
    }
    None
}

/// Whether some occurrence of a special token, matched anywhere, covers both
/// `data[p - 1]` and `data[p]`. Cutting elsewhere is safe: with no occurrence across
/// `p`, leftmost-longest matching reaches `p` in the same state from any start.
pub(super) fn inside_special(data: &[u8], specials: &SpecialMatcher, p: usize) -> bool {
    specials.tokens().iter().any(|t| {
        let t = t.as_bytes();
        (1..t.len()).any(|j| p >= j && data.get(p - j..p - j + t.len()) == Some(t))
    })
}

/// Whether the bytes within `margin` (the longest special token) of `p` are valid
/// UTF-8. Special tokens are matched on raw bytes here, but under errors="ignore"
/// invalid bytes vanish in decoding and can join two halves into a special token
/// ("a\xff\nb" holds "a\nb"): no cut is made that close to an invalid byte.
fn valid_near(data: &[u8], p: usize, margin: usize) -> bool {
    if margin == 0 {
        return true;
    }
    let is_continuation = |b: u8| b & 0xc0 == 0x80;
    let mut lo = p.saturating_sub(margin);
    let mut hi = (p + margin).min(data.len());
    // Widen to whole characters (at most 3 continuation bytes each way).
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
