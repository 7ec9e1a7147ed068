//! Parallel pre-token counting: files -> chunks -> pieces -> `WordCounts`.
//!
//! Each worker keeps one table of pieces (no copy or allocation per piece: short
//! pieces are packed into a `u128`, long ones borrowed from the mapped input; see
//! `pieces.rs`) and pulls chunks from a shared counter; at the end the tables are
//! merged into the `WordCounts`, shard by shard on all threads (`collect.rs`). Only
//! pieces from chunks that had to be re-decoded (invalid UTF-8 under
//! `replace`/`ignore`) are copied.

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use hashbrown::HashMap;
use rustc_hash::FxBuildHasher;

use crate::corpus::{self, Source, Utf8Policy};
use crate::error::{Error, Result};
use crate::pool::default_threads;
use crate::pretokenize::Pretokenizer;
use crate::progress::Progress;
use crate::specials::{Segment, SpecialMatcher};

pub(crate) type FxMap<K, V> = HashMap<K, V, FxBuildHasher>;

mod collect;
mod pieces;
mod wordcounts;
pub(crate) use pieces::PieceCounts;
pub use wordcounts::WordCounts;

/// How the counting is run; results never depend on these.
#[derive(Clone, Copy, Debug)]
pub struct CountOptions {
    pub num_threads: usize,
    /// Target chunk size in bytes; 0 picks one from the input size.
    pub chunk_size: usize,
    pub utf8: Utf8Policy,
}

impl Default for CountOptions {
    fn default() -> Self {
        Self {
            num_threads: default_threads(),
            chunk_size: 0,
            utf8: Utf8Policy::Strict,
        }
    }
}

/// The largest chunk an automatic chunk size picks ([`corpus::chunk_size`]). Counting
/// keeps nothing per chunk, so chunks may be large; encoding caps its own lower.
const MAX_AUTO_CHUNK: usize = 16 << 20;

/// Counts every pre-token of the files `paths`, split on `specials` (which are not
/// counted): a group of files at a time (`corpus::Groups`), the groups' counts added.
pub fn count_files(
    paths: &[PathBuf],
    specials: &SpecialMatcher,
    pretokenizer: &Pretokenizer,
    options: CountOptions,
    progress: &Progress,
) -> Result<WordCounts> {
    progress.reset(corpus::size_on_disk(paths));
    let mut counts: Option<WordCounts> = None;
    for group in corpus::Groups::new(paths, progress) {
        let sources = group?;
        let part = count_sources(&sources, specials, pretokenizer, options, progress)?;
        corpus::check_intact(&sources)?;
        match counts.as_mut() {
            None => counts = Some(part),
            Some(c) => c.add(&part)?,
        }
    }
    Ok(counts.unwrap_or_else(|| {
        WordCounts::new(
            pretokenizer.pattern().to_owned(),
            specials.tokens().to_vec(),
        )
    }))
}

/// Counts every pre-token of `sources`, split on `specials` (which are not counted).
/// Adds to `progress` without resetting it.
pub fn count_sources(
    sources: &[Source],
    specials: &SpecialMatcher,
    pretokenizer: &Pretokenizer,
    options: CountOptions,
    progress: &Progress,
) -> Result<WordCounts> {
    let threads = options.num_threads.max(1);
    let total: usize = sources.iter().map(|s| s.bytes().len()).sum();
    let chunk_size = match options.chunk_size {
        0 => corpus::chunk_size(total, threads, MAX_AUTO_CHUNK),
        n => n,
    };
    let threads = corpus::worker_count(threads, total, sources.len(), chunk_size);
    // Found as the threads ask for them, so counting starts at once (`corpus::Chunks`).
    let chunks =
        corpus::Chunks::new(sources, specials, chunk_size, pretokenizer.kind()).tapered(threads);
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Result<ChunkCounts>>> = Mutex::new(Vec::new());
    // A thread sees more than its share of the distinct pieces (half of en-small has
    // 65% of them): sized for twice its share of the text, its table did not grow,
    // which took 2 of the 21 ms of a 2-thread count of en-small.
    let sized_for = if threads > 1 {
        2 * (total / threads)
    } else {
        total
    };
    let oom = || Error::out_of_memory::<(u128, u64)>("counting pieces", sized_for / 40);
    let work = || {
        let Some(borrowed) = PieceCounts::for_text_len(sized_for) else {
            let mut guard = results.lock().unwrap_or_else(|p| p.into_inner());
            guard.push(Err(oom()));
            return;
        };
        let mut local = ChunkCounts {
            borrowed,
            ..ChunkCounts::default()
        };
        let outcome = (|| -> Result<()> {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some((src, range)) = chunks.get(i) else {
                    return Ok(());
                };
                progress.check()?;
                let source = &sources[src];
                let len = range.len() as u64;
                match corpus::decode(source, range.clone(), options.utf8)? {
                    Cow::Borrowed(text) => {
                        count_text(text, specials, pretokenizer, &mut local.borrowed)?
                    }
                    Cow::Owned(text) => {
                        let mut tmp = PieceCounts::default();
                        count_text(&text, specials, pretokenizer, &mut tmp)?;
                        if tmp.failed() {
                            return Err(oom());
                        }
                        tmp.for_each(|k, v| add_owned(&mut local.owned, k, v));
                    }
                }
                if local.borrowed.failed() {
                    return Err(oom());
                }
                progress.add(len);
            }
        })();
        let mut guard = results.lock().unwrap_or_else(|p| p.into_inner());
        guard.push(outcome.map(|()| local));
    };
    crate::pool::on_threads(threads, work)?;
    let parts = results.into_inner().unwrap_or_else(|p| p.into_inner());
    let parts: Vec<ChunkCounts> = parts.into_iter().collect::<Result<_>>()?;
    let mut tables = Vec::with_capacity(parts.len());
    let mut long = FxMap::<&[u8], u64>::default();
    let mut owned = FxMap::<Box<[u8]>, u64>::default();
    for part in parts {
        let (short, part_long) = part.borrowed.into_tables();
        tables.push(short);
        for (k, v) in part_long {
            *long.entry(k).or_insert(0) += v;
        }
        for (k, v) in part.owned {
            *owned.entry(k).or_insert(0) += v;
        }
    }
    let mut words = WordCounts::new(
        pretokenizer.pattern().to_owned(),
        specials.tokens().to_vec(),
    );
    let long_bytes: usize = long.keys().map(|k| k.len()).sum();
    // The arena the tables are collected into (words, ends, counts: ~32 bytes a word
    // with its bytes), made of allocations that cannot each fail softly: where it
    // cannot be had (a memory limit), fail now rather than abort partway.
    let keys: usize = tables.iter().map(|t| t.len()).sum::<usize>() + long.len() + owned.len();
    if !crate::hugemem::probe(keys.saturating_mul(64).saturating_add(2 * long_bytes)) {
        return Err(Error::out_of_memory::<u8>("collecting counts", keys * 64));
    }
    for shard in collect::shard_words(&tables, threads, (long.len(), long_bytes))? {
        words.append_distinct_arena(shard.bytes, shard.ends, shard.counts);
    }
    drop(tables);
    // Long pieces are not in the short tables, and are distinct after merging.
    for (k, v) in long {
        words.push_distinct(k, v);
    }
    for (k, v) in owned {
        words.add_word(&k, v)?;
    }
    Ok(words)
}

/// Adds `n` to `key`'s count, copying the key only when it is new.
pub(crate) fn add_owned(map: &mut FxMap<Box<[u8]>, u64>, key: &[u8], n: u64) {
    match map.get_mut(key) {
        Some(c) => *c += n,
        None => {
            map.insert(key.into(), n);
        }
    }
}

#[derive(Default)]
struct ChunkCounts<'a> {
    borrowed: PieceCounts<'a>,
    owned: FxMap<Box<[u8]>, u64>,
}

/// Counts the pieces of one decoded chunk into `counts`.
pub(crate) fn count_text<'t>(
    text: &'t str,
    specials: &SpecialMatcher,
    pretokenizer: &Pretokenizer,
    counts: &mut PieceCounts<'t>,
) -> Result<()> {
    let mut result = Ok(());
    specials.split(text, |seg| {
        if let (Segment::Text(t), Ok(())) = (seg, &result) {
            let bytes = t.as_bytes();
            // Forced inline: the scanner calls it from two places, and left to itself
            // the compiler made it a call per piece, saving and restoring registers
            // each time (en-small, 1 thread: gpt2 ~470 -> ~525 MB/s, o200k ~405 ->
            // ~445).
            result = pretokenizer.for_each_span(
                t,
                #[inline(always)]
                |start, end| {
                    if let Some(piece) = bytes.get(start..end) {
                        counts.add(text.as_bytes(), piece);
                    }
                },
            );
        }
    });
    result
}
