//! The ordinary tokens of 1 to 15 bytes by `piecekey` key: an open-addressed array
//! of `(key, id)` slots, so a lookup reads one cache line, which can be prefetched.
//!
//! Why not a `hashbrown` table: a lookup there reads a control group and then the
//! entry, two misses where the table is larger than the cache (o200k's is 6 MB).
//! Loading o200k looks up ~1.2M splits of its tokens to find its pairs, and that
//! took 75 ms of the 140 ms load on one thread; a cold encode looks every new piece
//! up here before merging it.

use crate::hugemem::ZeroedBuf;

/// One slot: a key (0 when free: no key is 0) and its id.
type Slot = (u128, u64);

pub struct ShortIds {
    slots: ZeroedBuf<Slot>,
    /// `64 - log2(slots)`: a hash's top bits pick the home slot.
    shift: u32,
}

impl std::fmt::Debug for ShortIds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShortIds")
            .field("slots", &self.slots.len())
            .finish()
    }
}

impl ShortIds {
    /// A table of `entries`, given as `(key, hash, id)` with no key twice and none 0.
    pub fn new(entries: &[(u128, u64, u32)]) -> Self {
        // At most 5/8 full, so a probe rarely runs past its home line.
        let n_slots = (entries.len() * 8 / 5 + 1).next_power_of_two().max(16);
        let mut table = Self {
            slots: ZeroedBuf::huge(n_slots),
            shift: 64 - n_slots.trailing_zeros(),
        };
        for &(key, hash, id) in entries {
            debug_assert!(key != 0);
            let mut i = table.home(hash);
            let slots = table.slots.as_mut_slice();
            while slots[i].0 != 0 {
                i = (i + 1) & (n_slots - 1);
            }
            slots[i] = (key, u64::from(id));
        }
        table
    }

    /// An empty table (vocabularies that never look a whole piece up).
    pub fn empty() -> Self {
        Self::new(&[])
    }

    #[inline]
    fn home(&self, hash: u64) -> usize {
        (hash >> self.shift) as usize
    }

    /// Starts loading the line where `hash`'s key would be.
    #[inline]
    pub fn prefetch(&self, hash: u64) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `home` is below the slot count; a prefetch never faults.
        unsafe {
            let p = self.slots.as_ptr().add(self.home(hash));
            std::arch::x86_64::_mm_prefetch(p.cast::<i8>(), std::arch::x86_64::_MM_HINT_T0);
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = hash;
    }

    /// The id of `key` (`hash` is its `short_hash`), if it is a token.
    #[inline]
    pub fn get(&self, key: u128, hash: u64) -> Option<u32> {
        let slots = self.slots.as_slice();
        let mask = slots.len() - 1;
        let mut i = self.home(hash);
        loop {
            let (k, id) = slots[i];
            if k == key {
                return Some(id as u32);
            }
            if k == 0 {
                return None;
            }
            i = (i + 1) & mask;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::short::short_hash;
    use crate::piecekey::key_of;

    #[test]
    fn finds_every_entry_and_nothing_else() {
        let words: Vec<Vec<u8>> = (0..5000u32).map(|i| format!("w{i}").into_bytes()).collect();
        let entries: Vec<(u128, u64, u32)> = words
            .iter()
            .zip(0..)
            .map(|(w, id)| (key_of(w), short_hash(key_of(w)), id))
            .collect();
        let table = ShortIds::new(&entries);
        for &(key, hash, id) in &entries {
            assert_eq!(table.get(key, hash), Some(id));
        }
        for i in 5000..6000u32 {
            let key = key_of(format!("w{i}").as_bytes());
            assert_eq!(table.get(key, short_hash(key)), None);
        }
        let empty = ShortIds::empty();
        let key = key_of(b"w1");
        assert_eq!(empty.get(key, short_hash(key)), None);
    }
}
