//! A bounded cache of piece bytes -> ids.
//!
//! Keys and ids live in two arenas and the table holds offsets, so a hit allocates
//! nothing and a miss only appends to the arenas. When a limit is reached the cache
//! is emptied (keeping its capacity): real text repeats a small set of pieces, so
//! it refills with what matters, and memory stays bounded on any input. All
//! capacity is reserved up front, so a cache never grows after it is made (the
//! `encode_iterable` memory test forbids new allocations while iterating).

use std::hash::{BuildHasher, Hasher};

use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;

/// Pieces longer than this are not cached (they are rare and costly to store).
pub const MAX_PIECE: usize = 64;

/// Front slots: a direct-mapped table of short pieces that are one token. Why: a hit
/// in the main table reads three cache lines (control bytes, entry, key arena) spread
/// over megabytes; a front slot is one line in an 80 KB array that stays in L2, and
/// the few thousand most frequent pieces (most of any text) live there.
const FRONT_SLOTS: usize = 1 << 12;
const FRONT_LEN: usize = 15;

#[derive(Clone, Copy, Debug, Default)]
struct Front {
    len: u8,
    bytes: [u8; FRONT_LEN],
    id: u32,
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    hash: u64,
    key: u32,
    key_len: u32,
    ids: u32,
    ids_len: u32,
}

#[derive(Debug)]
pub struct PieceCache {
    front: Box<[Front]>,
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

fn set_front(f: &mut Front, piece: &[u8], id: u32) {
    if piece.len() <= FRONT_LEN && !piece.is_empty() {
        f.len = piece.len() as u8;
        f.bytes[..piece.len()].copy_from_slice(piece);
        f.id = id;
    }
}

impl PieceCache {
    /// A cache of at most `max_entries` pieces.
    pub fn new(max_entries: usize) -> Self {
        let max_entries = max_entries.max(1);
        Self {
            front: vec![Front::default(); FRONT_SLOTS].into_boxed_slice(),
            table: HashTable::with_capacity(max_entries),
            keys: Vec::with_capacity(max_entries * 16),
            ids: Vec::with_capacity(max_entries * 4),
            max_entries,
        }
    }

    #[inline]
    pub fn get(&mut self, piece: &[u8]) -> Option<&[u32]> {
        let h = hash(piece);
        let slot = (h as usize) & (FRONT_SLOTS - 1);
        let f = &self.front[slot];
        if f.len != 0 && usize::from(f.len) == piece.len() && &f.bytes[..piece.len()] == piece {
            return Some(std::slice::from_ref(&self.front[slot].id));
        }
        let keys = &self.keys;
        let e = *self.table.find(h, |e| {
            e.hash == h && &keys[e.key as usize..(e.key + e.key_len) as usize] == piece
        })?;
        let ids = &self.ids[e.ids as usize..(e.ids + e.ids_len) as usize];
        if let [id] = ids {
            set_front(&mut self.front[slot], piece, *id);
        }
        Some(ids)
    }

    pub fn insert(&mut self, piece: &[u8], ids: &[u32]) {
        if piece.len() > MAX_PIECE {
            return;
        }
        if self.table.len() >= self.max_entries
            || self.keys.len() + piece.len() > self.keys.capacity()
            || self.ids.len() + ids.len() > self.ids.capacity()
        {
            self.clear();
        }
        let entry = Entry {
            hash: hash(piece),
            key: self.keys.len() as u32,
            key_len: piece.len() as u32,
            ids: self.ids.len() as u32,
            ids_len: ids.len() as u32,
        };
        if let [id] = ids {
            set_front(
                &mut self.front[(entry.hash as usize) & (FRONT_SLOTS - 1)],
                piece,
                *id,
            );
        }
        self.keys.extend_from_slice(piece);
        self.ids.extend_from_slice(ids);
        self.table.insert_unique(entry.hash, entry, |e| e.hash);
    }

    pub fn clear(&mut self) {
        self.front.fill(Front::default());
        self.table.clear();
        self.keys.clear();
        self.ids.clear();
    }

    pub fn len(&self) -> usize {
        self.table.len()
    }

    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hit_miss_and_bound() {
        let mut c = PieceCache::new(2);
        c.insert(b"ab", &[1, 2]);
        assert_eq!(c.get(b"ab"), Some(&[1u32, 2][..]));
        assert_eq!(c.get(b"a"), None);
        c.insert(b"cd", &[3]);
        c.insert(b"ef", &[4]);
        assert!(c.len() <= 2);
        assert_eq!(c.get(b"ef"), Some(&[4u32][..]));
    }
}
