//! One thread's piece counts, keyed and stored so that counting a piece costs a few
//! instructions and no waiting on memory.
//!
//! Why not simply `FxMap<&[u8], u64>` (measured on en-small with gpt2, one thread):
//! - hashing each borrowed piece byte by byte and comparing it with a `memcmp` call
//!   on the text of the key's first occurrence cost about a quarter of the time.
//!   Nearly all pieces are at most 15 bytes; packed with their length into a `u128`
//!   they hash in one multiply and compare in one instruction, without reading the
//!   text again. Longer pieces (under 0.2% of them) keep the borrowed key.
//! - half the time went to cache misses: ~120,000 distinct pieces fill a table of
//!   several MB, and the rarer 15% of pieces miss the cache. A lookup's load was
//!   followed by a branch on it, so the CPU waited for each miss in turn. Here each
//!   piece's slot is prefetched when the piece is seen and the piece is counted
//!   `LAG` pieces later, so the misses overlap with useful work.
//!
//! Together: ~138 -> ~270 MB/s. The table in huge pages and sized from the text, the
//! rare paths out of line, `LAG` 32 and `WordCounts` built as an arena rather than
//! one boxed key per word: ~275 -> ~415-437 MB/s (same measure). Not used, for no gain
//! beyond a few percent of noise: a second table with 16-byte slots for pieces of
//! <= 7 bytes (86% of them), a larger first table, a stronger hash for the hashbrown
//! version.

use hashbrown::HashMap;
use rustc_hash::FxBuildHasher;

use crate::hugemem::ZeroedBuf;
use crate::piecekey::{hash, key_at, KEY_LEN};

/// Counts of pieces longer than [`SHORT`], keyed by a copy of their bytes.
///
/// Why copies, not slices of the mapped input: the text a piece comes from may not
/// outlive the count (decoded JSON strings, decompressed blocks), and a mapped file's
/// pages are released behind the count; borrowed keys read them back in when the
/// counts are collected, scattered over the whole file (en, 116 MB: 99 MiB of the
/// file resident at the end). Long pieces are under 0.2% of pieces, and a copy is
/// made only the first time a thread sees one.
pub(super) type LongCounts = HashMap<Box<[u8]>, u64, FxBuildHasher>;

/// Pieces of at most this many bytes are packed into a `u128` key.
const SHORT: usize = KEY_LEN;
/// How many pieces ahead a slot is prefetched.
const LAG: usize = 32;

#[derive(Default)]
pub(crate) struct PieceCounts {
    short: ShortCounts,
    /// Short pieces whose slot is being prefetched, each counted `LAG` pieces later,
    /// when its slot has arrived in cache; key 0 marks a free entry.
    ring: [(u128, usize); LAG],
    next: usize,
    long: LongCounts,
}

impl PieceCounts {
    /// Counts sized for a thread that sees `share` bytes of a text read by `threads`
    /// threads, so that the table rarely grows (each doubling rehashes everything and
    /// zeroes new memory); kept at most half full, it starts at 128 MB at most (what a
    /// gigabyte of web text needs) and grows from there.
    ///
    /// - Up to tens of MB, English has about one distinct piece per 160 bytes
    ///   (en-small: 116,748 in 18.8 MB), and a thread sees more than its share of
    ///   them (half of en-small has 65%): a table for twice its share did not grow,
    ///   which had taken 2 of the 21 ms of a 2-thread count of en-small.
    /// - Past that, Heaps' law holds (OpenWebText: 3.45 n^0.62 distinct pieces in n
    ///   bytes), for a thread's share as for a text of that size. Started at 32 MB
    ///   (the former limit), the table of a 1 GB unit of a distributed count (1.6M
    ///   distinct pieces) doubled twice, and zeroing the new huge pages took 8% of the
    ///   unit's time (perf, owt-12G).
    ///
    /// `None` where not even a small table's memory can be had (a large one that
    /// cannot be had is left to grow from a small one, as far as memory allows).
    pub(crate) fn for_share(share: usize, threads: usize) -> Option<Self> {
        let seen = if threads > 1 { 2 * share } else { share };
        let heaps = 3.45 * (share as f64).powf(0.62);
        let distinct = (seen / 160).min(heaps as usize);
        let slots = (2 * distinct).next_power_of_two().clamp(1 << 12, 1 << 22);
        let short = ShortCounts::try_with_slots(slots, 0)
            .or_else(|| ShortCounts::try_with_slots(1 << 12, 0))?;
        Some(Self {
            short,
            ..Self::default()
        })
    }

    /// Whether a table could not grow (memory ran out) since these counts were made:
    /// they are wrong then, and the caller fails.
    pub(crate) fn failed(&self) -> bool {
        self.short.failed
    }

    /// Counts one occurrence of `piece`, a slice of `text` (when it is, its key is one
    /// unaligned 16-byte load from `text` instead of a copy).
    /// The rare cases are out of line so that this stays small enough to be inlined
    /// into the scanner's loop.
    #[inline(always)]
    pub(crate) fn add(&mut self, text: &[u8], piece: &[u8]) {
        if piece.len() > SHORT {
            self.add_long(piece);
            return;
        }
        // Once per turn of the ring: room for the queued keys and the next turn's.
        if self.next == 0 && self.short.needs_room(2 * LAG) {
            self.grow();
        }
        let key = key_at(text, piece);
        let home = self.short.home(key);
        self.short.prefetch(home);
        let (old, old_home) = std::mem::replace(&mut self.ring[self.next], (key, home));
        self.next = (self.next + 1) % LAG;
        if old != 0 {
            self.short.add_at(old, 1, old_home);
        }
    }

    #[cold]
    #[inline(never)]
    fn add_long(&mut self, piece: &[u8]) {
        self.add_long_n(piece, 1);
    }

    fn add_long_n(&mut self, piece: &[u8], n: u64) {
        if let Some(count) = self.long.get_mut(piece) {
            *count += n;
            return;
        }
        if self.long.len() == self.long.capacity() && self.long.try_reserve(1).is_err() {
            self.short.failed = true;
            return;
        }
        self.long.insert(piece.into(), n);
    }

    /// Adds `n` occurrences of `piece`, a slice of `text`, at once and without the
    /// ring: the summing of saved counts (`sum.rs`), whose caller prefetches the slots
    /// of the words a few records ahead ([`PieceCounts::prefetch_piece`]). Any bytes,
    /// the empty word among them (kept with the long pieces: it has no key).
    #[inline]
    pub(crate) fn add_n(&mut self, text: &[u8], piece: &[u8], n: u64) {
        if piece.is_empty() || piece.len() > SHORT {
            self.add_long_n(piece, n);
        } else {
            self.short.add(key_at(text, piece), n);
        }
    }

    /// Asks for the slot of `piece` (a slice of `text`) without waiting for it.
    #[inline]
    pub(crate) fn prefetch_piece(&self, text: &[u8], piece: &[u8]) {
        if !piece.is_empty() && piece.len() <= SHORT {
            self.short.prefetch(self.short.home(key_at(text, piece)));
        }
    }

    /// Counts sized for about `words` distinct short pieces.
    pub(crate) fn for_words(words: usize) -> Option<Self> {
        let slots = words.saturating_mul(2).next_power_of_two().max(1 << 12);
        Some(Self {
            short: ShortCounts::try_with_slots(slots, 0)?,
            ..Self::default()
        })
    }

    /// How many distinct pieces these hold (the queued ones not yet counted).
    pub(crate) fn distinct(&self) -> usize {
        self.short.len() + self.long.len()
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        self.flush();
        self.short.make_room(2 * LAG);
    }

    /// Counts the queued pieces.
    fn flush(&mut self) {
        for k in 0..LAG {
            let (key, home) = std::mem::take(&mut self.ring[(self.next + k) % LAG]);
            if key != 0 {
                self.short.add_at(key, 1, home);
            }
        }
        self.next = 0;
    }

    /// The table of short pieces and the map of long ones, every queued piece counted.
    pub(super) fn into_tables(mut self) -> (ShortCounts, LongCounts) {
        self.flush();
        (self.short, self.long)
    }

    /// Calls `f` with each distinct piece's bytes and count.
    #[cfg(test)]
    pub(crate) fn for_each(&mut self, f: impl FnMut(&[u8], u64)) {
        self.flush();
        self.each_counted(f);
    }

    /// Calls `f` with each counted piece's bytes and count: all of them where nothing
    /// is queued (counts added by `add_n` alone, which queues none).
    pub(crate) fn each_counted(&self, mut f: impl FnMut(&[u8], u64)) {
        for &(key, n) in self.short.occupied() {
            let bytes = key.to_le_bytes();
            f(&bytes[..usize::from(bytes[15])], n);
        }
        for (piece, &n) in &self.long {
            f(piece, n);
        }
    }
}

/// Open addressing with linear probing; key 0 marks an empty slot (a packed key has
/// its length, at least 1, in the top byte). At most half full. In huge pages once
/// large (`hugemem`): en-small's 116K pieces fill 8 MB.
pub(super) struct ShortCounts {
    slots: ZeroedBuf<(u128, u64)>,
    len: usize,
    /// `64 - log2(slots)`: a home is the hash's top bits.
    shift: u32,
    /// Hash bits that are the same for every key of this table (a shard's table in
    /// `collect`), skipped so that its homes spread over all its slots.
    lead_bits: u32,
    /// The table could not grow (memory ran out): its counts are wrong, and were
    /// dropped so that counting goes on to its next check ([`PieceCounts::failed`]).
    failed: bool,
}

impl Default for ShortCounts {
    fn default() -> Self {
        Self::with_slots(1 << 12, 0)
    }
}

/// Which of `2^bits` shards `key` falls in.
#[inline(always)]
pub(super) fn shard_of(key: u128, bits: u32) -> usize {
    if bits == 0 {
        0
    } else {
        (hash(key) >> (64 - bits)) as usize
    }
}

impl ShortCounts {
    /// A table of `slots` slots (a power of two, at least 2) for keys whose hashes
    /// all share their top `lead_bits` bits.
    fn with_slots(slots: usize, lead_bits: u32) -> Self {
        Self::try_with_slots(slots, lead_bits)
            .unwrap_or_else(|| panic!("out of memory for a table of {slots} slots"))
    }

    /// [`ShortCounts::with_slots`], or `None` where the memory cannot be had.
    fn try_with_slots(slots: usize, lead_bits: u32) -> Option<Self> {
        Some(Self {
            slots: ZeroedBuf::try_huge(slots)?,
            len: 0,
            shift: 64 - slots.trailing_zeros(),
            lead_bits,
            failed: false,
        })
    }

    /// The top bits of the hash: a table's slots are in hash order, so the slots of
    /// one shard of the hashes are one range in every table, whatever its size.
    #[inline(always)]
    fn home(&self, key: u128) -> usize {
        ((hash(key) << self.lead_bits) >> self.shift) as usize
    }

    /// Whether `extra` more keys could make the table over half full.
    #[inline(always)]
    fn needs_room(&self, extra: usize) -> bool {
        (self.len + extra) * 2 > self.slots.len()
    }

    fn make_room(&mut self, extra: usize) {
        while self.needs_room(extra) {
            if !self.grow() {
                // Out of memory: empty the table so that counting can go on (and
                // fail at its next check) without probing a full table forever.
                self.slots.as_mut_slice().fill((0, 0));
                self.len = 0;
                self.failed = true;
            }
        }
    }

    /// Asks for slot `i`'s cache line without waiting for it.
    #[inline(always)]
    fn prefetch(&self, i: usize) {
        #[cfg(target_arch = "x86_64")]
        if let Some(slot) = self.slots.as_slice().get(i) {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            // SAFETY: a prefetch is only a hint: it never faults and changes nothing,
            // and the pointer comes from a live reference anyway.
            unsafe { _mm_prefetch::<_MM_HINT_T0>((slot as *const (u128, u64)).cast()) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = i;
    }

    #[inline(always)]
    fn add_at(&mut self, key: u128, n: u64, mut i: usize) {
        let slots = self.slots.as_mut_slice();
        let mask = slots.len() - 1;
        loop {
            let slot = &mut slots[i];
            if slot.0 == key {
                slot.1 += n;
                return;
            }
            if slot.0 == 0 {
                *slot = (key, n);
                self.len += 1;
                return;
            }
            i = (i + 1) & mask;
        }
    }

    /// Doubles the table. The old slots are read in hash order, so the new ones are
    /// written in order too, near each other.
    /// False, with the table as it was, where the memory cannot be had.
    fn grow(&mut self) -> bool {
        let Some(mut bigger) = Self::try_with_slots(self.slots.len() * 2, self.lead_bits) else {
            return false;
        };
        bigger.failed = self.failed;
        let old = std::mem::replace(self, bigger);
        for &(key, n) in old.occupied() {
            self.add(key, n);
        }
        true
    }

    /// Adds `n` to `key`'s count, growing the table first if it could be half full.
    pub(super) fn add(&mut self, key: u128, n: u64) {
        self.make_room(1);
        let home = self.home(key);
        self.add_at(key, n, home);
    }

    /// `key`'s count, 0 if absent.
    #[inline]
    pub(super) fn get(&self, key: u128) -> u64 {
        let slots = self.slots.as_slice();
        let mask = slots.len() - 1;
        let mut i = self.home(key);
        loop {
            let (k, n) = slots[i];
            if k == key || k == 0 {
                return if k == key { n } else { 0 };
            }
            i = (i + 1) & mask;
        }
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn occupied(&self) -> impl Iterator<Item = &(u128, u64)> {
        self.slots.as_slice().iter().filter(|(key, _)| *key != 0)
    }

    /// The slots that hold the keys of shard `shard` of `2^bits` (`shard_of`), with
    /// empty slots and other shards' keys among them: the shard's range of slots,
    /// where its keys have their homes, and the run of full slots just past it,
    /// where linear probing may have moved some. `2^bits` is at most `slot_count`.
    pub(super) fn shard_slots(
        &self,
        shard: usize,
        bits: u32,
    ) -> impl Iterator<Item = &(u128, u64)> {
        self.shard_ranges(shard, bits).into_iter().flatten()
    }

    /// The slots of [`ShortCounts::shard_slots`] as up to three slices, in order.
    pub(super) fn shard_ranges(&self, shard: usize, bits: u32) -> [&[(u128, u64)]; 3] {
        let slots = self.slots.as_slice();
        let n = slots.len();
        let per = n >> bits;
        let end = (shard + 1) * per;
        // With one shard the range is the whole table. With more, the run cannot
        // reach back round to the range: the table is at most half full.
        let run = if bits == 0 {
            0
        } else {
            (0..n)
                .take_while(|&k| slots[(end + k) & (n - 1)].0 != 0)
                .count()
        };
        let wrapped = (end + run).saturating_sub(n);
        [
            &slots[shard * per..end],
            &slots[end..(end + run).min(n)],
            &slots[..wrapped],
        ]
    }

    pub(super) fn slot_count(&self) -> usize {
        self.slots.len()
    }

    /// A table of at least `min_slots` slots for keys that all fall in one shard of
    /// `2^bits`.
    pub(super) fn for_shard(min_slots: usize, bits: u32) -> Self {
        Self::with_slots(min_slots.next_power_of_two().max(1 << 12), bits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_exact() {
        let text = b"ab\0ab\0\0abcdefghijklmnopqrstuvwxyz abcdefghijklmno";
        let mut counts = PieceCounts::default();
        for (start, end) in [
            (0, 2),
            (0, 3),
            (3, 5),
            (3, 6),
            (3, 7),
            (7, 22),
            (7, 33),
            (34, 49),
        ] {
            counts.add(text, &text[start..end]);
        }
        // Not a slice of `text`: packed by copying.
        counts.add(text, b"ab\0");
        counts.add(b"", b"abcdefghijklmno");
        let mut got = Vec::new();
        counts.for_each(|k, n| got.push((k.to_vec(), n)));
        got.sort();
        let want: Vec<(Vec<u8>, u64)> = vec![
            (b"ab".to_vec(), 2),
            (b"ab\0".to_vec(), 3),
            (b"ab\0\0".to_vec(), 1),
            (b"abcdefghijklmno".to_vec(), 3),
            (b"abcdefghijklmnopqrstuvwxyz".to_vec(), 1),
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn many_keys_grow() {
        let words: Vec<String> = (0..20_000).map(|i| format!("w{i}")).collect();
        let mut a = PieceCounts::default();
        for (i, w) in words.iter().enumerate() {
            a.add(b"", w.as_bytes());
            if i % 3 == 0 {
                a.add(b"", w.as_bytes());
            }
        }
        let (mut total, mut distinct) = (0, 0);
        a.for_each(|k, n| {
            distinct += 1;
            let i: usize = std::str::from_utf8(&k[1..]).unwrap().parse().unwrap();
            assert_eq!(n, if i.is_multiple_of(3) { 2 } else { 1 });
            total += n;
        });
        assert_eq!((distinct, total), (20_000, 20_000 + 6_667));
    }
}
