//! The threads' tables of short pieces -> the words of a `WordCounts`, in parallel.
//!
//! Why: merging the threads' tables into one and copying that into a `WordCounts`
//! ran on one thread after the counting; on en (116 MB, gpt2) it took 25 of the 155
//! ms of a 2-thread count. A table's slots are in hash order (`pieces.rs`), so each
//! shard of the hashes is one range of slots in every table, whatever its size: each
//! thread merges and copies its own shards, reading each table's range in order.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use super::pieces::{shard_of, ShortCounts};
use crate::error::Result;
use crate::hugemem::huge_vec;

/// Up to this many tables, a shard's keys are merged by looking each one up in the
/// other tables, so nothing is allocated. Past it, the quadratic number of lookups
/// would cost more than merging into a table of the shard's own.
const MAX_LOOKUP_TABLES: usize = 4;

/// Lookups go through the other tables in blocks of about this many slots, each
/// table's block read just before or after the lookups into it, while in cache.
const LOOKUP_BLOCK_BITS: u32 = 9;

/// One shard's words, as the parts of a `WordCounts` arena.
pub(super) struct ShardWords {
    pub(crate) bytes: Vec<u8>,
    pub(crate) ends: Vec<usize>,
    pub(crate) counts: Vec<u64>,
}

impl ShardWords {
    /// Room for `words` words of 8 bytes on average and `more_bytes` more bytes.
    fn with_capacity(words: usize, more_bytes: usize) -> Self {
        Self {
            // Most pieces are under 8 bytes; past that the array grows.
            bytes: huge_vec(words * 8 + more_bytes + 16),
            ends: huge_vec(words),
            counts: huge_vec(words),
        }
    }

    /// Appends the piece of each full slot of `slots` whose key `keep` accepts, with
    /// the count `count_of(key, count)`.
    ///
    /// Why not `push` in a loop: half the slots of a table are empty, and a branch on
    /// each slot's emptiness (and, merging tables, on whether an earlier table has
    /// the key) is mispredicted every other slot; copying a 1-thread count's table
    /// into the arena that way took 3.2 of the 43 ms of counting en-small, this way
    /// ~1. Every slot visited is written, kept or not, and only a kept one advances
    /// the ends. With `ALL` every slot is visited (an empty one is never kept), else
    /// only the full slots of each 64, found as a bit mask first: for a `keep` that
    /// looks keys up in other tables (2 threads: merging ~3 -> ~2.3 ms).
    fn extend_kept<const ALL: bool>(
        &mut self,
        slots: &[(u128, u64)],
        keep: impl Fn(u128) -> bool,
        count_of: impl Fn(u128, u64) -> u64,
    ) {
        for group in slots.chunks(64) {
            let mut full = 0u64;
            for (j, &(key, _)) in group.iter().enumerate() {
                full |= u64::from(key != 0) << j;
            }
            let n = if ALL {
                group.len()
            } else {
                full.count_ones() as usize
            };
            // Each slot writes a whole key (16 bytes) and advances by at most 15.
            self.bytes.reserve(16 * n);
            self.ends.reserve(n);
            self.counts.reserve(n);
            let (mut len, mut words) = (self.bytes.len(), self.ends.len());
            let bytes = self.bytes.as_mut_ptr();
            let (ends, counts) = (self.ends.as_mut_ptr(), self.counts.as_mut_ptr());
            let mut write = |key: u128, count: u64, kept: bool| {
                // SAFETY: `len + 16` and `words + 1` stay within the capacities just
                // reserved: each of the `n` slots adds at most 15 bytes and one word.
                unsafe {
                    bytes
                        .add(len)
                        .cast::<[u8; 16]>()
                        .write_unaligned(key.to_le_bytes());
                    len += usize::from(kept) * usize::from((key >> 120) as u8);
                    ends.add(words).write(len);
                    counts.add(words).write(count_of(key, count));
                }
                words += usize::from(kept);
            };
            if ALL {
                for &(key, count) in group {
                    write(key, count, (key != 0) & keep(key));
                }
            } else {
                while full != 0 {
                    let (key, count) = group[full.trailing_zeros() as usize];
                    full &= full - 1;
                    write(key, count, keep(key));
                }
            }
            // SAFETY: the first `len` bytes and `words` words were written above or
            // before; the bytes past `len` are left over from the last key written.
            unsafe {
                self.bytes.set_len(len);
                self.ends.set_len(words);
                self.counts.set_len(words);
            }
        }
    }
}

/// The distinct pieces of `tables` with their summed counts, as one `ShardWords`
/// per shard, counted on `threads` threads. The first shard has room for all the
/// words and `extra` more (words, bytes), so that the others can be appended to it
/// without moving it.
pub(super) fn shard_words(
    tables: &[ShortCounts],
    threads: usize,
    extra: (usize, usize),
) -> Result<Vec<ShardWords>> {
    let threads = threads.max(1);
    // One shard per thread; every table has at least 2^12 slots, so every shard
    // has at least one.
    let bits = threads.next_power_of_two().trailing_zeros().min(12);
    let shards = 1usize << bits;
    if threads == 1 {
        return Ok((0..shards)
            .map(|s| one_shard(tables, s, bits, extra))
            .collect());
    }
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<(usize, ShardWords)>> = Mutex::new(Vec::with_capacity(shards));
    crate::pool::on_threads(threads.min(shards), || loop {
        let s = next.fetch_add(1, Ordering::Relaxed);
        if s >= shards {
            return;
        }
        let words = one_shard(tables, s, bits, extra);
        done.lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((s, words));
    })?;
    let mut done = done.into_inner().unwrap_or_else(|p| p.into_inner());
    done.sort_unstable_by_key(|(s, _)| *s);
    Ok(done.into_iter().map(|(_, w)| w).collect())
}

fn one_shard(tables: &[ShortCounts], shard: usize, bits: u32, extra: (usize, usize)) -> ShardWords {
    // At most the sum of the tables' keys in this shard, which is about this.
    let keys: usize = tables.iter().map(ShortCounts::len).sum();
    let mut out = if shard == 0 {
        ShardWords::with_capacity(keys + extra.0, extra.1)
    } else {
        ShardWords::with_capacity((keys >> bits) + 64, 0)
    };
    if let [table] = tables {
        // One table: its keys are distinct already.
        let keep = |key: u128| shard_of(key, bits) == shard;
        for part in table.shard_ranges(shard, bits) {
            out.extend_kept::<true>(part, keep, |_, count| count);
        }
    } else if tables.len() <= MAX_LOOKUP_TABLES {
        let smallest = tables
            .iter()
            .map(ShortCounts::slot_count)
            .min()
            .unwrap_or(0);
        let block_bits = (smallest.trailing_zeros().saturating_sub(LOOKUP_BLOCK_BITS)).max(bits);
        let blocks = 1usize << (block_bits - bits);
        for block in shard * blocks..(shard + 1) * blocks {
            // Each key is taken from the first table that has it.
            for (i, table) in tables.iter().enumerate() {
                let (before, after) = (&tables[..i], &tables[i + 1..]);
                // `&` rather than `&&`: no branch.
                let keep = |key: u128| {
                    (shard_of(key, block_bits) == block) & before.iter().all(|t| t.get(key) == 0)
                };
                let total = |key, count| count + after.iter().map(|t| t.get(key)).sum::<u64>();
                for part in table.shard_ranges(block, block_bits) {
                    out.extend_kept::<false>(part, keep, total);
                }
            }
        }
    } else {
        let biggest = tables.iter().map(ShortCounts::len).max().unwrap_or(0);
        let mut merged = ShortCounts::for_shard(2 * (biggest >> bits) + 64, bits);
        for table in tables {
            table.shard_slots(shard, bits).for_each(|&(key, count)| {
                if key != 0 && shard_of(key, bits) == shard {
                    merged.add(key, count);
                }
            });
        }
        for part in merged.shard_ranges(0, 0) {
            out.extend_kept::<true>(part, |_| true, |_, count| count);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::PieceCounts;
    use super::*;

    fn words_of(tables: &[ShortCounts], threads: usize) -> Vec<(Vec<u8>, u64)> {
        let mut got = Vec::new();
        for shard in shard_words(tables, threads, (0, 0)).unwrap() {
            let mut start = 0;
            for (&end, &count) in shard.ends.iter().zip(&shard.counts) {
                got.push((shard.bytes[start..end].to_vec(), count));
                start = end;
            }
            assert_eq!(start, shard.bytes.len());
        }
        got.sort();
        got
    }

    /// The words of `tables` merged naively.
    fn want(tables: &[ShortCounts]) -> Vec<(Vec<u8>, u64)> {
        let mut want = std::collections::BTreeMap::<Vec<u8>, u64>::new();
        for table in tables {
            for &(key, count) in table.occupied() {
                let bytes = key.to_le_bytes();
                *want
                    .entry(bytes[..usize::from(bytes[15])].to_vec())
                    .or_insert(0) += count;
            }
        }
        want.into_iter().collect()
    }

    /// Tables of different sizes (some grew several times), with pieces in all, in
    /// some and in one only, of every length, merged on 1 to 5 threads: by lookups
    /// (up to `MAX_LOOKUP_TABLES` tables) and by a table per shard (more).
    #[test]
    fn shards_merge_tables_of_any_size() {
        let words: Vec<String> = (0..40_000).map(|i| format!("w{}", i * 7919)).collect();
        let mut parts: Vec<PieceCounts> = (0..6)
            .map(|p| match p {
                1 => PieceCounts::for_share(1 << 20, 1).unwrap(),
                _ => PieceCounts::default(),
            })
            .collect();
        for (i, w) in words.iter().enumerate() {
            let w = &w.as_bytes()[..w.len().min(1 + i % 15)];
            for (p, part) in parts.iter_mut().enumerate() {
                if i % (p + 1) == 0 {
                    part.add(b"", w);
                    if p == 1 {
                        part.add(b"", w);
                    }
                }
            }
        }
        let tables: Vec<ShortCounts> = parts
            .into_iter()
            .map(|part| {
                let (short, long) = part.into_tables();
                assert!(long.is_empty());
                short
            })
            .collect();
        assert!(tables.len() > MAX_LOOKUP_TABLES);
        for n in [1, 2, 3, tables.len()] {
            let want = want(&tables[..n]);
            assert!(want.len() > 5_000);
            for threads in 1..=5 {
                assert_eq!(
                    words_of(&tables[..n], threads),
                    want,
                    "{n} tables, {threads} threads"
                );
            }
        }
    }
}
