//! `Metaspace`'s change to each text between added tokens, as `tokenizers` makes it
//! before cutting words: every space becomes the replacement character (`▁`), and
//! the replacement goes before a text that does not start with it, on every text
//! (`prepend_scheme: "always"`), on the text that starts the input (`"first"`), or on
//! none (`"never"`).
//!
//! Offsets: [`Metaspace::apply_aligned`] makes the same change to a text aligned with
//! the input (`align`), so that a token's span in the new text maps back to the input.

use std::borrow::Cow;
use std::ops::Range;

use super::align::Aligned;

/// When the replacement goes before a text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prepend {
    Always,
    First,
    Never,
}

/// The `Metaspace` pre-tokenizer's text change.
#[derive(Clone, Debug)]
pub struct Metaspace {
    pub replacement: char,
    pub prepend: Prepend,
}

impl Metaspace {
    /// Whether `text` gets the replacement before it; `first`: it starts the input.
    pub(crate) fn prepends(&self, text: &str, first: bool) -> bool {
        let wanted = match self.prepend {
            Prepend::Always => true,
            Prepend::First => first,
            Prepend::Never => false,
        };
        // The replacement of a leading space counts as starting with it.
        wanted && !text.starts_with([' ', self.replacement])
    }

    /// The bytes of the replacement.
    pub(crate) fn rep_len(&self) -> usize {
        self.replacement.len_utf8()
    }

    /// `text` changed; `first`: it starts the input.
    pub(crate) fn apply<'t>(&self, text: &'t str, first: bool) -> Cow<'t, str> {
        let prepend = self.prepends(text, first);
        if !prepend && !text.contains(' ') {
            return Cow::Borrowed(text);
        }
        let mut buf = [0u8; 4];
        let rep = self.replacement.encode_utf8(&mut buf);
        let mut out = String::with_capacity(text.len() + text.len() / 2 + 4);
        if prepend {
            out.push_str(rep);
        }
        for (k, part) in text.split(' ').enumerate() {
            if k > 0 {
                out.push_str(rep);
            }
            out.push_str(part);
        }
        Cow::Owned(out)
    }

    /// [`Metaspace::apply`] on an aligned text, its alignments changed as
    /// `tokenizers`' `NormalizedString` changes them: a `▁` for a space stands for the
    /// space, a prepended `▁` for the text's first character.
    pub(crate) fn apply_aligned(&self, a: &mut Aligned, first: bool) {
        let prepend = self.prepends(&a.text, first);
        let spaces: Vec<Range<usize>> = a.text.match_indices(' ').map(|(i, _)| i..i + 1).collect();
        let mut buf = [0u8; 4];
        let rep = self.replacement.encode_utf8(&mut buf);
        a.replace(&spaces, rep);
        if prepend {
            a.prepend(rep);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_spaces_and_prepends_by_scheme() {
        let m = |prepend| Metaspace {
            replacement: '▁',
            prepend,
        };
        assert_eq!(m(Prepend::Always).apply("a b", false), "▁a▁b");
        assert_eq!(m(Prepend::Always).apply(" a", false), "▁a");
        assert_eq!(m(Prepend::Always).apply("▁a", false), "▁a");
        assert_eq!(m(Prepend::First).apply("a b", false), "a▁b");
        assert_eq!(m(Prepend::First).apply("a b", true), "▁a▁b");
        assert_eq!(m(Prepend::Never).apply("a  b", true), "a▁▁b");
        let mut a = Aligned::new("a b");
        m(Prepend::Always).apply_aligned(&mut a, false);
        assert_eq!(a.text, "▁a▁b");
        assert_eq!(&a.align[..4], &[(0, 1); 4]);
        assert_eq!(&a.align[4..], &[(1, 2), (1, 2), (1, 2), (2, 3)]);
    }
}
