//! Counts split by word into partitions, so that many workers can add them up: each
//! owns one partition of every unit's counts, and the partitions' sums, which share no
//! word, make the whole table by appending, with no word looked up again.
//!
//! A word's partition is a hash of its bytes that does not depend on the process, the
//! machine or the number of units: the same word lands in the same partition
//! everywhere. It is not the tables' own hash (FxHash), whose low bits pick a word's
//! bucket: words of one partition would all share them, and crowd a table's buckets.

use rustc_hash::FxHasher;
use std::hash::Hasher;

use super::wordcounts::{write_record, WordCounts};
use crate::error::{Error, Result};

/// Partition of `word` among `parts` (> 0): FxHash of the bytes, mixed by
/// SplitMix64's finalizer so that every bit of the hash counts.
pub(crate) fn part_of(word: &[u8], parts: usize) -> usize {
    let mut h = FxHasher::default();
    h.write(word);
    let mut x = h.finish() ^ 0x9e37_79b9_7f4a_7c15;
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 31;
    // Lemire's multiply-shift: the high half of x * parts is uniform in 0..parts.
    ((x as u128 * parts as u128) >> 64) as usize
}

impl WordCounts {
    /// The counts split into `parts` partitions by [`part_of`], each as the bytes of a
    /// saved file (words unsorted) with this pattern and special tokens: written
    /// straight from the table, with no table built per partition.
    pub fn partition_bytes(&self, parts: usize) -> Result<Vec<Vec<u8>>> {
        if parts == 0 {
            return Err(Error::invalid("parts must be at least 1".to_string()));
        }
        let mut header = Vec::new();
        // Writing to memory cannot fail.
        let _ = self.write_header(&mut header, 0);
        let share = (self.len() * 16) / parts + 64;
        let mut out: Vec<Vec<u8>> = (0..parts)
            .map(|_| Vec::with_capacity(header.len() + share))
            .collect();
        for o in &mut out {
            o.extend_from_slice(&header);
        }
        let mut words = vec![0u64; parts];
        for (word, count) in self.iter() {
            let p = part_of(word, parts);
            let _ = write_record(&mut out[p], word, count);
            words[p] += 1;
        }
        // The header's last field is the number of word records.
        let at = header.len() - 8;
        for (o, n) in out.iter_mut().zip(words) {
            o[at..at + 8].copy_from_slice(&n.to_le_bytes());
        }
        Ok(out)
    }
}

/// Builds the whole table from the sums of the `parts` partitions, each added once,
/// in any order.
pub struct Partitions {
    counts: WordCounts,
    parts: usize,
    seen: Vec<bool>,
}

impl Partitions {
    pub fn new(parts: usize) -> Result<Self> {
        if parts == 0 {
            return Err(Error::invalid("parts must be at least 1".to_string()));
        }
        Ok(Self {
            counts: WordCounts::default(),
            parts,
            seen: vec![false; parts],
        })
    }

    /// Appends partition `part`'s sum, the bytes of a saved file: an error, changing
    /// nothing, for a partition given twice or a word of another partition.
    pub fn add(&mut self, part: usize, bytes: &[u8]) -> Result<()> {
        let name = format!("partition {part} of {}", self.parts);
        match self.seen.get(part) {
            None => return Err(Error::invalid(format!("{name}: no such partition"))),
            Some(true) => return Err(Error::invalid(format!("{name}: given twice"))),
            Some(false) => {}
        }
        let parts = self.parts;
        self.counts
            .append_new_bytes(bytes, &name, &|w| part_of(w, parts) == part)?;
        self.seen[part] = true;
        Ok(())
    }

    /// The whole table, once every partition is in.
    pub fn finish(self) -> Result<WordCounts> {
        match self.seen.iter().position(|s| !s) {
            Some(p) => Err(Error::invalid(format!(
                "partition {p} of {} was never given",
                self.parts
            ))),
            None => Ok(self.counts),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> WordCounts {
        let pairs = (0..2000u64).map(|i| (format!(" w{}", i * 7919 % 1013).into_bytes(), i + 1));
        WordCounts::from_pairs(pairs, "gpt2").unwrap()
    }

    #[test]
    fn partitions_rebuild_the_same_counts() {
        let counts = sample();
        for parts in [1, 2, 3, 16] {
            let split = counts.partition_bytes(parts).unwrap();
            assert_eq!(split.len(), parts);
            let mut whole = Partitions::new(parts).unwrap();
            for (p, part) in split.iter().enumerate().rev() {
                let part = WordCounts::from_bytes(part, "part").unwrap();
                assert!(part.iter().all(|(w, _)| part_of(w, parts) == p));
                whole.add(p, &part.to_bytes()).unwrap();
            }
            assert_eq!(whole.finish().unwrap(), counts);
        }
    }

    #[test]
    fn partitions_are_even() {
        let counts = sample();
        let split = counts.partition_bytes(4).unwrap();
        let sizes: Vec<usize> = (split.iter())
            .map(|p| WordCounts::from_bytes(p, "part").unwrap().len())
            .collect();
        assert!(sizes.iter().all(|&n| n > counts.len() / 8), "{sizes:?}");
    }

    #[test]
    fn a_partition_given_twice_or_mixed_up_is_refused() {
        let counts = sample();
        let split = counts.partition_bytes(2).unwrap();
        let mut whole = Partitions::new(2).unwrap();
        whole.add(0, &split[0]).unwrap();
        let twice = whole.add(0, &split[0]).unwrap_err().to_string();
        assert!(twice.contains("partition 0 of 2: given twice"), "{twice}");
        let mixed = whole.add(1, &split[0]).unwrap_err().to_string();
        assert!(mixed.contains("belongs to another partition"), "{mixed}");
        assert!(whole.add(2, &split[1]).is_err());
        let missing = whole.finish().unwrap_err().to_string();
        assert!(
            missing.contains("partition 1 of 2 was never given"),
            "{missing}"
        );
    }
}
