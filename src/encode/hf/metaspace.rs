//! `Metaspace`'s change to each text between added tokens, as `tokenizers` makes it
//! before cutting words: every space becomes the replacement character (`▁`), and
//! the replacement goes before a text that does not start with it, on every text
//! (`prepend_scheme: "always"`), on the text that starts the input (`"first"`), or on
//! none (`"never"`).
//!
//! Offsets: [`Metaspace::apply_mapped`] also gives, for each byte of the new text, the
//! byte range of the input it comes from (a `▁` for a space: the space; the prepended
//! `▁`: the text's first character, as `tokenizers` aligns a prepended string), so that
//! a token's span in the new text maps back to the input's (`normalize::ByteMap`, the
//! normalizers' map, composes with it).

use std::borrow::Cow;

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
    fn prepends(&self, text: &str, first: bool) -> bool {
        let wanted = match self.prepend {
            Prepend::Always => true,
            Prepend::First => first,
            Prepend::Never => false,
        };
        // The replacement of a leading space counts as starting with it.
        wanted && !text.starts_with([' ', self.replacement])
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

    /// [`Metaspace::apply`], and in `map` (cleared first) the input byte range each
    /// byte of the result comes from, offset by `base` (where `text` starts in the input).
    #[allow(dead_code)] // the offsets' driver reads it
    pub(crate) fn apply_mapped(
        &self,
        text: &str,
        first: bool,
        base: usize,
        map: &mut Vec<(usize, usize)>,
    ) -> String {
        map.clear();
        let out = self.apply(text, first).into_owned();
        map.reserve(out.len());
        let rep_len = self.replacement.len_utf8();
        if self.prepends(text, first) {
            let first_len = text.chars().next().map_or(0, char::len_utf8);
            map.extend(std::iter::repeat_n((base, base + first_len), rep_len));
        }
        for (i, c) in text.char_indices() {
            let range = (base + i, base + i + c.len_utf8());
            let n = if c == ' ' { rep_len } else { c.len_utf8() };
            map.extend(std::iter::repeat_n(range, n));
        }
        debug_assert_eq!(map.len(), out.len());
        out
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
        let mut map = Vec::new();
        let out = m(Prepend::Always).apply_mapped("a b", false, 10, &mut map);
        assert_eq!(out, "▁a▁b");
        assert_eq!(&map[..4], &[(10, 11); 4]);
        assert_eq!(&map[4..], &[(11, 12), (11, 12), (11, 12), (12, 13)]);
    }
}
