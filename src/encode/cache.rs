//! A bounded cache of piece bytes -> ids.
//!
//! Keys and ids live in two arenas and the table holds offsets, so a hit allocates
//! nothing and a miss only appends to the arenas. When a limit is reached nothing
//! more is added: real text repeats a small set of pieces, which come early, and
//! memory stays bounded on any input. All
//! capacity is reserved up front, so a cache never grows after it is made (the
//! `encode_iterable` memory test forbids new allocations while iterating).

use std::hash::{BuildHasher, Hasher};

use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;

/// Pieces longer than this are not cached (they are rare and costly to store).
pub const MAX_PIECE: usize = 64;

/// The front: a small two-way set-associative table of short pieces (up to 15
/// bytes) of up to three ids, probed before the main table. Why: a hit in the main
/// table reads three cache lines (control bytes, entry, key arena) spread over
/// megabytes, while a front bucket is one 64-byte line in an array that stays in L2.
/// On en-small the top 4K pieces are 85% of all pieces and the top 16K 94%; with a
/// direct-mapped front of one-id pieces 10% of lookups still went to the main table
/// and those misses were ~40% of the encoding time (perf).
const FRONT_LEN: usize = 15;
const FRONT_IDS: usize = 3;

/// Buckets for a cache of `max_entries`: 64K buckets (4 MB, 128K pieces) for the big
/// per-thread caches, 1K (64 KB) for the streaming encoder's small one, which must
/// not map new memory while iterating. Measured on en-small with gpt2 (one thread,
/// CPU time, best of 10): 8K buckets ~120 MB/s, 32K ~150 MB/s, 64K ~177 MB/s (with
/// the prefetch in `Encoder::encode_ordinary_into`).
fn front_buckets(max_entries: usize) -> usize {
    if max_entries <= 1 << 13 {
        1 << 10
    } else {
        (max_entries / 4).next_power_of_two().min(1 << 16)
    }
}

/// One front entry: the piece's bytes with its length in the top byte, so a key
/// compares in one 128-bit equality; `n == 0` marks an empty entry.
#[derive(Clone, Copy, Debug, Default)]
struct Front {
    key: u128,
    n: u32,
    ids: [u32; FRONT_IDS],
}

#[derive(Clone, Copy, Debug, Default)]
#[repr(align(64))]
struct Bucket([Front; 2]);

/// The front key of `piece`: its bytes little-endian with the length in byte 15.
/// Built from a few fixed-size loads rather than a variable-length copy, which
/// compiled to a `memcpy` call per piece (perf: 16% of encoding).
#[inline]
fn front_key(piece: &[u8]) -> Option<u128> {
    let n = piece.len();
    if n == 0 || n > FRONT_LEN {
        return None;
    }
    let u32_at = |i: usize| {
        u64::from(u32::from_le_bytes([
            piece[i],
            piece[i + 1],
            piece[i + 2],
            piece[i + 3],
        ]))
    };
    let u64_at = |i: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&piece[i..i + 8]);
        u64::from_le_bytes(b)
    };
    // Overlapping loads: the bytes they share are equal, so OR-ing them is exact.
    let (lo, hi) = if n >= 8 {
        let hi = if n > 8 {
            u64_at(n - 8) >> ((16 - n) * 8)
        } else {
            0
        };
        (u64_at(0), hi)
    } else if n >= 4 {
        (u32_at(0) | (u32_at(n - 4) << ((n - 4) * 8)), 0)
    } else {
        let b = |i: usize| u64::from(piece[i]) << (i * 8);
        (b(0) | b(n / 2) | b(n - 1), 0)
    };
    Some(u128::from(lo) | (u128::from(hi) << 64) | ((n as u128) << 120))
}

#[inline]
fn front_hash(key: u128) -> u64 {
    let lo = key as u64;
    let hi = (key >> 64) as u64;
    (lo.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ hi.wrapping_mul(0xc2b2_ae3d_27d4_eb4f))
        .rotate_left(29)
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
    front: Box<[Bucket]>,
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

impl PieceCache {
    /// A cache of at most `max_entries` pieces.
    pub fn new(max_entries: usize) -> Self {
        let max_entries = max_entries.max(1);
        Self {
            front: vec![Bucket::default(); front_buckets(max_entries)].into_boxed_slice(),
            table: HashTable::with_capacity(max_entries),
            keys: Vec::with_capacity(max_entries * 16),
            ids: Vec::with_capacity(max_entries * 4),
            max_entries,
        }
    }

    #[inline]
    fn bucket(&self, key: u128) -> usize {
        (front_hash(key) as usize) & (self.front.len() - 1)
    }

    /// Puts a piece in its bucket: in the first way if that is free, else in the
    /// second, replacing whatever was there. A piece reaches the first way only by
    /// being found again in the second (see `get`), so one-off pieces never push out
    /// the frequent ones: inserting at the front instead left 570K of en-small's
    /// 4.2M lookups missing the front.
    fn set_front(&mut self, key: u128, ids: &[u32]) {
        if ids.is_empty() || ids.len() > FRONT_IDS {
            return;
        }
        let mut e = Front {
            key,
            n: ids.len() as u32,
            ids: [0; FRONT_IDS],
        };
        e.ids[..ids.len()].copy_from_slice(ids);
        let b = self.bucket(key);
        let bucket = &mut self.front[b].0;
        if bucket[0].n == 0 || bucket[0].key == key {
            bucket[0] = e;
        } else {
            bucket[1] = e;
        }
    }

    /// Asks the CPU to start loading `piece`'s front bucket, so that a `get` a few
    /// pieces later finds it in cache: the bucket load was the largest single cost
    /// of encoding (a 2 MB table, one random line per piece).
    #[inline]
    pub fn prefetch(&self, piece: &[u8]) {
        if let Some(key) = front_key(piece) {
            let bucket: *const Bucket = &self.front[self.bucket(key)];
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a prefetch is only a hint; it never faults and reads nothing.
            unsafe {
                std::arch::x86_64::_mm_prefetch(
                    bucket.cast::<i8>(),
                    std::arch::x86_64::_MM_HINT_T0,
                );
            }
            #[cfg(not(target_arch = "x86_64"))]
            let _ = bucket;
        }
    }

    #[inline]
    pub fn get(&mut self, piece: &[u8]) -> Option<&[u32]> {
        let key = front_key(piece);
        if let Some(key) = key {
            let b = self.bucket(key);
            let bucket = &mut self.front[b].0;
            if bucket[0].n != 0 && bucket[0].key == key {
                return Some(&self.front[b].0[0].ids[..self.front[b].0[0].n as usize]);
            }
            if bucket[1].n != 0 && bucket[1].key == key {
                // Seen twice: promote to the first way.
                bucket.swap(0, 1);
                return Some(&self.front[b].0[0].ids[..self.front[b].0[0].n as usize]);
            }
        }
        let h = hash(piece);
        let keys = &self.keys;
        let e = *self.table.find(h, |e| {
            e.hash == h && &keys[e.key as usize..(e.key + e.key_len) as usize] == piece
        })?;
        let (start, end) = (e.ids as usize, (e.ids + e.ids_len) as usize);
        if let Some(key) = key {
            let mut tmp = [0u32; FRONT_IDS];
            if end - start <= FRONT_IDS {
                tmp[..end - start].copy_from_slice(&self.ids[start..end]);
                self.set_front(key, &tmp[..end - start]);
            }
        }
        Some(&self.ids[start..end])
    }

    pub fn insert(&mut self, piece: &[u8], ids: &[u32]) {
        if piece.len() > MAX_PIECE {
            return;
        }
        let h = hash(piece);
        // The front may always be overwritten: it is a cache of the cache.
        if let Some(key) = front_key(piece) {
            self.set_front(key, ids);
        }
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

    pub fn clear(&mut self) {
        self.front.fill(Bucket::default());
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

    #[test]
    fn front_key_is_bytes_and_length() {
        for n in 1..=FRONT_LEN {
            let piece: Vec<u8> = (0..n as u8)
                .map(|i| i.wrapping_mul(37).wrapping_add(1))
                .collect();
            let mut want = [0u8; 16];
            want[..n].copy_from_slice(&piece);
            want[15] = n as u8;
            assert_eq!(
                front_key(&piece),
                Some(u128::from_le_bytes(want)),
                "length {n}"
            );
        }
        assert_eq!(front_key(b""), None);
        assert_eq!(front_key(&[0u8; 16]), None);
    }
}
