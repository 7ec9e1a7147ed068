//! A bounded cache of piece bytes -> ids for the pieces the short table
//! ([`super::short`]) cannot hold: longer than 15 bytes or of more than three ids.
//!
//! Keys and ids live in two arenas and the table holds offsets, so a hit allocates
//! nothing and a miss only appends to the arenas. When a limit is reached nothing
//! more is added: real text repeats a small set of pieces, which come early, and
//! memory stays bounded on any input. All capacity is reserved up front, so a cache never grows after it is made (the
//! `encode_iterable` memory test forbids new allocations while iterating).

use std::hash::{BuildHasher, Hasher};

use rustc_hash::FxBuildHasher;

use crate::error::{Error, Result};
use crate::hugemem::ZeroedBuf;

/// Pieces longer than this are not cached: one such piece (a run of a million
/// spaces) would fill the arenas. Up to 1 KiB keeps the rules and table borders of
/// text-art that repeat through a corpus: on the 116 MB English corpus, 4.8K pieces of
/// 65 to 1024 bytes that were merged again on every call (warm, gpt2: 343 -> 354 MB/s).
pub const MAX_PIECE: usize = 1024;

/// Arena room per entry: piece bytes and ids. Pieces of Chinese and Japanese text under
/// the Llama 3 pattern are long runs of letters (8.6 and 25 bytes a piece, 8+ ids);
/// with 16 bytes and 4 ids an entry the id arena filled at a third of the entries, and
/// warm encodes of the multilingual corpus merged 32% of its bytes again on every call.
/// The arena is reserved, not touched, up front: memory is used as it fills.
const KEY_BYTES_PER_ENTRY: usize = 32;
const IDS_PER_ENTRY: usize = 8;

/// The hash of a piece: what [`LongCache::prefetch`], `get` and `insert` take.
#[inline]
pub fn hash(piece: &[u8]) -> u64 {
    let mut h = FxBuildHasher.build_hasher();
    h.write(piece);
    h.finish()
}

/// The cache. Why this shape: a hit on the multilingual corpus (OLMo 2, warm) spent
/// 12% of the encode in four cache misses, a hashbrown table's control bytes, its
/// entry, the piece's bytes and its ids, each in a table or arena of megabytes. Here a
/// slot is 16 bytes of a table the encoder prefetches a batch ahead
/// ([`LongCache::prefetch`]), and an entry's ids and bytes lie together in one arena,
/// so a hit waits for at most one line.
#[derive(Debug)]
pub struct LongCache {
    /// Two words a slot: the piece's hash with its low bit set (0: free), then
    /// `offset | key_len << 32 | ids_len << 48` of its entry in `arena`.
    slots: ZeroedBuf<u64>,
    /// Slots - 1 (a power of two, at least twice the entries).
    mask: usize,
    /// The slot of a hash is its top bits, which Fx mixes best.
    shift: u32,
    /// Entries: the ids (little-endian words), then the piece's bytes.
    arena: Vec<u8>,
    len: usize,
    max_entries: usize,
}

/// The slot word of hash `h`: never 0, the mark of a free slot.
#[inline(always)]
fn tag(h: u64) -> u64 {
    h | 1
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
        let per_entry = 32 + KEY_BYTES_PER_ENTRY + 4 * IDS_PER_ENTRY;
        let oom = || Error::out_of_memory::<u8>("a piece cache", max_entries * per_entry);
        let slots_n = max_entries
            .checked_mul(2)
            .and_then(usize::checked_next_power_of_two)
            .ok_or_else(oom)?;
        let slots = ZeroedBuf::try_huge(2 * slots_n).ok_or_else(oom)?;
        let mut arena = Vec::new();
        arena
            .try_reserve_exact(max_entries * (KEY_BYTES_PER_ENTRY + 4 * IDS_PER_ENTRY))
            .map_err(|_| oom())?;
        Ok(Self {
            slots,
            mask: slots_n - 1,
            shift: 64 - slots_n.trailing_zeros(),
            arena,
            len: 0,
            max_entries,
        })
    }

    #[inline(always)]
    fn home(&self, h: u64) -> usize {
        // At least two slots, so `shift` is below 64.
        (h >> self.shift) as usize & self.mask
    }

    /// Starts loading the slot of hash `h` (of [`hash`]) into the cache.
    #[inline(always)]
    pub fn prefetch(&self, h: u64) {
        #[cfg(target_arch = "x86_64")]
        {
            let at = 2 * self.home(h);
            if at < self.slots.len() {
                // SAFETY: `at` is within the buffer; a prefetch has no other effect.
                unsafe {
                    std::arch::x86_64::_mm_prefetch(
                        self.slots.as_ptr().add(at).cast::<i8>(),
                        std::arch::x86_64::_MM_HINT_T0,
                    );
                }
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = h;
    }

    /// Appends the ids of `piece`, whose [`hash`] is `h`, to `out`: false if the
    /// cache lacks it.
    #[inline]
    pub fn extend(&self, piece: &[u8], h: u64, out: &mut Vec<u32>) -> bool {
        let slots = self.slots.as_slice();
        let want = tag(h);
        let mut i = self.home(h);
        loop {
            let (Some(&word), Some(&meta)) = (slots.get(2 * i), slots.get(2 * i + 1)) else {
                return false;
            };
            if word == 0 {
                return false;
            }
            if word == want {
                let at = (meta & 0xffff_ffff) as usize;
                let key_len = ((meta >> 32) & 0xffff) as usize;
                let ids_len = (meta >> 48) as usize;
                if key_len == piece.len() {
                    let ids_end = at + 4 * ids_len;
                    if self.arena.get(ids_end..ids_end + key_len) == Some(piece) {
                        let ids = self.arena.get(at..ids_end).unwrap_or_default();
                        out.extend(
                            ids.chunks_exact(4)
                                .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]])),
                        );
                        return true;
                    }
                }
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Adds `piece` (whose [`hash`] is `h`, and which the cache lacks) and its ids,
    /// unless the cache is full.
    pub fn insert(&mut self, piece: &[u8], h: u64, ids: &[u32]) {
        let bytes = 4 * ids.len() + piece.len();
        if piece.len() > MAX_PIECE
            || ids.len() > MAX_PIECE
            || self.len >= self.max_entries
            || self.arena.len() + bytes > self.arena.capacity()
        {
            // Full: keep what is there rather than start over. Frequent pieces show up
            // early, so the first pieces seen are the ones worth keeping; emptying the
            // cache instead threw the hot pieces out every 64K new ones (en-small has
            // 116K distinct pieces, and re-merging them was the main cost).
            return;
        }
        let mut i = self.home(h);
        let slots = self.slots.as_mut_slice();
        // At most half the slots are taken, so a free one comes.
        while slots.get(2 * i).is_some_and(|&w| w != 0) {
            i = (i + 1) & self.mask;
        }
        let at = self.arena.len() as u64;
        let meta = at | ((piece.len() as u64) << 32) | ((ids.len() as u64) << 48);
        if let Some(slot) = slots.get_mut(2 * i..2 * i + 2) {
            slot.copy_from_slice(&[tag(h), meta]);
            for id in ids {
                self.arena.extend_from_slice(&id.to_le_bytes());
            }
            self.arena.extend_from_slice(piece);
            self.len += 1;
        }
    }

    /// The ids of `piece`, if cached (for tests).
    #[cfg(test)]
    pub fn get(&self, piece: &[u8]) -> Option<Vec<u32>> {
        let mut out = Vec::new();
        self.extend(piece, hash(piece), &mut out).then_some(out)
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hit_miss_and_bound() {
        let mut c = LongCache::new(2);
        let put = |c: &mut LongCache, p: &[u8], ids: &[u32]| c.insert(p, hash(p), ids);
        put(&mut c, b"ab", &[1, 2]);
        assert_eq!(c.get(b"ab"), Some(vec![1, 2]));
        assert_eq!(c.get(b"a"), None);
        put(&mut c, b"cd", &[3]);
        put(&mut c, b"ef", &[4]);
        // Full: the first pieces stay, the new one is not added.
        assert_eq!(c.len(), 2);
        assert_eq!(c.get(b"cd"), Some(vec![3]));
        assert_eq!(c.get(b"ef"), None);
    }

    #[test]
    fn keeps_pieces_up_to_max_piece_bytes() {
        // Room for 128 entries: arenas of 4 KiB of piece bytes.
        let mut c = LongCache::new(128);
        let rule = vec![b'-'; MAX_PIECE];
        let longer = vec![b' '; MAX_PIECE + 1];
        c.insert(&rule, hash(&rule), &[1, 2, 3, 4, 5]);
        c.insert(&longer, hash(&longer), &[6]);
        assert_eq!(c.get(&rule), Some(vec![1, 2, 3, 4, 5]));
        assert_eq!(c.get(&longer), None);
    }

    #[test]
    fn equal_hashes_and_full_probe_chains_keep_pieces_apart() {
        // Every piece under one hash: found by its bytes along the chain, and a
        // piece that is not there stops at the first free slot.
        let mut c = LongCache::new(64);
        let pieces: Vec<Vec<u8>> = (0..40u32)
            .map(|i| format!("piece number {i:04}").into_bytes())
            .collect();
        for (i, p) in pieces.iter().enumerate() {
            c.insert(p, 7, &[i as u32, 1000 + i as u32]);
        }
        for (i, p) in pieces.iter().enumerate() {
            let mut out = vec![9];
            assert!(c.extend(p, 7, &mut out));
            assert_eq!(out, [9, i as u32, 1000 + i as u32]);
        }
        let mut out = Vec::new();
        assert!(!c.extend(b"piece number 9999", 7, &mut out));
        assert!(!c.extend(&pieces[0][..5], 7, &mut out));
        assert!(out.is_empty());
    }

    #[test]
    fn a_one_entry_cache_holds_one_piece() {
        let mut c = LongCache::new(1);
        for (p, id) in [(&b"first long piece"[..], 1), (b"second long piece", 2)] {
            c.insert(p, hash(p), &[id]);
        }
        assert_eq!(c.get(b"first long piece"), Some(vec![1]));
        assert_eq!(c.get(b"second long piece"), None);
    }
}
