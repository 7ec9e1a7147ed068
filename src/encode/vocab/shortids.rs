//! The ordinary tokens of 1 to 15 bytes by `piecekey` key: an open-addressed array
//! of `(key, id)` slots, with a byte per slot that holds 7 bits of the key's hash.
//!
//! Why not a `hashbrown` table: a lookup there reads a control group and then the
//! entry, and the entry cannot be prefetched. Loading o200k looks up ~1.2M splits of
//! its tokens to find its pairs, which took 75 ms of the 140 ms load on one thread;
//! here they are prefetched a few tokens ahead. Why the tag bytes: most lookups
//! miss (88% of the distinct pieces of the 116 MB English corpus are not o200k
//! tokens, and a cold encode looks each up), and a miss then ends in the tags (512
//! KB for o200k, in L2) without reading a 32-byte slot: 30 -> ~16 ns a miss, as
//! `hashbrown`'s control bytes do.

use crate::hugemem::ZeroedBuf;

/// One slot: a key (0 when free: no key is 0) and its id.
type Slot = (u128, u64);

pub struct ShortIds {
    /// Per slot: 0 when free, else [`tag`] of its key's hash.
    tags: Box<[u8]>,
    /// Slots in use.
    len: usize,
    slots: ZeroedBuf<Slot>,
    /// `64 - log2(slots)`: a hash's top bits pick the home slot.
    shift: u32,
}

/// A used slot's tag byte: the hash's low 7 bits, with the top bit set.
#[inline]
fn tag(hash: u64) -> u8 {
    0x80 | (hash as u8 & 0x7f)
}

impl std::fmt::Debug for ShortIds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShortIds")
            .field("slots", &self.slots.len())
            .finish()
    }
}

impl ShortIds {
    /// An empty table with room for `n` entries.
    pub fn with_capacity(n: usize) -> Self {
        // At most 5/8 full, so a probe rarely runs past a few slots.
        let n_slots = (n * 8 / 5 + 1).next_power_of_two().max(16);
        Self {
            tags: vec![0; n_slots].into_boxed_slice(),
            len: 0,
            slots: ZeroedBuf::huge(n_slots),
            shift: 64 - n_slots.trailing_zeros(),
        }
    }

    /// Adds `key` (not 0, and not in the table yet; `hash` is its `piecekey::hash`) with
    /// its `id`. The table must have room (`with_capacity`).
    pub fn insert(&mut self, key: u128, hash: u64, id: u32) {
        debug_assert!(key != 0);
        // A full table would make probes for absent keys run forever.
        assert!(
            self.len < self.tags.len() * 5 / 8 + 1,
            "ShortIds::insert past the capacity it was made with"
        );
        self.len += 1;
        let mask = self.tags.len() - 1;
        let mut i = self.home(hash);
        while self.tags[i] != 0 {
            i = (i + 1) & mask;
        }
        self.tags[i] = tag(hash);
        self.slots.as_mut_slice()[i] = (key, u64::from(id));
    }

    /// A table of `entries`, given as `(key, hash, id)` with no key twice and none 0.
    #[cfg(test)]
    pub fn new(entries: &[(u128, u64, u32)]) -> Self {
        let mut table = Self::with_capacity(entries.len());
        for &(key, hash, id) in entries {
            table.insert(key, hash, id);
        }
        table
    }

    /// An empty table (vocabularies that never look a whole piece up).
    pub fn empty() -> Self {
        Self::with_capacity(0)
    }

    #[inline]
    fn home(&self, hash: u64) -> usize {
        (hash >> self.shift) as usize
    }

    /// Starts loading the slot where `hash`'s key would be (its tag byte is most
    /// likely in cache already).
    #[inline]
    pub fn prefetch(&self, hash: u64) {
        prefetch_at(self.slots.as_ptr(), self.home(hash));
    }

    /// Starts loading the tag byte a [`ShortIds::get`] of `hash` reads first.
    #[inline]
    pub fn prefetch_tag(&self, hash: u64) {
        prefetch_at(self.tags.as_ptr(), self.home(hash));
    }

    /// The id of `key` (`hash` is its `piecekey::hash`), if it is a token.
    #[inline]
    pub fn get(&self, key: u128, hash: u64) -> Option<u32> {
        let mask = self.tags.len() - 1;
        let want = tag(hash);
        let mut i = self.home(hash);
        loop {
            match self.tags[i] {
                0 => return None,
                t if t == want => {
                    let (k, id) = self.slots.as_slice()[i];
                    if k == key {
                        return Some(id as u32);
                    }
                }
                _ => {}
            }
            i = (i + 1) & mask;
        }
    }
}

/// Starts loading `base[i]` into the L1 cache (the callers pass a home slot, within
/// both the slots and the tags).
#[inline(always)]
fn prefetch_at<T>(base: *const T, i: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults, whatever the address; `wrapping_add` makes none
    // out of bounds.
    unsafe {
        let p = base.wrapping_add(i).cast::<i8>();
        std::arch::x86_64::_mm_prefetch(p, std::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (base, i);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::piecekey::{self, key_of};

    #[test]
    fn finds_every_entry_and_nothing_else() {
        let words: Vec<Vec<u8>> = (0..5000u32).map(|i| format!("w{i}").into_bytes()).collect();
        let entries: Vec<(u128, u64, u32)> = words
            .iter()
            .zip(0..)
            .map(|(w, id)| (key_of(w), piecekey::hash(key_of(w)), id))
            .collect();
        let table = ShortIds::new(&entries);
        for &(key, hash, id) in &entries {
            assert_eq!(table.get(key, hash), Some(id));
        }
        for i in 5000..6000u32 {
            let key = key_of(format!("w{i}").as_bytes());
            assert_eq!(table.get(key, piecekey::hash(key)), None);
        }
        let empty = ShortIds::empty();
        let key = key_of(b"w1");
        assert_eq!(empty.get(key, piecekey::hash(key)), None);
    }

    #[test]
    fn keys_with_one_hash_probe_past_each_other_and_wrap_around() {
        // The same hash for every key: one home (the last slot, so probes wrap to
        // the first), one tag; only the keys tell them apart.
        let hash = 0xf << 60 | 0x15;
        let keys: Vec<u128> = (1..=5u8).map(|i| key_of(&[b'a', i])).collect();
        let entries: Vec<(u128, u64, u32)> = keys
            .iter()
            .zip(10..)
            .map(|(&k, id)| (k, hash, id))
            .collect();
        let table = ShortIds::new(&entries);
        assert_eq!(table.tags.len(), 16);
        for (&k, id) in keys.iter().zip(10..) {
            assert_eq!(table.get(k, hash), Some(id));
        }
        assert_eq!(table.get(key_of(b"zz"), hash), None);
    }

    #[test]
    #[should_panic(expected = "past the capacity")]
    fn inserting_past_the_capacity_stops_before_the_table_is_full() {
        let mut table = ShortIds::with_capacity(1);
        for i in 0..16u8 {
            let key = key_of(&[b'k', i]);
            table.insert(key, piecekey::hash(key), u32::from(i));
        }
    }
}
