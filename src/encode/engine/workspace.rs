//! A thread's state for encoding (its piece caches and merge buffers), and how big
//! to make them and the id buffer for a text.

use super::pieces::Batch;
use super::prefault::Prefault;
use crate::encode::cache::{LongCache, ShortCache};
use crate::encode::vocab::Scratch;
use crate::error::{Error, Result};

/// Short-cache lines of a workspace, at first and at most: 2 MB growing to 32 MB
/// (655K pieces; en-small has ~120K distinct short pieces, the 116 MB en corpus
/// ~517K with gpt2 and ~579K with o200k), unless its input asks for more
/// ([`short_lines_for`], up to [`BIG_SHORT_LINES`]).
pub(crate) const SHORT_LINES: (usize, usize) = (1 << 15, 1 << 19);
/// The most short-cache lines any input gets: 256 MB, 5.2M pieces, most of the 6.1M
/// distinct short pieces of 12 GB of web text (the rarest, seen last, are left out).
pub(crate) const BIG_SHORT_LINES: usize = 1 << 22;
/// Long pieces cached per workspace (the table and arenas reserve about 22 MB, used
/// as they fill): the multilingual corpus has 143K distinct pieces of more than 15
/// bytes (4.2 MB, 1.56M ids with OLMo 2), most of them once. With room for 128K
/// entries and 1M ids the id arena filled at 108K of them, and every warm encode
/// merged the other 41K pieces (1.3 MB) again: a quarter of its time.
const LONG_ENTRIES: usize = 1 << 18;

/// Per-thread state: the piece caches and merge buffers.
#[derive(Debug)]
pub(crate) struct Workspace {
    pub(crate) short: ShortCache,
    pub(super) long: LongCache,
    pub(super) scratch: Scratch,
    /// Whether `long` holds a short piece (one the short table had no room for).
    /// Until then a short piece the short table lacks is new, and the miss path skips
    /// the long cache's lookup (with o200k, a cold encode's miss path spent ~10% of
    /// its time there).
    pub(super) long_holds_short: bool,
    /// Faults in the output buffer of `Encoder::encode` ahead of the writes.
    pub(crate) prefault: Prefault,
    /// The ends of a piece's parts, for the miss path's merge of a piece by parts.
    pub(super) part_ends: Vec<u32>,
    /// The encode loop's two batches, kept from call to call (taken while in use;
    /// made with the workspace, so a fixed one allocates nothing later).
    pub(super) batches: Option<Box<[Batch; 2]>>,
    /// Why the last pieces could not be encoded (out of memory, or Ctrl-C while
    /// merging a huge piece), for the text loop to stop at its next batch.
    pub(super) failure: Option<Error>,
}

impl Workspace {
    /// A workspace for encoding large texts: its short table grows with the text.
    /// An error where its memory cannot be had.
    pub(crate) fn new() -> Result<Self> {
        Self::with_sizes(
            SHORT_LINES,
            ShortCache::spill_for(SHORT_LINES.1),
            LONG_ENTRIES,
        )
    }

    /// A workspace whose caches never grow: `short_pairs` pairs (spilling at most
    /// 8 ids a pair) and `long_entries` long pieces, all reserved now (the streaming
    /// encoder may not allocate later).
    pub(crate) fn fixed(short_pairs: usize, long_entries: usize) -> Result<Self> {
        Self::with_sizes((short_pairs, short_pairs), short_pairs * 8, long_entries)
    }

    fn with_sizes(short_pairs: (usize, usize), spill: usize, long_entries: usize) -> Result<Self> {
        Ok(Self {
            short: ShortCache::try_new(short_pairs.0, short_pairs.1, spill)?,
            long: LongCache::try_new(long_entries)?,
            scratch: Scratch::try_new()?,
            long_holds_short: false,
            prefault: Prefault::default(),
            part_ends: Vec::new(),
            batches: Some(Box::default()),
            failure: None,
        })
    }

    /// The failure that stopped the last pieces, if any (taken: the workspace is
    /// sound again, as no wrong ids were cached).
    pub(super) fn take_failure(&mut self) -> Result<()> {
        self.failure.take().map_or(Ok(()), Err)
    }
}

/// Short-cache lines for encoding `bytes` of text: about one per 160 bytes, which
/// follows the distinct pieces of English (~115K in 19 MB, ~517K in 116 MB), up to
/// the 32 MB of [`SHORT_LINES`] at ~84 MB. Past that, room for the distinct pieces
/// as they grow in web text, as `bytes^0.62` (Heaps' law, through owt-1G's 1.32M
/// distinct short pieces; owt-12G has 6.0M pre-tokens), at 5/4 a line (a table at its
/// limit), up to [`BIG_SHORT_LINES`]. Small inputs keep small tables.
///
/// Why: a table that stops at 32 MB holds 655K pieces; owt-1G has 1.32M distinct
/// short pieces, and those left out were merged again at every occurrence, in every
/// call: warm 2-thread `encode_file` calls of owt-1G took 5.5-8.0 user CPU-s, against
/// 4.1-5.2 with the 128 MB table this gives it (gpt2, interleaved, busy machine). A
/// table larger than its pieces need costs: on a cold 3 GB `encode_dataset` a 256 MB
/// table (twice this rule's) took ~13% more user CPU than the 32 MB one.
pub(crate) fn short_lines_for(bytes: usize) -> usize {
    let linear = (bytes / 160).next_power_of_two();
    if linear <= SHORT_LINES.1 {
        return linear.max(SHORT_LINES.0);
    }
    let pieces = 1.32e6 * (bytes as f64 / 1.075e9).powf(0.62);
    let lines = (pieces / 1.25) as usize;
    lines
        .checked_next_power_of_two()
        .unwrap_or(BIG_SHORT_LINES)
        .clamp(SHORT_LINES.1, BIG_SHORT_LINES)
}

/// An empty id buffer for a text of `len` bytes, with room for one id per two bytes
/// so that it is not copied to grow (English is ~0.25-0.34 ids a byte; room never
/// written costs nothing). Its pages are faulted in a megabyte at a time ahead of the
/// writes ([`Prefault`]). Not in huge pages: with a page cache filling the memory,
/// repeated calls ran up to 2x slower (the kernel compacting memory to find 2 MiB pages).
pub(crate) fn output_buffer(len: usize) -> Result<Vec<u32>> {
    let mut out = Vec::new();
    out.try_reserve_exact(len / 2 + 16)
        .map_err(|_| Error::out_of_memory::<u32>("token ids", len / 2 + 16))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_lines_follow_the_input_then_heaps_law() {
        assert_eq!(short_lines_for(0), SHORT_LINES.0);
        // en-small (19 MB) and the en corpus (116 MB) as before.
        assert_eq!(short_lines_for(18_791_682), 1 << 17);
        assert_eq!(short_lines_for(116_165_314), SHORT_LINES.1);
        // owt-1G's 1.32M short pieces fit at the size limit (5/4 a line), as do the
        // ~2.5M of 3 GB; 12 GB gets the largest table.
        assert_eq!(short_lines_for(200_000_000), SHORT_LINES.1);
        assert_eq!(short_lines_for(1_074_540_098), 1 << 21);
        assert_eq!(short_lines_for(3_000_000_005), 1 << 21);
        assert_eq!(short_lines_for(12_177_498_515), BIG_SHORT_LINES);
        assert_eq!(short_lines_for(usize::MAX), BIG_SHORT_LINES);
        let mut last = 0;
        for shift in 0..64 {
            let lines = short_lines_for(1usize << shift);
            assert!(lines.is_power_of_two() && lines >= last, "{shift}");
            last = lines;
        }
    }
}
