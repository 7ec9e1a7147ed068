//! Inputs -> the items workers take, in input order: chunks of mapped files, blocks
//! of streamed ones, batches of feeds.
//!
//! A job's inputs are read in stretches ([`plan`]): consecutive plain files are
//! mapped, a bounded group at a time ([`super::Groups`]), and cut into chunks in
//! parallel ([`super::Chunks`]); consecutive compressed files, pipes and feeds are
//! read one after the other, a block or batch at a time, by whichever worker asks
//! next.

use std::collections::BTreeMap;
use std::io::Read;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Mutex;

use super::blocks::{Block, Blocks};
use super::chunks::Chunks;
use super::input::{Compression, DocBatch, Feed, Format, Input};
use super::safe_cut::last_cut;
use super::source::Source;
use crate::error::{Error, Result};
use crate::pretokenize::Kind;
use crate::progress::Progress;
use crate::specials::SpecialMatcher;

/// What every worker needs to know of the inputs: their names and formats, by index.
pub struct InputInfo {
    pub name: String,
    /// `None` for a feed (its documents come ready).
    pub format: Option<Format>,
}

/// A stretch of inputs read the same way.
pub(crate) enum Stretch {
    /// Plain files, mapped.
    Mapped(Vec<MappedFile>),
    /// Compressed files, pipes and feeds, read in order.
    Sequential(Vec<(usize, Sequential)>),
}

/// A plain file of a job: its input index, its path, and the byte range to read
/// (`None`: all of it).
pub(crate) struct MappedFile {
    pub(crate) input: usize,
    pub(crate) path: PathBuf,
    pub(crate) range: Option<Range<u64>>,
}

impl MappedFile {
    /// The bytes to read, as far as can be known before opening it.
    fn size_on_disk(&self) -> u64 {
        match &self.range {
            Some(r) => r.end.saturating_sub(r.start),
            None => std::fs::metadata(&self.path).map_or(0, |m| m.len()),
        }
    }
}

pub(crate) enum Sequential {
    File(PathBuf, Compression),
    /// A stream ([`Input::Stream`]): its name, reader, compression and size.
    Stream(PathBuf, Box<dyn Read + Send>, Compression, u64),
    Feed(Box<dyn Feed>),
}

impl Sequential {
    /// A file's size on disk (compressed); 0 for a feed.
    pub(crate) fn size_on_disk(&self) -> u64 {
        match self {
            Sequential::File(path, _) => std::fs::metadata(path).map_or(0, |m| m.len()),
            Sequential::Stream(_, _, _, size) => *size,
            Sequential::Feed(_) => 0,
        }
    }
}

impl Stretch {
    /// What a progress bar can know before reading: the files' sizes on disk.
    pub(crate) fn size_on_disk(&self) -> u64 {
        match self {
            Stretch::Mapped(files) => files.iter().map(MappedFile::size_on_disk).sum(),
            Stretch::Sequential(list) => list.iter().map(|(_, s)| s.size_on_disk()).sum(),
        }
    }
}

/// The inputs' names and formats, and the stretches to read them in.
pub(crate) fn plan(inputs: Vec<Input>) -> (Vec<InputInfo>, Vec<Stretch>) {
    let mut info = Vec::with_capacity(inputs.len());
    let mut stretches: Vec<Stretch> = Vec::new();
    for (i, input) in inputs.into_iter().enumerate() {
        let name = input.name();
        match input {
            Input::File {
                path,
                format,
                range,
            } => {
                info.push(InputInfo {
                    name,
                    format: Some(format),
                });
                match Compression::of(&path) {
                    // A pipe is read as it comes, like a compressed file
                    // ([`super::pipe`]).
                    Compression::None if range.is_none() && super::pipe::is_pipe(&path) => {
                        push_sequential(
                            &mut stretches,
                            i,
                            Sequential::File(path, Compression::None),
                        )
                    }
                    Compression::None => {
                        let file = MappedFile {
                            input: i,
                            path,
                            range,
                        };
                        match stretches.last_mut() {
                            Some(Stretch::Mapped(files)) => files.push(file),
                            _ => stretches.push(Stretch::Mapped(vec![file])),
                        }
                    }
                    c => push_sequential(&mut stretches, i, Sequential::File(path, c)),
                }
            }
            Input::Stream {
                name: url,
                format,
                reader,
                size,
            } => {
                let path = PathBuf::from(url);
                let c = Compression::of(&path);
                info.push(InputInfo {
                    name,
                    format: Some(format),
                });
                push_sequential(&mut stretches, i, Sequential::Stream(path, reader, c, size));
            }
            Input::Feed { feed, .. } => {
                info.push(InputInfo { name, format: None });
                push_sequential(&mut stretches, i, Sequential::Feed(feed));
            }
        }
    }
    (info, stretches)
}

fn push_sequential(stretches: &mut Vec<Stretch>, i: usize, s: Sequential) {
    match stretches.last_mut() {
        Some(Stretch::Sequential(items)) => items.push((i, s)),
        _ => stretches.push(Stretch::Sequential(vec![(i, s)])),
    }
}

/// One unit of work.
pub(crate) struct Item<'a> {
    pub(crate) input: usize,
    /// Where it starts in its input: a byte offset (of the decompressed text), or a
    /// feed's batch number. A job started there reads the rest of the input alike.
    pub(crate) at: u64,
    pub(crate) body: Body<'a>,
}

/// Where a job starts reading, to go on with an earlier one: at an item start
/// ([`Item::at`]) of input `input`; inputs before it are not read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Start {
    pub(crate) input: usize,
    pub(crate) at: u64,
}

pub(crate) enum Body<'a> {
    /// A chunk of a mapped file: text cut at a safe cut, or whole lines.
    Mapped {
        source: &'a Source,
        range: Range<usize>,
    },
    /// A block of a streamed file.
    Block(Block),
    /// Documents of a feed.
    Batch(DocBatch),
}

impl Item<'_> {
    /// Bytes of text (or of JSON lines) the item holds.
    pub(crate) fn text_len(&self) -> usize {
        match &self.body {
            Body::Mapped { range, .. } => range.len(),
            Body::Block(b) => b.bytes.len(),
            Body::Batch(b) => b
                .offsets
                .last()
                .copied()
                .unwrap_or(0)
                .saturating_sub(b.offsets.first().copied().unwrap_or(0)),
        }
    }

    /// Bytes of a mapped chunk, which its worker adds to the progress once done
    /// (blocks and batches are counted as they are read).
    pub(crate) fn progress_len(&self) -> u64 {
        match &self.body {
            Body::Mapped { range, .. } => range.len() as u64,
            _ => 0,
        }
    }
}

/// Where workers take items from, by index (asked in any order, each once).
pub(crate) trait Items<'a>: Sync {
    fn get(&self, i: usize) -> Result<Option<Item<'a>>>;

    /// Item `i` is done with: what it borrowed may be released. For work that keeps no
    /// order of its own (counting); a writer in order releases as it writes.
    fn done(&self, _i: usize) {}
}

/// The chunks of a group of mapped files (`inputs[k]`: the input index of
/// `sources[k]`).
pub(crate) struct MappedItems<'a> {
    pub(crate) sources: &'a [Source],
    pub(crate) inputs: Vec<usize>,
    pub(crate) chunks: Chunks<'a>,
    released: Mutex<Released>,
}

/// Which items are done, for releasing the mapped bytes behind them.
#[derive(Default)]
struct Released {
    /// Every item before this one is done, and its bytes released.
    next: usize,
    /// Items done after `next`.
    done: std::collections::BTreeSet<usize>,
    /// Where each source's released bytes end.
    to: Vec<usize>,
}

impl<'a> MappedItems<'a> {
    /// `sources` cut for `threads` workers into chunks of about `target` bytes: text
    /// at safe cuts of `kind` and `specials`, JSON lines after a newline.
    pub(crate) fn new(
        sources: &'a [Source],
        inputs: Vec<usize>,
        info: &[InputInfo],
        specials: &'a SpecialMatcher,
        target: usize,
        kind: Kind,
        threads: usize,
    ) -> Self {
        let lines = inputs
            .iter()
            .map(|&i| matches!(info[i].format, Some(Format::Jsonl(_))))
            .collect();
        Self {
            sources,
            inputs,
            chunks: Chunks::new(sources, specials, target, kind)
                .with_lines(lines)
                .tapered(threads),
            released: Mutex::new(Released {
                to: vec![0; sources.len()],
                ..Released::default()
            }),
        }
    }
}

impl MappedItems<'_> {
    /// Starts the first source at byte `at` ([`Chunks::starting_at`]).
    pub(crate) fn starting_at(mut self, at: usize) -> Self {
        self.chunks = self.chunks.starting_at(at);
        self
    }
}

impl<'a> Items<'a> for MappedItems<'a> {
    fn get(&self, i: usize) -> Result<Option<Item<'a>>> {
        Ok(self.chunks.get(i).map(|(s, range)| Item {
            input: self.inputs[s],
            at: range.start as u64,
            body: Body::Mapped {
                source: &self.sources[s],
                range,
            },
        }))
    }

    /// Releases the mapped bytes of every item before the first one not yet done
    /// ([`Source::release_behind`]), so that a count's resident memory stays flat
    /// however large its files: the pages stay in the page cache, and pieces borrowed
    /// from them are read back if touched. Holding them took ~115 MiB of RSS per 116 MB
    /// of text counted (benchmarks/formats_compare.py).
    fn done(&self, i: usize) {
        let Ok(mut released) = self.released.lock() else {
            return;
        };
        released.done.insert(i);
        while released.done.first() == Some(&released.next) {
            let next = released.next;
            released.done.pop_first();
            released.next += 1;
            if let Some((s, range)) = self.chunks.get(next) {
                released.to[s] = self.sources[s].release_behind(released.to[s], range.end);
            }
        }
    }
}

/// Compressed files and feeds, read in order a block or batch at a time under a lock,
/// by the worker that asks: items made ahead of their asker wait in `ready`.
pub(crate) struct SequentialItems<'i> {
    state: Mutex<SequentialState>,
    /// Where the job starts: that input's bytes or batches before it are passed over.
    start: Option<Start>,
    info: &'i [InputInfo],
    specials: &'i SpecialMatcher,
    kind: Kind,
    target: usize,
    progress: &'i Progress,
}

struct SequentialState {
    inputs: std::vec::IntoIter<(usize, Sequential)>,
    current: Option<(usize, Current)>,
    /// Items made, by index, not yet taken.
    ready: BTreeMap<usize, Item<'static>>,
    made: usize,
    /// Compressed bytes of the files done, and reported to the progress so far.
    read_before: u64,
    reported: u64,
    /// The item that could not be made, and its error until its asker takes it.
    failed: Option<(usize, Option<Error>)>,
}

enum Current {
    File(Blocks, bool),
    /// A feed and the batches taken from it.
    Feed(Box<dyn Feed>, u64),
}

impl<'i> SequentialItems<'i> {
    pub(crate) fn new(
        inputs: Vec<(usize, Sequential)>,
        info: &'i [InputInfo],
        specials: &'i SpecialMatcher,
        kind: Kind,
        target: usize,
        progress: &'i Progress,
        start: Option<Start>,
    ) -> Self {
        Self {
            start,
            state: Mutex::new(SequentialState {
                inputs: inputs.into_iter(),
                current: None,
                ready: BTreeMap::new(),
                made: 0,
                read_before: 0,
                reported: 0,
                failed: None,
            }),
            info,
            specials,
            kind,
            target: target.max(1),
            progress,
        }
    }

    /// Input `i`'s blocks, moved to where the job starts if it starts inside them.
    fn file_at_start(&self, i: usize, mut blocks: Blocks) -> Result<Current> {
        let lines = matches!(self.info[i].format, Some(Format::Jsonl(_)));
        if let Some(start) = self.start.filter(|s| s.input == i) {
            blocks.pass_over(start.at, lines)?;
        }
        Ok(Current::File(blocks, lines))
    }

    /// The next item of the inputs, or `None` past the last.
    fn make(&self, state: &mut SequentialState) -> Result<Option<Item<'static>>> {
        loop {
            let Some((input, current)) = &mut state.current else {
                match state.inputs.next() {
                    None => return Ok(None),
                    Some((i, Sequential::Feed(mut feed))) => {
                        let mut taken = 0;
                        if let Some(start) = self.start.filter(|s| s.input == i) {
                            while taken < start.at && feed.next_batch()?.is_some() {
                                taken += 1;
                            }
                        }
                        state.current = Some((i, Current::Feed(feed, taken)));
                    }
                    Some((i, Sequential::File(path, c))) => {
                        let blocks = Blocks::open(&path, c, self.progress.cancel_flag())?;
                        state.current = Some((i, self.file_at_start(i, blocks)?));
                    }
                    Some((i, Sequential::Stream(path, reader, c, _))) => {
                        let blocks = Blocks::of_reader(&path, reader, c, false)?;
                        state.current = Some((i, self.file_at_start(i, blocks)?));
                    }
                }
                continue;
            };
            let input = *input;
            let mut at = 0;
            let body = match current {
                Current::Feed(feed, taken) => {
                    let batch = feed.next_batch()?;
                    at = *taken;
                    *taken += 1;
                    if let Some(b) = &batch {
                        // A feed's size is not known ahead: its total grows with it.
                        let n = b.offsets.last().copied().unwrap_or(0) as u64;
                        self.progress.set_total(self.progress.total() + n);
                        self.progress.add(n);
                    }
                    batch.map(Body::Batch)
                }
                Current::File(blocks, lines) => {
                    let block = match *lines {
                        true => blocks.next_block(self.target, true, line_cut)?,
                        false => {
                            let margin = self.specials.max_len();
                            let (kind, specials) = (self.kind, self.specials);
                            blocks.next_block(self.target, false, |bytes, end| match end {
                                true => bytes.len(),
                                false => last_cut(
                                    bytes,
                                    bytes.len().saturating_sub(margin),
                                    kind,
                                    specials,
                                ),
                            })?
                        }
                    };
                    // Files count their compressed bytes read, against their sizes on
                    // disk; a pipe's total grows with it, as a feed's.
                    let read = blocks.read.get();
                    let now = state.read_before + read;
                    let new = now.saturating_sub(state.reported);
                    if blocks.is_pipe() {
                        self.progress.set_total(self.progress.total() + new);
                    }
                    self.progress.add(new);
                    state.reported = now;
                    if block.is_none() {
                        state.read_before += read;
                    }
                    if let Some(b) = &block {
                        at = b.offset;
                    }
                    block.map(Body::Block)
                }
            };
            match body {
                Some(body) => return Ok(Some(Item { input, at, body })),
                None => state.current = None,
            }
        }
    }
}

/// After the last newline (0 where there is none yet; everything at the end).
fn line_cut(bytes: &[u8], end: bool) -> usize {
    match end {
        true => bytes.len(),
        false => memchr::memrchr(b'\n', bytes).map_or(0, |i| i + 1),
    }
}

impl<'a> Items<'a> for SequentialItems<'_> {
    /// Items are made in order by whichever worker asks, so the asker of item `i` may
    /// make items before it, and one of those may fail. The error belongs to the item
    /// that failed, not to the asker: it is kept for that item's asker, and every
    /// later item is past the end. Handing it to the asker instead (and `None` to the
    /// failed item's) let an ordered writer see the end before the error and finish a
    /// cut-short input "complete" (7 in 300 runs of a truncated `.jsonl.zst`).
    fn get(&self, i: usize) -> Result<Option<Item<'a>>> {
        let mut state = self
            .state
            .lock()
            .map_err(|_| Error::internal("a reader panicked"))?;
        while state.made <= i && state.failed.is_none() {
            match self.make(&mut state) {
                Ok(Some(item)) => {
                    let k = state.made;
                    state.ready.insert(k, item);
                    state.made += 1;
                }
                Ok(None) => return Ok(None),
                Err(e) => state.failed = Some((state.made, Some(e))),
            }
        }
        match &mut state.failed {
            Some((k, error)) if i >= *k => match (i == *k, error.take()) {
                (true, Some(e)) => Err(e),
                // Asked twice: an error was already given for it.
                (true, None) => Err(Error::internal("a reader's item was asked for twice")),
                (false, e) => {
                    *error = e;
                    Ok(None)
                }
            },
            _ => Ok(state.ready.remove(&i)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A feed of one-document batches that fails at batch `fail_at`.
    struct Failing {
        next: u64,
        fail_at: u64,
    }

    impl Feed for Failing {
        fn next_batch(&mut self) -> Result<Option<DocBatch>> {
            self.next += 1;
            if self.next - 1 == self.fail_at {
                return Err(Error::invalid("batch failed"));
            }
            Ok(Some(DocBatch {
                data: Box::new(b"doc".to_vec()),
                offsets: vec![0, 3],
                row_group: None,
                first_row: self.next - 1,
                unit: "item",
                bad: Vec::new(),
            }))
        }
    }

    /// The error of an item that could not be made goes to that item's asker, however
    /// the askers come: a later item asked first is past the end, never the error's
    /// owner, so an ordered writer always meets the error before the end.
    #[test]
    fn a_failed_item_keeps_its_error_whoever_made_it() {
        let info = [InputInfo {
            name: "feed".into(),
            format: None,
        }];
        let specials = SpecialMatcher::default();
        let progress = Progress::default();
        for order in [[3, 2, 1, 0, 4], [2, 3, 4, 0, 1], [0, 1, 2, 3, 4]] {
            let feed = Failing {
                next: 0,
                fail_at: 2,
            };
            let items = SequentialItems::new(
                vec![(0, Sequential::Feed(Box::new(feed)))],
                &info,
                &specials,
                Kind::Gpt2,
                1,
                &progress,
                None,
            );
            for i in order {
                let got = items.get(i);
                match i {
                    0 | 1 => assert!(matches!(got, Ok(Some(_))), "{order:?} {i}"),
                    2 => assert!(
                        matches!(&got, Err(e) if e.to_string().contains("batch failed")),
                        "{order:?}"
                    ),
                    _ => assert!(matches!(got, Ok(None)), "{order:?} {i}"),
                }
            }
        }
    }
}
