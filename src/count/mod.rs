//! Parallel pre-token counting: inputs -> items -> documents -> pieces -> `WordCounts`.
//!
//! Each worker keeps one table of pieces (no copy or allocation per piece: short
//! pieces are packed into a `u128`; a long one is copied the first time the worker
//! sees it; see `pieces.rs`) and pulls items (chunks, blocks, batches) from a shared
//! counter, releasing the mapped bytes behind them; at the end the tables are merged
//! into the `WordCounts`, shard by shard on all threads (`collect.rs`).

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use hashbrown::HashMap;
use rustc_hash::FxBuildHasher;

use crate::corpus::{
    self, Body, Doc, Format, Input, InputInfo, Items, MappedItems, ReadOptions, Reader,
    SequentialItems, Source, Stats, StatsSummary, Stretch, Utf8Policy,
};
use crate::error::{Error, Result};
use crate::pool::default_threads;
use crate::pretokenize::Pretokenizer;
use crate::progress::Progress;
use crate::specials::{Segment, SpecialMatcher};

pub(crate) type FxMap<K, V> = HashMap<K, V, FxBuildHasher>;

mod collect;
mod partition;
mod pieces;
mod sum;
mod wordcounts;
pub use partition::Partitions;
pub(crate) use pieces::PieceCounts;
pub use sum::CountsSum;
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

/// The largest chunk an automatic chunk size picks ([`corpus::chunk_size`]). The
/// mapped bytes of the chunks in flight stay resident until the count passes them:
/// with 16 MB chunks a 2-thread count's RSS grew from 84 MiB (en, 116 MB: 3.6 MB
/// chunks) to 130 MiB (en 8 times over); a chunk's fixed costs are lost in 4 MB.
const MAX_AUTO_CHUNK: usize = 4 << 20;

/// Counts every pre-token of the text files `paths`, split on `specials` (which are
/// not counted).
pub fn count_files(
    paths: &[PathBuf],
    specials: &SpecialMatcher,
    pretokenizer: &Pretokenizer,
    options: CountOptions,
    progress: &Progress,
) -> Result<WordCounts> {
    let inputs = Input::text_files(paths);
    let read = ReadOptions {
        utf8: options.utf8,
        ..ReadOptions::default()
    };
    count_inputs(inputs, specials, pretokenizer, options, read, progress).map(|(c, _)| c)
}

/// Counts every pre-token of the documents of `inputs` (`corpus::Input`: text files,
/// JSON lines, feeds), split on `specials` where `read` says special tokens are
/// special; no pre-token crosses a document's boundary. Returns the counts and what
/// was read.
pub fn count_inputs(
    inputs: Vec<Input>,
    specials: &SpecialMatcher,
    pretokenizer: &Pretokenizer,
    options: CountOptions,
    read: ReadOptions,
    progress: &Progress,
) -> Result<(WordCounts, StatsSummary)> {
    let threads = options.num_threads.max(1);
    let room = crate::hugemem::headroom(threads);
    if !crate::hugemem::probe(room) {
        return Err(Error::out_of_memory::<u8>("starting the work", room));
    }
    let (info, stretches) = corpus::plan(inputs);
    progress.reset(stretches.iter().map(Stretch::size_on_disk).sum());
    let stats = Stats::default();
    let reader = Reader::new(&info, read, specials, &stats);
    let kind = pretokenizer.kind();
    let job = Job {
        reader: &reader,
        specials,
        pretokenizer,
        progress,
    };
    let mut counts = WordCounts::new(
        pretokenizer.pattern().to_owned(),
        specials.tokens().to_vec(),
    );
    for stretch in stretches {
        match stretch {
            Stretch::Mapped(files) => corpus::each_group(files, progress, |sources, inputs| {
                let total: usize = sources.iter().map(|s| s.read_len()).sum();
                let chunk_size = match options.chunk_size {
                    0 => corpus::chunk_size(total, threads, MAX_AUTO_CHUNK),
                    n => n,
                };
                let workers = corpus::worker_count(threads, total, sources.len(), chunk_size);
                let cut = reader.cut_specials();
                let items =
                    MappedItems::new(sources, inputs, &info, cut, chunk_size, kind, workers);
                counts.add_owned(job.count_items(&items, workers, total)?)
            })?,
            Stretch::Sequential(list) => {
                // Decompressed sizes are not known ahead; English compresses ~3-4x.
                let sized_for = list.iter().map(|(_, s)| s.size_on_disk()).sum::<u64>() * 4;
                let sized_for = usize::try_from(sized_for)
                    .unwrap_or(usize::MAX)
                    .max(1 << 20);
                let target = match options.chunk_size {
                    0 => STREAM_BLOCK,
                    n => n,
                };
                let items = SequentialItems::new(
                    list,
                    &info,
                    reader.cut_specials(),
                    kind,
                    target,
                    progress,
                    None,
                );
                counts.add_owned(job.count_items(&items, threads, sized_for)?)?;
            }
        }
    }
    for (i, _) in info.iter().enumerate() {
        if reader.is_text_file(i) {
            stats.add_text_file();
        }
    }
    Ok((counts, stats.summary()))
}

/// Counts every pre-token of the text of `sources`, split on `specials` (which are
/// not counted). Adds to `progress` without resetting it.
pub fn count_sources(
    sources: &[Source],
    specials: &SpecialMatcher,
    pretokenizer: &Pretokenizer,
    options: CountOptions,
    progress: &Progress,
) -> Result<WordCounts> {
    let info: Vec<InputInfo> = sources
        .iter()
        .map(|s| InputInfo {
            name: s.path.display().to_string(),
            format: Some(Format::Text),
        })
        .collect();
    let stats = Stats::default();
    let read = ReadOptions {
        utf8: options.utf8,
        ..ReadOptions::default()
    };
    let reader = Reader::new(&info, read, specials, &stats);
    let threads = options.num_threads.max(1);
    let total: usize = sources.iter().map(|s| s.read_len()).sum();
    let chunk_size = match options.chunk_size {
        0 => corpus::chunk_size(total, threads, MAX_AUTO_CHUNK),
        n => n,
    };
    let threads = corpus::worker_count(threads, total, sources.len(), chunk_size);
    let items = MappedItems::new(
        sources,
        (0..sources.len()).collect(),
        &info,
        specials,
        chunk_size,
        pretokenizer.kind(),
        threads,
    );
    let job = Job {
        reader: &reader,
        specials,
        pretokenizer,
        progress,
    };
    job.count_items(&items, threads, total)
}

/// The block a compressed file is decompressed by ([`corpus::SequentialItems`]): big
/// enough that the lock and the hand-over cost nothing, small enough that the
/// workers start at once and the blocks in flight stay a few MB.
const STREAM_BLOCK: usize = 2 << 20;

/// What every worker of a count shares.
struct Job<'j> {
    reader: &'j Reader<'j>,
    specials: &'j SpecialMatcher,
    pretokenizer: &'j Pretokenizer,
    progress: &'j Progress,
}

impl Job<'_> {
    /// Counts the pieces of every item of `items` on `threads` threads, tables sized
    /// for `total` bytes of text (`PieceCounts::for_share`).
    fn count_items<'a>(
        &self,
        items: &impl Items<'a>,
        threads: usize,
        total: usize,
    ) -> Result<WordCounts> {
        let next = AtomicUsize::new(0);
        let results: Mutex<Vec<Result<PieceCounts>>> = Mutex::new(Vec::new());
        let share = total / threads.max(1);
        let oom = || Error::out_of_memory::<(u128, u64)>("counting pieces", share / 40);
        let none = SpecialMatcher::default();
        let (specials, pretokenizer) = (self.specials, self.pretokenizer);
        let work = || {
            let Some(mut local) = PieceCounts::for_share(share, threads) else {
                let mut guard = results.lock().unwrap_or_else(|p| p.into_inner());
                guard.push(Err(oom()));
                return;
            };
            let outcome = (|| -> Result<()> {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(i)? else {
                        return Ok(());
                    };
                    self.progress.check()?;
                    let mut count = |doc: Doc<'_>| {
                        let specials = if doc.specials { specials } else { &none };
                        count_text(&doc.text, specials, pretokenizer, &mut local)
                    };
                    match &item.body {
                        Body::Mapped { source, range } => {
                            self.reader
                                .mapped(item.input, source, range.clone(), &mut count)?;
                        }
                        _ => {
                            self.reader.owned(&item, &mut count)?;
                        }
                    }
                    if local.failed() {
                        return Err(oom());
                    }
                    self.progress.add(item.progress_len());
                    drop(item);
                    items.done(i);
                }
            })();
            let mut guard = results.lock().unwrap_or_else(|p| p.into_inner());
            guard.push(outcome.map(|()| local));
        };
        crate::pool::on_threads(threads, work)?;
        let parts = results.into_inner().unwrap_or_else(|p| p.into_inner());
        let parts: Vec<PieceCounts> = parts.into_iter().collect::<Result<_>>()?;
        collect_parts(parts, self.specials, self.pretokenizer, threads)
    }
}

/// The threads' counts, summed into a `WordCounts`.
fn collect_parts(
    parts: Vec<PieceCounts>,
    specials: &SpecialMatcher,
    pretokenizer: &Pretokenizer,
    threads: usize,
) -> Result<WordCounts> {
    let mut tables = Vec::with_capacity(parts.len());
    let mut long = FxMap::<Box<[u8]>, u64>::default();
    for part in parts {
        let (short, part_long) = part.into_tables();
        tables.push(short);
        for (k, v) in part_long {
            *long.entry(k).or_insert(0) += v;
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
    let keys: usize = tables.iter().map(|t| t.len()).sum::<usize>() + long.len();
    if !crate::hugemem::probe(keys.saturating_mul(64).saturating_add(2 * long_bytes)) {
        return Err(Error::out_of_memory::<u8>("collecting counts", keys * 64));
    }
    let extra = (long.len(), long_bytes);
    for shard in collect::shard_words(&tables, threads, extra)? {
        words.append_distinct_arena(shard.bytes, shard.ends, shard.counts);
    }
    drop(tables);
    // Long pieces are not in the short tables, and are distinct after merging.
    for (k, v) in long {
        words.push_distinct(&k, v);
    }
    Ok(words)
}

/// Counts the pieces of `text` into `counts`.
pub(crate) fn count_text(
    text: &str,
    specials: &SpecialMatcher,
    pretokenizer: &Pretokenizer,
    counts: &mut PieceCounts,
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
