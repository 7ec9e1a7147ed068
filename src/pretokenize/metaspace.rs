//! Cuts of SentencePiece-style text, where the BPE model's words are long: `Metaspace`
//! with `split` cuts a text before each replacement character (`▁`), and a text that is
//! one word (Llama's and Gemma's files: no pre-tokenizer, or `split: false`) may be cut
//! before a `▁` that no token joins to the character before it, so that each piece is
//! merged (and cached) alone with the ids of the whole (`Bpe::joins_before` says which
//! characters join).
//!
//! The scan looks for the replacement's first byte with `memchr` (~GB/s); merging is
//! the cost of such text, not this.

/// Where to cut: before `rep`, unless the character before it is in `joins`.
#[derive(Clone, Debug)]
pub(crate) struct Cuts {
    rep: char,
    /// Sorted (few: SentencePiece's own vocabularies hold `▁` only after `▁`).
    joins: Vec<char>,
    /// No cut at all: the text is one piece.
    none: bool,
}

impl Cuts {
    pub(crate) fn before(rep: char, mut joins: Vec<char>) -> Self {
        joins.sort_unstable();
        joins.dedup();
        Self {
            rep,
            joins,
            none: false,
        }
    }

    /// The whole text as one piece.
    pub(crate) fn whole() -> Self {
        Self {
            rep: '\0',
            joins: Vec::new(),
            none: true,
        }
    }

    pub(crate) fn describe(&self) -> String {
        match self.none {
            true => "whole text".to_owned(),
            false => format!("cuts before {:?} unless after {:?}", self.rep, self.joins),
        }
    }

    /// Calls `f(start, end)` for each piece of `text`, in order; none for an empty text.
    pub(crate) fn for_each_span(&self, text: &str, mut f: impl FnMut(usize, usize)) {
        if text.is_empty() {
            return;
        }
        if self.none {
            return f(0, text.len());
        }
        let mut buf = [0u8; 4];
        let rep = self.rep.encode_utf8(&mut buf).as_bytes();
        let bytes = text.as_bytes();
        let mut start = 0;
        for at in memchr::memmem::find_iter(bytes, rep) {
            if at == start {
                continue;
            }
            // `at` starts a character, and so the previous character ends there.
            let prev = text[..at].chars().next_back();
            if prev.is_some_and(|p| self.joins.binary_search(&p).is_ok()) {
                continue;
            }
            f(start, at);
            start = at;
        }
        f(start, text.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces<'t>(cuts: &Cuts, text: &'t str) -> Vec<&'t str> {
        let mut out = Vec::new();
        cuts.for_each_span(text, |s, e| out.push(&text[s..e]));
        out
    }

    #[test]
    fn cuts_before_the_replacement_unless_joined() {
        let split = Cuts::before('▁', vec![]);
        assert_eq!(pieces(&split, "▁a▁▁b c▁"), ["▁a", "▁", "▁b c", "▁"]);
        assert_eq!(pieces(&split, "ab"), ["ab"]);
        assert!(pieces(&split, "").is_empty());
        let joined = Cuts::before('▁', vec!['▁', 'é']);
        assert_eq!(pieces(&joined, "▁a▁▁▁b▁é▁c"), ["▁a", "▁▁▁b", "▁é▁c"]);
        assert_eq!(pieces(&Cuts::whole(), "▁a▁b"), ["▁a▁b"]);
    }
}
