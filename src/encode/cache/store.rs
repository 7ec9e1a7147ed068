//! The memory of one short cache: its lines, its count of entries, and the arena of
//! ids of pieces with more than [`SHORT_IDS`]. Handles of a shared cache all hold
//! the same store; growing makes a new one.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

use crossbeam_utils::CachePadded;

use super::line::{self, Line, Slot, SHORT_IDS};
use crate::hugemem::ZeroedBuf;
use crate::piecekey;

/// What the handles of one table share: the lines and the spill arena, whose
/// capacities never change (growing makes a new store).
pub(super) struct Store {
    pub(super) lines: ZeroedBuf<Line>,
    /// The most entries an insert may add ([`entry_limit`]).
    pub(super) max_len: usize,
    /// Kept when the table grows.
    pub(super) spill: Arc<Spill>,
    pub(super) fill: CachePadded<Fill>,
}

/// What inserts write, on lines of their own ([`CachePadded`]).
///
/// Why: lookups read the store's table pointer and size (the encode loop once per run
/// of hits, the others every time). When the insert count shared their cache line,
/// each insert by one thread of a shared table took that line from the other thread's
/// core, and the other's next lookup waited for it.
#[derive(Debug, Default)]
pub(super) struct Fill {
    /// Entries held.
    pub(super) len: AtomicUsize,
    /// Set when an insert found the table at its load limit.
    pub(super) full: AtomicBool,
    /// The next 2 MiB block of `lines` for [`super::ShortCache::populate`] to fault in.
    pub(super) next_block: AtomicUsize,
}

/// The ids of pieces with more than [`SHORT_IDS`]. Writers reserve their range with
/// an atomic add (the stores of a grown table and its predecessor share it), then
/// write it before they publish the slot that points to it.
pub(super) struct Spill {
    pub(super) words: Box<[AtomicU32]>,
    /// Apart from `words`, which emits of spilled pieces read (see [`Fill`]).
    len: CachePadded<AtomicUsize>,
}

impl Spill {
    /// `None` where the memory cannot be had.
    pub(super) fn try_new(capacity: usize) -> Option<Self> {
        // Zeroed by the allocator (fresh pages, untouched until used), unlike a
        // `Box<[AtomicU32]>` built value by value.
        let zeros: Box<[u32]> = crate::hugemem::try_zeroed_u32s(capacity)?;
        // SAFETY: `AtomicU32` has the size, alignment and bit validity of `u32`.
        let words = unsafe { Box::from_raw(Box::into_raw(zeros) as *mut [AtomicU32]) };
        Some(Self {
            words,
            len: CachePadded::new(AtomicUsize::new(0)),
        })
    }

    /// Reserves `n` words; their start, or `None` when they do not fit.
    fn reserve(&self, n: usize) -> Option<usize> {
        let cap = self.words.len().min(u32::MAX as usize);
        self.len
            .fetch_update(Relaxed, Relaxed, |len| (len + n <= cap).then_some(len + n))
            .ok()
    }
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("lines", &self.lines.len())
            .field("len", &self.fill.len)
            .finish_non_exhaustive()
    }
}

impl Store {
    /// `None` where the memory cannot be had.
    pub(super) fn try_new(lines: usize, max_lines: usize, spill: Arc<Spill>) -> Option<Self> {
        Some(Self {
            lines: ZeroedBuf::try_huge(lines)?,
            max_len: entry_limit(lines, max_lines),
            spill,
            fill: CachePadded::default(),
        })
    }

    #[inline(always)]
    pub(super) fn line(&self, i: usize) -> *const Line {
        debug_assert!(i < self.lines.len());
        // SAFETY: callers mask `i` into the table.
        unsafe { self.lines.as_ptr().add(i) }
    }

    /// The slot of `key` if the store holds it: its line index and slot (0 or 1).
    pub(super) fn find(&self, key: u128, home: usize) -> Option<(usize, usize, [u32; 4])> {
        let mask = self.lines.len() - 1;
        let mut i = home;
        // A walk ends after every line: racing writers may fill a table past its
        // limit, to its last slot.
        for _ in 0..self.lines.len() {
            // SAFETY: `i` is masked into the table.
            let line = unsafe { line::load(self.line(i)) };
            for s in 0..2 {
                if line.keys[s] == key {
                    return Some((i, s, line.words[s]));
                }
            }
            // Inserts fill the first free slot of the walk, so a free slot ends it. A
            // slot with ids and no key yet is not free: another thread is publishing
            // it, and a piece inserted after it was claimed lies further on (ending
            // the walk there lost a thread's own insert until the other published).
            if line.keys[1] == 0 && line.words[1] == [0; 4] {
                return None;
            }
            i = (i + 1) & mask;
        }
        None
    }

    /// Writes `slot` into the first free slot of its walk. Without `racing` the
    /// caller holds the only handle.
    fn put(&self, slot: Slot, home: usize, racing: bool) -> Put {
        let mask = self.lines.len() - 1;
        let mut i = home;
        // Racing writers each check the limit before any of them adds to the count,
        // so together they may pass it, up to the last slot: a walk that finds every
        // line taken gives up rather than going round again.
        for _ in 0..self.lines.len() {
            // SAFETY: `i` is masked into the table.
            let line = unsafe { line::load(self.line(i)) };
            for s in 0..2 {
                // Slots are 32 bytes into a 64-byte aligned line.
                let p = self.line(i).cast_mut().cast::<Slot>().wrapping_add(s);
                if !racing {
                    if line.keys[s] == 0 {
                        // SAFETY: the slot is free and only this writer fills it.
                        unsafe { line::store(p, slot) };
                        return Put::Added;
                    }
                    continue;
                }
                if line.keys[s] == slot.key {
                    return Put::Present;
                }
                // A slot with ids but no key yet is being filled by another writer.
                // SAFETY: `p` is a live slot of this table; sharing checked the CPU.
                if line.keys[s] == 0 && line.words[s] == [0; 4] && unsafe { line::claim(p, slot) } {
                    return Put::Added;
                }
            }
            i = (i + 1) & mask;
        }
        Put::Full
    }

    /// Adds `key` with `ids` if there is room ([`entry_limit`], and the
    /// spill's capacity); true if the key is in the store afterwards. `racing`: other
    /// threads may be inserting too (a shared table); else the caller holds the only
    /// handle.
    pub(super) fn insert(&self, key: u128, hash: u64, ids: &[u32], racing: bool) -> bool {
        let home = (hash as usize) & (self.lines.len() - 1);
        if self.find(key, home).is_some() {
            return true;
        }
        let len = self.fill.len.load(Relaxed);
        if len + 1 > self.max_len {
            self.fill.full.store(true, Relaxed);
            return false;
        }
        let mut slot = Slot {
            key,
            ids: [0; SHORT_IDS],
            n: ids.len() as u32,
        };
        if ids.len() <= SHORT_IDS {
            slot.ids[..ids.len()].copy_from_slice(ids);
        } else {
            let Some(start) = self.spill.reserve(ids.len()) else {
                return false;
            };
            for (word, &id) in self.spill.words[start..].iter().zip(ids) {
                word.store(id, Relaxed);
            }
            slot.ids[0] = start as u32;
        }
        match self.put(slot, home, racing) {
            Put::Added => {
                self.fill.len.fetch_add(1, Relaxed);
                true
            }
            Put::Present => true,
            Put::Full => {
                self.fill.full.store(true, Relaxed);
                false
            }
        }
    }
}

/// What [`Store::put`] did.
#[derive(Debug, PartialEq, Eq)]
enum Put {
    Added,
    /// Racing, another writer added the key first.
    Present,
    /// Every slot of the walk was taken.
    Full,
}

/// The most entries a store of `lines` lines takes: one per pair (half its slots)
/// while it may still grow, as at 3/4 walks past the home line made en-small 20%
/// slower; 5/8 of its slots once it is at its size limit, where a piece left out is
/// looked up in the long cache, or merged again, at every occurrence, and the pieces
/// the extra room takes are the rarest (added last). With o200k the en corpus has
/// 579K distinct short pieces, more than the 524K of a 32 MB table at 1/2: warm
/// encodes of en, 310 -> 326 MB/s (`encode_bench`, medians of 4 alternating runs).
pub(super) fn entry_limit(lines: usize, max_lines: usize) -> usize {
    match lines >= max_lines {
        true => lines + lines / 4,
        false => lines,
    }
}

impl Store {
    /// Faults in the lines' memory ([`super::ShortCache::populate`]), taking 2 MiB
    /// blocks no other thread has taken; returns when every block is taken.
    pub(super) fn populate(&self) {
        let (lines, next) = (&self.lines, &self.fill.next_block);
        let blocks = lines.blocks();
        // A load first: a populated table's line is not written again.
        while next.load(Relaxed) < blocks {
            let block = next.fetch_add(1, Relaxed);
            if block < blocks && !lines.populate_block(block) {
                // The kernel cannot: leave the rest to ordinary faults.
                next.store(blocks, Relaxed);
            }
        }
    }

    /// A store of `factor` times the lines holding this one's entries, with the same
    /// spill.
    pub(super) fn grown(&self, factor: usize, max_lines: usize) -> Option<Self> {
        let old = self;
        let lines = old.lines.len().checked_mul(factor)?;
        let bigger = Store::try_new(lines, max_lines, Arc::clone(&old.spill))?;
        // Faulted in whole before the entries go in, which touch every page at once:
        // each `put` reads its line first, so a huge page was mapped to the shared zero
        // page, then copied on the write, with a TLB flush. A first `encode` of each
        // document of the multilingual corpus (its table doubling 2 -> 32 MB) took
        // 5-9% less time this way (gpt2-hub 0.826 -> 0.748 s, OLMo 2 0.855 -> 0.794,
        // o200k 1.147 -> 1.089; medians of 3-4 interleaved fresh processes).
        bigger.populate();
        let mut copied = 0;
        for i in 0..old.lines.len() {
            // SAFETY: `i` is a line of the old table; lines are read as the `line`
            // module allows while other threads fill free slots.
            let line = unsafe { line::load(old.line(i)) };
            for s in 0..2 {
                let key = line.keys[s];
                if key != 0 {
                    let [a, b, c, n] = line.words[s];
                    let slot = Slot {
                        key,
                        ids: [a, b, c],
                        n,
                    };
                    bigger.put(
                        slot,
                        (piecekey::hash(key) as usize) & (bigger.lines.len() - 1),
                        false,
                    );
                    copied += 1;
                }
            }
        }
        bigger.fill.len.store(copied, Relaxed);
        Some(bigger)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(key: u128, id: u32) -> Slot {
        Slot {
            key,
            ids: [id, 0, 0],
            n: 1,
        }
    }

    /// A store whose every slot is taken: a lookup of another key and a put, by the
    /// only writer or by racing ones, end (they walked the table round forever).
    #[test]
    fn a_table_with_no_free_slot_ends_its_walks() {
        let spill = Arc::new(Spill::try_new(8).expect("memory"));
        let store = Store::try_new(2, 2, spill).expect("memory");
        for (k, home) in [(11, 0), (12, 0), (13, 1), (14, 1)] {
            assert_eq!(store.put(slot(k, k as u32), home, false), Put::Added);
        }
        for home in 0..2 {
            assert_eq!(store.find(99, home), None);
            assert_eq!(store.find(13, home).map(|(_, _, w)| w[0]), Some(13));
            assert_eq!(store.put(slot(99, 1), home, false), Put::Full);
            #[cfg(target_arch = "x86_64")]
            {
                assert_eq!(store.put(slot(99, 1), home, true), Put::Full);
                assert_eq!(store.put(slot(12, 1), home, true), Put::Present);
            }
        }
    }
}
