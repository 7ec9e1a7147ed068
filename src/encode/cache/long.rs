//! A bounded cache of piece bytes -> ids for the pieces the short table
//! ([`super::short`]) cannot hold: longer than 15 bytes or of more than three ids.
//!
//! Keys and ids live in two arenas and the table holds offsets, so a hit allocates
//! nothing and a miss only appends to the arenas. When a limit is reached nothing
//! more is added: real text repeats a small set of pieces, which come early, and
//! memory stays bounded on any input. All capacity is reserved up front, so a cache never grows after it is made (the
//! `encode_iterable` memory test forbids new allocations while iterating).

use std::hash::{BuildHasher, Hasher};

use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;

use crate::error::{Error, Result};

/// Pieces longer than this are not cached: one such piece (a run of a million
/// spaces) would fill the arenas. Up to 1 KiB keeps the rules and table borders of
/// text-art that repeat through a corpus: on the 116 MB English corpus, 4.8K pieces of
/// 65 to 1024 bytes that were merged again on every call (warm, gpt2: 343 -> 354 MB/s).
pub const MAX_PIECE: usize = 1024;

/// Arena room per entry: piece bytes and ids. Pieces of Chinese and Japanese text under
/// the Llama 3 pattern are long runs of letters (8.6 and 25 bytes a piece, 8+ ids);
/// with 16 bytes and 4 ids an entry the id arena filled at a third of the entries, and
/// warm encodes of the multilingual corpus merged 32% of its bytes again on every call.
/// The arenas are reserved, not touched, up front: memory is used as they fill.
const KEY_BYTES_PER_ENTRY: usize = 32;
const IDS_PER_ENTRY: usize = 8;

#[derive(Clone, Copy, Debug)]
struct Entry {
    hash: u64,
    key: u32,
    key_len: u32,
    ids: u32,
    ids_len: u32,
}

#[derive(Debug)]
pub struct LongCache {
    table: HashTable<Entry>,
    keys: Vec<u8>,
    ids: Vec<u32>,
    max_entries: usize,
}

#[inline]
fn hash(piece: &[u8]) -> u64 {
    let mut h = FxBuildHasher.build_hasher();
    h.write(piece);
    h.finish()
}

impl LongCache {
    /// A cache of at most `max_entries` pieces.
    #[cfg(test)]
    pub fn new(max_entries: usize) -> Self {
        Self::try_new(max_entries).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`LongCache::new`], or an error where the memory cannot be had. All of it
    /// is reserved now: inserts never allocate.
    pub fn try_new(max_entries: usize) -> Result<Self> {
        let max_entries = max_entries.max(1);
        let per_entry = 24 + KEY_BYTES_PER_ENTRY + 4 * IDS_PER_ENTRY;
        let oom = || Error::out_of_memory::<u8>("a piece cache", max_entries * per_entry);
        let mut table = HashTable::new();
        table
            .try_reserve(max_entries, |e: &Entry| e.hash)
            .map_err(|_| oom())?;
        let mut keys = Vec::new();
        keys.try_reserve_exact(max_entries * KEY_BYTES_PER_ENTRY)
            .map_err(|_| oom())?;
        let mut ids = Vec::new();
        ids.try_reserve_exact(max_entries * IDS_PER_ENTRY)
            .map_err(|_| oom())?;
        Ok(Self {
            table,
            keys,
            ids,
            max_entries,
        })
    }

    #[inline]
    pub fn get(&self, piece: &[u8]) -> Option<&[u32]> {
        let h = hash(piece);
        let keys = &self.keys;
        let e = *self.table.find(h, |e| {
            e.hash == h && &keys[e.key as usize..(e.key + e.key_len) as usize] == piece
        })?;
        let (start, end) = (e.ids as usize, (e.ids + e.ids_len) as usize);
        Some(&self.ids[start..end])
    }

    pub fn insert(&mut self, piece: &[u8], ids: &[u32]) {
        if piece.len() > MAX_PIECE {
            return;
        }
        let h = hash(piece);
        if self.table.len() >= self.max_entries
            || self.keys.len() + piece.len() > self.keys.capacity()
            || self.ids.len() + ids.len() > self.ids.capacity()
        {
            // Full: keep what is there rather than start over. Frequent pieces show up
            // early, so the first pieces seen are the ones worth keeping; emptying the
            // cache instead threw the hot pieces out every 64K new ones (en-small has
            // 116K distinct pieces, and re-merging them was the main cost).
            return;
        }
        let entry = Entry {
            hash: h,
            key: self.keys.len() as u32,
            key_len: piece.len() as u32,
            ids: self.ids.len() as u32,
            ids_len: ids.len() as u32,
        };
        self.keys.extend_from_slice(piece);
        self.ids.extend_from_slice(ids);
        self.table.insert_unique(entry.hash, entry, |e| e.hash);
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.table.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hit_miss_and_bound() {
        let mut c = LongCache::new(2);
        c.insert(b"ab", &[1, 2]);
        assert_eq!(c.get(b"ab"), Some(&[1u32, 2][..]));
        assert_eq!(c.get(b"a"), None);
        c.insert(b"cd", &[3]);
        c.insert(b"ef", &[4]);
        // Full: the first pieces stay, the new one is not added.
        assert_eq!(c.len(), 2);
        assert_eq!(c.get(b"cd"), Some(&[3u32][..]));
        assert_eq!(c.get(b"ef"), None);
    }

    #[test]
    fn keeps_pieces_up_to_max_piece_bytes() {
        // Room for 128 entries: arenas of 4 KiB of piece bytes.
        let mut c = LongCache::new(128);
        let rule = vec![b'-'; MAX_PIECE];
        let longer = vec![b' '; MAX_PIECE + 1];
        c.insert(&rule, &[1, 2, 3, 4, 5]);
        c.insert(&longer, &[6]);
        assert_eq!(c.get(&rule), Some(&[1u32, 2, 3, 4, 5][..]));
        assert_eq!(c.get(&longer), None);
    }
}
