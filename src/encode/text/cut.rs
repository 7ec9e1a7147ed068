//! The final prefix of a buffer of text: the part no later text can change. It ends
//! at a *cut*:
//!
//! - the start of a special-token match at least `max_special_len` bytes before the
//!   end of the buffer (no later text can make an earlier or longer match win), or
//! - for the named patterns, a line cut (`pretokenize::cuts`: a line end between
//!   two non-whitespace characters, `\n` or `\r\n`) at that same distance from the
//!   end and not inside a special-token match.
//!
//! Everything before the last cut is encoded and emitted; the rest is kept. When no
//! cut is found the next search waits until the buffer has doubled.

use crate::encode::encoder::Encoder;
use crate::pretokenize::{cuts, Kind};
use crate::specials::Specials;

/// Finds the last cut of a growing buffer (see the module docs) for an encoder's
/// pattern and special tokens.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FinalCut {
    /// The pattern, whose line cuts ([`cuts`]) are cuts here too.
    kind: Kind,
    /// The longest special token of the encoder, allowed or not.
    max_special: usize,
    /// The buffer length below which no cut is looked for: after a search that found
    /// none, twice the buffer's length then, so that searching a text with no cuts
    /// stays linear overall.
    next_try: usize,
}

impl FinalCut {
    pub(crate) fn new(encoder: &Encoder) -> Self {
        Self {
            kind: encoder.pretokenizer().kind(),
            max_special: encoder.specials().matcher.max_len(),
            next_try: 0,
        }
    }

    /// Whether a buffer of `len` bytes is worth searching for a cut.
    pub(crate) fn due(&self, len: usize) -> bool {
        len >= self.next_try
    }

    /// The end of the final prefix of `buf` (a cut after its start), if it has one.
    pub(crate) fn take(&mut self, buf: &str, allowed: &Specials) -> Option<usize> {
        match self.last_cut(buf, allowed) {
            0 => {
                self.next_try = buf.len().saturating_mul(2);
                None
            }
            cut => {
                self.next_try = 0;
                Some(cut)
            }
        }
    }

    /// The last position before which `buf` is final, recognising the special tokens
    /// of `allowed` (0: none).
    fn last_cut(&self, buf: &str, allowed: &Specials) -> usize {
        let bytes = buf.as_bytes();
        let limit = bytes.len().saturating_sub(self.max_special);
        let matches: Vec<(usize, usize, usize)> = allowed.matcher.find_iter(bytes).collect();
        let mut cut = matches
            .iter()
            .map(|&(s, _, _)| s)
            .filter(|&s| s <= limit)
            .max()
            .unwrap_or(0);
        if self.kind != Kind::Custom && cut < limit {
            for i in memchr::memrchr_iter(b'\n', &bytes[cut..limit]) {
                let special_at = |p: usize| matches.iter().any(|&(s, _, _)| s == p);
                let Some(p) = cuts::cut_at_newline(bytes, cut + i, self.kind, special_at) else {
                    continue;
                };
                if p <= limit && !matches.iter().any(|&(s, e, _)| s < p && p < e) {
                    cut = cut.max(p);
                    break;
                }
            }
        }
        cut
    }
}
