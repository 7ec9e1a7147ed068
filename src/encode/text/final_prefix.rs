//! The final prefix of a buffer of text: the part no later text can change. It ends
//! at the last safe cut (`corpus::safe_cut`, the rule file chunks are cut by: before a
//! special token, or at a line cut of the pattern, never inside a special token)
//! that lies at least the longest special token's length before the end of the
//! buffer, so that no later text can make an earlier or longer match win.
//!
//! Everything before that cut is encoded and emitted; the rest is kept. When no cut
//! is found the next search waits until the buffer has doubled.

use crate::corpus;
use crate::encode::encoder::Encoder;
use crate::pretokenize::Kind;
use crate::specials::Specials;

/// Finds the last cut of a growing buffer (see the module docs) for an encoder's
/// pattern and special tokens.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FinalPrefix {
    /// The pattern, whose line cuts are cuts here too.
    kind: Kind,
    /// The longest special token of the encoder, allowed or not.
    max_special: usize,
    /// Whether a cut may lie before a special token (not where an HF front's added
    /// tokens read the text around them).
    at_specials: bool,
    /// The buffer length below which no cut is looked for: after a search that found
    /// none, twice the buffer's length then, so that searching a text with no cuts
    /// stays linear overall.
    next_try: usize,
}

impl FinalPrefix {
    pub(crate) fn new(encoder: &Encoder) -> Self {
        Self {
            kind: encoder.cut_kind(),
            max_special: encoder.specials().matcher.max_len(),
            at_specials: encoder.cuts_at_specials(),
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
    /// of `allowed` (0: none): a safe cut ([`corpus::last_cut`]) at least the longest
    /// special token of the encoder before the end.
    fn last_cut(&self, buf: &str, allowed: &Specials) -> usize {
        let limit = buf.len().saturating_sub(self.max_special);
        let none = crate::specials::SpecialMatcher::default();
        let specials = if self.at_specials {
            &allowed.matcher
        } else {
            &none
        };
        corpus::last_cut(buf.as_bytes(), limit, self.kind, specials)
    }
}
