//! Normalized text with its alignments, for offsets: for each byte of the normalized
//! text, the byte range of the original text it stands for, made step by step as
//! `tokenizers`' `NormalizedString::transform_range` makes them (a character that
//! replaces one keeps that one's range, an inserted character takes the range of the
//! character before it, the first of a prepend takes the first character's). Only
//! built where offsets are asked for and a step changes the text: plain `encode`
//! never gets here.

use std::ops::Range;

/// The original byte range one normalized byte stands for.
pub(crate) type Align = (usize, usize);

/// A normalized text and, per byte of it, its [`Align`] in the original.
#[derive(Clone, Debug)]
pub(crate) struct Aligned {
    pub(crate) text: String,
    pub(crate) align: Vec<Align>,
    /// Bytes of the original text.
    original_len: usize,
}

impl Aligned {
    /// `text` as it is: each byte stands for its character.
    pub(crate) fn new(text: &str) -> Self {
        let mut align = Vec::with_capacity(text.len());
        for (b, c) in text.char_indices() {
            let n = c.len_utf8();
            align.extend(std::iter::repeat_n((b, b + n), n));
        }
        Self {
            text: text.to_owned(),
            align,
            original_len: text.len(),
        }
    }

    /// The normalized range a transform of the whole text covers: `tokenizers`
    /// converts the whole original range, which starts at the first byte whose
    /// alignment is not empty.
    fn whole(&self) -> Range<usize> {
        if self.original_len == 0 {
            return 0..0;
        }
        let start = self.align.iter().position(|a| a.0 != a.1);
        start.map_or(self.text.len()..self.text.len(), |s| s..self.text.len())
    }

    /// The whole text replaced by `dest`: each character with its change (1: inserted;
    /// 0: replaces the next character; -n: replaces it and removes the n after it).
    pub(crate) fn transform(&mut self, dest: impl IntoIterator<Item = (char, isize)>) {
        let range = self.whole();
        self.transform_range(range, dest, 0);
    }

    /// `range` of the normalized text replaced by `dest`, after `initial` characters
    /// of it removed, as `transform_range` does it.
    pub(crate) fn transform_range(
        &mut self,
        range: Range<usize>,
        dest: impl IntoIterator<Item = (char, isize)>,
        initial: usize,
    ) {
        let mut replaced = self.text[range.clone()].chars();
        let removed: usize = (&mut replaced).take(initial).map(char::len_utf8).sum();
        let mut offset = range.start + removed;
        let (mut text, mut align) = (String::new(), Vec::new());
        for (c, change) in dest {
            let at = match change > 0 {
                true if offset < 1 => (0, 0),
                true => self.align.get(offset - 1).copied().unwrap_or((0, 0)),
                false => self.align.get(offset).copied().unwrap_or((0, 0)),
            };
            if change <= 0 {
                offset += replaced.next().map_or(0, char::len_utf8);
            }
            if change < 0 {
                let n = change.unsigned_abs();
                offset += (&mut replaced).take(n).map(char::len_utf8).sum::<usize>();
            }
            text.push(c);
            align.extend(std::iter::repeat_n(at, c.len_utf8()));
        }
        self.text.replace_range(range.clone(), &text);
        self.align.splice(range, align);
    }

    /// `prefix` before the text, as `NormalizedString::prepend`: a text that is empty
    /// stays so.
    pub(crate) fn prepend(&mut self, prefix: &str) {
        let Some(first) = self.text.chars().next() else {
            return;
        };
        let dest = prefix
            .chars()
            .enumerate()
            .map(|(i, c)| (c, isize::from(i != 0)))
            .chain(std::iter::once((first, 1)));
        self.transform_range(0..first.len_utf8(), dest, 0);
    }

    /// Each range of `matches` (in order, not overlapping, not empty) replaced by
    /// `content`, as `NormalizedString::replace`: its characters all take the range of
    /// the last character matched.
    pub(crate) fn replace(&mut self, matches: &[Range<usize>], content: &str) {
        if matches.is_empty() {
            return;
        }
        let (mut text, mut align) = (String::new(), Vec::new());
        let mut last = 0;
        for m in matches {
            text.push_str(&self.text[last..m.start]);
            align.extend_from_slice(&self.align[last..m.start]);
            let at = self.align[m.end - 1];
            text.push_str(content);
            align.extend(std::iter::repeat_n(at, content.len()));
            last = m.end;
        }
        text.push_str(&self.text[last..]);
        align.extend_from_slice(&self.align[last..]);
        (self.text, self.align) = (text, align);
    }

    /// Bytes `range` of the normalized text, with their alignments: a text between
    /// added tokens, which `tokenizers` changes further (`Metaspace`) as a slice.
    pub(crate) fn sub(&self, range: Range<usize>) -> Self {
        Self {
            text: self.text[range.clone()].to_owned(),
            align: self.align[range].to_vec(),
            original_len: self.original_len,
        }
    }

    /// The original range of normalized bytes `start..end` (not empty) as
    /// `tokenizers`' `convert_offsets` makes it: the first byte's start to the last
    /// byte's end (`expand_alignments`).
    pub(crate) fn expand(&self, start: usize, end: usize) -> (usize, usize) {
        match (self.align.get(start), self.align.get(end.wrapping_sub(1))) {
            (Some(first), Some(last)) if start < end => (first.0, last.1),
            _ => (0, 0),
        }
    }

    /// The original range of normalized bytes `start..end` (not empty): from the
    /// lowest start of their alignments to the highest end (`convert_offsets`).
    pub(crate) fn original(align: &[Align], start: usize, end: usize) -> (usize, usize) {
        let part = align.get(start..end).unwrap_or_default();
        let lo = part.iter().map(|a| a.0).min().unwrap_or(0);
        let hi = part.iter().map(|a| a.1).max().unwrap_or(0);
        (lo, hi)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prepend_and_replace_align_as_tokenizers() {
        let mut a = Aligned::new("ab é");
        let space = 2..3;
        a.replace(std::slice::from_ref(&space), "\u{2581}");
        a.prepend("\u{2581}");
        assert_eq!(a.text, "\u{2581}ab\u{2581}é");
        // The prepended mark stands for "a"; the replacement for the space.
        assert_eq!(Aligned::original(&a.align, 0, 3), (0, 1));
        assert_eq!(Aligned::original(&a.align, 5, 8), (2, 3));
        let last = a.text.len();
        assert_eq!(Aligned::original(&a.align, last - 2, last), (3, 5));
    }

    #[test]
    fn inserted_characters_take_the_range_before_them() {
        // Lowercase of "İ" is two characters: both stand for it.
        let mut a = Aligned::new("xİ");
        let dest: Vec<(char, isize)> = a
            .text
            .clone()
            .chars()
            .flat_map(|c| {
                c.to_lowercase()
                    .enumerate()
                    .map(|(i, l)| (l, isize::from(i > 0)))
            })
            .collect();
        a.transform(dest);
        assert_eq!(a.text, "xi\u{307}");
        assert_eq!(Aligned::original(&a.align, 1, 2), (1, 3));
        assert_eq!(Aligned::original(&a.align, 2, 4), (1, 3));
    }
}
