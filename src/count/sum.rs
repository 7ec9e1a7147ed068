//! Adding up saved counts: what a distributed count's reducer does with one partition
//! of every unit's counts.
//!
//! Why not `WordCounts::add_bytes`: its index holds positions in the arena, so each
//! word's lookup waits on the table, then on the word's end and on its bytes, and a
//! growing table hashes every word again from the arena. Summing one partition of
//! owt-12G's twelve 1 GiB units (9.6M records, 3M distinct words) took 1.38 s so.
//! Here the words are keyed as counting keys its pieces (`PieceCounts`: up to 15
//! bytes packed in a `u128`, in the slot itself), and each record's slot is asked for
//! `AHEAD` records before it is added.

use super::pieces::PieceCounts;
use super::wordcounts::{check_file, parse_record, write_record, Checked, Header, WordCounts};
use crate::error::{Error, Result};

/// How many records ahead a word's slot is prefetched.
const AHEAD: usize = 16;

/// The sum of the counts of the bytes of saved files (`WordCounts::to_bytes`), added
/// one file's bytes at a time.
#[derive(Default)]
pub struct CountsSum {
    pieces: Option<PieceCounts>,
    /// The pattern and the special tokens (the first file's pattern, every file's
    /// special tokens, as `WordCounts::add_bytes` keeps them).
    header: Option<Header>,
    total: u64,
}

impl CountsSum {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the counts of `bytes`, named `name` in errors. Bytes that are not a saved
    /// file, are cut short or would make the total pass 2**64-1, and counts made with
    /// another pattern, are an error that changes nothing.
    pub fn add_bytes(&mut self, bytes: &[u8], name: &str) -> Result<()> {
        let Checked {
            header,
            n,
            records,
            total,
        } = check_file(bytes, name, None)?;
        let has_words = self.pieces.as_ref().is_some_and(|p| p.distinct() > 0);
        if let Some((pattern, _)) = &self.header {
            if has_words && n > 0 && *pattern != header.0 {
                return Err(Error::invalid(format!(
                    "{name}: cannot add counts made with different patterns: {pattern:?} and {:?}",
                    header.0
                )));
            }
        }
        let Some(sum) = self.total.checked_add(total) else {
            return Err(Error::Overflow(format!(
                "{name}: adding these word counts would make the total count pass 2**64-1: {} + {total}",
                self.total
            )));
        };
        let pieces = match &mut self.pieces {
            Some(pieces) => pieces,
            None => {
                // Sized for the first file's words (each record takes 12 bytes at
                // least): a partition of one unit's counts holds most of the
                // frequent words of all of them.
                let words = usize::try_from(n)
                    .unwrap_or(usize::MAX)
                    .min(records.len() / 12);
                let pieces = PieceCounts::for_words(words)
                    .ok_or_else(|| Error::out_of_memory::<(u128, u64)>("adding counts", words))?;
                self.pieces.insert(pieces)
            }
        };
        let mut ahead = 0;
        let mut at = 0;
        for _ in 0..AHEAD {
            if let Some((_, word, next)) = parse_record(records, ahead) {
                pieces.prefetch_piece(records, word);
                ahead = next;
            }
        }
        while let Some((count, word, next)) = parse_record(records, at) {
            if let Some((_, later, next)) = parse_record(records, ahead) {
                pieces.prefetch_piece(records, later);
                ahead = next;
            }
            pieces.add_n(records, word, count);
            at = next;
        }
        if pieces.failed() {
            return Err(Error::out_of_memory::<(u128, u64)>(
                "adding counts",
                2 * pieces.distinct(),
            ));
        }
        self.total = sum;
        let (pattern, specials) = self.header.get_or_insert_with(Default::default);
        if !has_words {
            *pattern = header.0;
        }
        for t in header.1 {
            if !specials.contains(&t) {
                specials.push(t);
            }
        }
        Ok(())
    }

    /// The bytes of a saved file of the sum (words unsorted, as `WordCounts::to_bytes`);
    /// an error where memory ran out while adding (the sum is wrong then).
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let (pattern, specials) = self.header.clone().unwrap_or_default();
        let empty = WordCounts::new(pattern, specials);
        let mut out = Vec::new();
        // Writing to memory cannot fail.
        let Some(pieces) = &self.pieces else {
            let _ = empty.write_header(&mut out, 0);
            return Ok(out);
        };
        if pieces.failed() {
            return Err(Error::out_of_memory::<(u128, u64)>(
                "adding counts",
                2 * pieces.distinct(),
            ));
        }
        let _ = empty.write_header(&mut out, pieces.distinct() as u64);
        pieces.each_counted(|word, count| {
            let _ = write_record(&mut out, word, count);
        });
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Words of every kind the keys must tell apart: empty, with NULs (trailing ones
    /// among them), 15 and 16 bytes long (either side of the packed keys), longer.
    fn words(seed: u64, n: usize) -> Vec<(Vec<u8>, u64)> {
        let mut x = seed;
        let mut next = move || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            x >> 33
        };
        (0..n)
            .map(|_| {
                let len = [0, 1, 2, 3, 7, 8, 14, 15, 16, 17, 40][(next() % 11) as usize];
                let word: Vec<u8> = (0..len)
                    .map(|_| [0u8, b'a', b'b', 0xff][(next() % 4) as usize])
                    .collect();
                (word, next() % 1000)
            })
            .collect()
    }

    #[test]
    fn the_sum_equals_adding_the_counts() {
        let parts: Vec<WordCounts> = (0..5)
            .map(|k| WordCounts::from_pairs(words(k, 3000), "gpt2").unwrap())
            .collect();
        let mut sum = CountsSum::new();
        let mut whole = WordCounts::default();
        for part in &parts {
            sum.add_bytes(&part.to_bytes(), "part").unwrap();
            whole.add(part).unwrap();
        }
        let got = WordCounts::from_bytes(&sum.to_bytes().unwrap(), "sum").unwrap();
        assert_eq!(got, whole);
        // The hard cases were there.
        let has = |f: &dyn Fn(&[u8]) -> bool| got.iter().any(|(w, c)| f(w) && c > 0);
        assert!(has(&|w| w.is_empty()) && has(&|w| w.len() == 16) && has(&|w| w.len() == 15));
        assert!(has(&|w| w.len() > 1 && w.ends_with(&[0])));
    }

    #[test]
    fn the_header_is_kept_as_adding_keeps_it() {
        let with = |pairs: Vec<(Vec<u8>, u64)>, pattern: &str, specials: &[&str]| {
            let mut c = WordCounts::from_pairs(pairs, pattern).unwrap();
            c.special_tokens = specials.iter().map(|s| s.to_string()).collect();
            c
        };
        // No words yet: the next file's pattern is taken; specials are a union, in
        // order, a file's repeats dropped.
        let empty = with(vec![], "cl100k", &["<|z|>", "<|a|>", "<|z|>"]);
        let a = with(vec![(b" low".to_vec(), 3)], "gpt2", &["<|a|>", "<|c|>"]);
        let mut sum = CountsSum::new();
        let mut whole = WordCounts::default();
        for part in [&empty, &a] {
            sum.add_bytes(&part.to_bytes(), "part").unwrap();
            whole.add_bytes(&part.to_bytes(), "part").unwrap();
        }
        let got = WordCounts::from_bytes(&sum.to_bytes().unwrap(), "sum").unwrap();
        assert_eq!(got, whole);
        assert_eq!(got.pattern, "gpt2");
        assert_eq!(got.special_tokens, ["<|z|>", "<|a|>", "<|c|>"]);
        assert_eq!(got.special_tokens, whole.special_tokens);
    }

    #[test]
    fn a_short_word_at_the_very_end_is_keyed_exactly() {
        // The last record's word has no 16 bytes after it in the buffer: its key is
        // made from its own bytes, and must equal the key of the same word elsewhere.
        for word in [&b"a"[..], b"ab\0", b"fifteen-bytes!!"] {
            let last = WordCounts::from_pairs([(word.to_vec(), 2)], "gpt2").unwrap();
            let first = WordCounts::from_pairs(
                [
                    (word.to_vec(), 1),
                    (b"a much longer word after it".to_vec(), 1),
                ],
                "gpt2",
            )
            .unwrap();
            let mut sum = CountsSum::new();
            sum.add_bytes(&first.to_bytes(), "first").unwrap();
            sum.add_bytes(&last.to_bytes(), "last").unwrap();
            let got = WordCounts::from_bytes(&sum.to_bytes().unwrap(), "sum").unwrap();
            assert_eq!((got.get(word), got.len()), (3, 2), "{word:?}");
        }
    }

    #[test]
    fn bad_bytes_change_nothing() {
        let a =
            WordCounts::from_pairs([(b" low".to_vec(), 3), (b"er".to_vec(), 2)], "gpt2").unwrap();
        let mut sum = CountsSum::new();
        let empty = sum.to_bytes().unwrap();
        assert_eq!(WordCounts::from_bytes(&empty, "e").unwrap().len(), 0);
        sum.add_bytes(&a.to_bytes(), "a").unwrap();
        let data = a.to_bytes();
        let cut = sum
            .add_bytes(&data[..data.len() - 1], "u7")
            .unwrap_err()
            .to_string();
        assert!(cut.contains("u7: cut short in word record 1 of 2"), "{cut}");
        let huge = WordCounts::from_pairs([(b"x".to_vec(), u64::MAX - 2)], "gpt2").unwrap();
        let over = sum
            .add_bytes(&huge.to_bytes(), "h")
            .unwrap_err()
            .to_string();
        assert!(over.contains("pass 2**64-1"), "{over}");
        let other = WordCounts::from_pairs([(b"x".to_vec(), 1)], "cl100k").unwrap();
        let differ = sum
            .add_bytes(&other.to_bytes(), "o")
            .unwrap_err()
            .to_string();
        assert!(differ.contains("different patterns"), "{differ}");
        let got = WordCounts::from_bytes(&sum.to_bytes().unwrap(), "sum").unwrap();
        assert_eq!(got, a);
    }
}
