//! The workers of a file encode: items -> ids, in parallel, handed in input order to a
//! [`Sink`] (one `.npy`, or a dataset's shards).

use std::path::Path;
use std::sync::Mutex;

use super::options::FileOptions;
use super::ordered::ordered_map;
use crate::corpus::{
    self, Body, Doc, Format, Input, Items, MappedItems, ReadOptions, Reader, SequentialItems,
    Start, Stats, StatsSummary, Stretch, Tally,
};
use crate::encode::short_lines_for;
use crate::encode::Encoder;
use crate::error::{Error, Result};
use crate::progress::Progress;
use crate::specials::Specials;

/// Chunks a worker may run ahead of the writer: enough to ride over a slow chunk,
/// few enough that buffered ids stay small.
const CHUNKS_AHEAD_PER_THREAD: usize = 4;

/// Which of `inputs` are text files (they get the files' bos and eos).
pub(super) fn is_text_file(inputs: &[Input]) -> Vec<bool> {
    inputs
        .iter()
        .map(|i| {
            matches!(
                i,
                Input::File {
                    format: Format::Text,
                    ..
                } | Input::Stream {
                    format: Format::Text,
                    ..
                }
            )
        })
        .collect()
}

/// Refuses options that cannot be written: a dtype other than uint16 or uint32, one
/// too narrow for the vocabulary, marks that are not token ids.
pub(super) fn check_options(encoder: &Encoder, options: &FileOptions) -> Result<()> {
    let dtype_bytes = options.dtype_bytes;
    if dtype_bytes != 2 && dtype_bytes != 4 {
        return Err(Error::invalid("dtype must be uint16 or uint32"));
    }
    if dtype_bytes == 2 && encoder.bpe().id_limit() > 1 << 16 {
        return Err(Error::invalid(format!(
            "uint16 cannot hold ids of a vocabulary of {} tokens; use uint32",
            encoder.bpe().id_limit()
        )));
    }
    let marks = [
        ("write after each file", options.after_each_file),
        ("write before each record", options.record_marks.bos),
        ("write after each record", options.record_marks.eos),
        ("write before each text file", options.file_marks.bos),
        ("write after each text file", options.file_marks.eos),
    ];
    for (what, id) in marks {
        // In the vocabulary, so it fits the dtype checked above.
        if let Some(id) = id.filter(|&id| encoder.bpe().token(id).is_none()) {
            return Err(Error::invalid(format!(
                "token id {id}, to {what}, is not in the vocabulary"
            )));
        }
    }
    Ok(())
}

/// Where a run's ids go, in input order.
pub(super) trait Sink {
    fn write(&mut self, encoded: &Encoded<'_>) -> std::io::Result<()>;
    /// Every input before `input` is done (its closing marks, if any, are due).
    fn end_until(&mut self, input: usize) -> std::io::Result<()>;
}

/// The largest automatic chunk ([`corpus::chunk_size`]): at most 1 MB so the chunks
/// in flight stay small. Each chunk wakes the writer, which on a 2-core machine
/// preempts an encoder: 1 MB chunks instead of 256 KB took a warm 2-thread encode of
/// the 116 MB English corpus from ~540 to ~590 MB/s.
const MAX_AUTO_CHUNK: usize = 1 << 20;

/// Encodes the documents of `inputs` in order into `sink`, on the options' threads;
/// returns what was read. `output` names the output in write errors. With `start`, the
/// job goes on from there: what comes before it is not read, and the sink is told of
/// no input before it.
pub(super) fn encode_all(
    encoder: &Encoder,
    inputs: Vec<Input>,
    options: FileOptions,
    progress: &Progress,
    output: &Path,
    sink: &mut impl Sink,
    start: Option<Start>,
) -> Result<StatsSummary> {
    let threads = if options.num_threads == 0 {
        crate::pool::default_threads()
    } else {
        options.num_threads
    };
    let room = crate::hugemem::headroom(threads + 1);
    if !crate::hugemem::probe(room) {
        return Err(Error::out_of_memory::<u8>("starting the work", room));
    }
    let (info, mut stretches) = corpus::plan(inputs);
    if let Some(start) = start {
        for stretch in &mut stretches {
            match stretch {
                Stretch::Mapped(files) => files.retain(|f| f.input >= start.input),
                Stretch::Sequential(list) => list.retain(|(i, _)| *i >= start.input),
            }
        }
        stretches.retain(|stretch| match stretch {
            Stretch::Mapped(files) => !files.is_empty(),
            Stretch::Sequential(list) => !list.is_empty(),
        });
    }
    progress.reset(stretches.iter().map(Stretch::size_on_disk).sum());
    // A mapped file gone on with from a byte: the bytes before it count as done.
    let mut mapped_start = start.filter(|s| {
        stretches.iter().any(|stretch| {
            matches!(stretch, Stretch::Mapped(files) if files.first().is_some_and(|f| f.input == s.input))
        })
    });
    if let Some(s) = mapped_start {
        progress.add(s.at);
    }
    let stats = Stats::default();
    let read = ReadOptions {
        utf8: options.utf8,
        special_in_text: options.special_in_text,
        bad_records: options.bad_records,
    };
    let reader = Reader::new(&info, read, &encoder.specials().matcher, &stats);
    let total = usize::try_from(progress.total()).unwrap_or(usize::MAX);
    let chunk_size = match options.chunk_size {
        0 => corpus::chunk_size(total, threads, MAX_AUTO_CHUNK),
        n => n,
    };
    let job = Job {
        encoder,
        reader: &reader,
        options,
        threads,
        progress,
        spare_buffers: Mutex::new(Vec::new()),
    };
    let kind = encoder.cut_kind();
    let no_cuts = crate::specials::SpecialMatcher::default();
    let cut_specials = || match encoder.cuts_at_specials() {
        true => reader.cut_specials(),
        false => &no_cuts,
    };
    for stretch in stretches {
        match stretch {
            // Files a group at a time (`corpus::Groups`); within a group, every chunk
            // of every file in order, so the workers never wait between files.
            Stretch::Mapped(files) => corpus::each_group(files, progress, |sources, inputs| {
                // Counted from the bytes held, as a pipe's size on disk says nothing.
                let held: usize = sources.iter().map(|s| s.read_len()).sum();
                let workers = corpus::worker_count(threads, held, sources.len(), chunk_size);
                let cut = cut_specials();
                let first_at = mapped_start
                    .take_if(|s| inputs.first() == Some(&s.input))
                    .map_or(0, |s| usize::try_from(s.at).unwrap_or(usize::MAX));
                let items =
                    MappedItems::new(sources, inputs, &info, cut, chunk_size, kind, workers)
                        .starting_at(first_at);
                job.run(&items, workers, sink).map_err(io_at(output))
            })?,
            Stretch::Sequential(list) => {
                let cut = cut_specials();
                let items =
                    SequentialItems::new(list, &info, cut, kind, chunk_size, progress, start);
                job.run(&items, threads, sink).map_err(io_at(output))?;
            }
        }
    }
    sink.end_until(info.len())
        .map_err(|e| Error::io(output, e))?;
    for i in 0..info.len() {
        if reader.is_text_file(i) {
            stats.add_text_file();
        }
    }
    Ok(stats.summary())
}

fn io_at(output: &Path) -> impl Fn(RunError) -> Error + '_ {
    move |e| match e {
        RunError::Core(e) => e,
        RunError::Write(e) => Error::io(output, e),
    }
}

enum RunError {
    Core(Error),
    Write(std::io::Error),
}

impl From<Error> for RunError {
    fn from(e: Error) -> Self {
        RunError::Core(e)
    }
}

/// What the workers of a file encode share.
struct Job<'j> {
    encoder: &'j Encoder,
    reader: &'j Reader<'j>,
    options: FileOptions,
    threads: usize,
    progress: &'j Progress,
    /// Id buffers go back to the workers once written: a fresh buffer per chunk cost
    /// a page fault (and the kernel zeroing a page) per 1024 ids, 6% of a 2-thread run.
    spare_buffers: Mutex<Vec<Vec<u32>>>,
}

/// One item's ids, and what the writer needs to know of it.
pub(super) struct Encoded<'a> {
    pub(super) input: usize,
    /// Where the item starts in its input ([`corpus::Start`]).
    pub(super) at: u64,
    /// What was read of it.
    pub(super) tally: Tally,
    /// A mapped chunk's file and end, to release the bytes behind it once written.
    pub(super) mapped: Option<(&'a corpus::Source, usize)>,
    pub(super) ids: Vec<u32>,
    /// Where each record's document ends in `ids` (none for a chunk of a text file).
    pub(super) record_ends: Vec<usize>,
}

impl Job<'_> {
    /// Encodes every item of `items` on `workers` threads, in order into `writer`.
    fn run<'a>(
        &self,
        items: &impl Items<'a>,
        workers: usize,
        writer: &mut impl Sink,
    ) -> std::result::Result<(), RunError> {
        let encoder = self.encoder;
        let allowed = encoder.specials();
        let none = Specials::default();
        // The tables are sized for the whole input as far as it is known (opening a
        // group puts its pipes' real sizes into the total), or for the text a
        // distributed encode's worker is likely to see, where more.
        let total = self.progress.total().max(self.options.table_bytes);
        let sized_for = usize::try_from(total).unwrap_or(usize::MAX);
        if self.threads > 1 {
            encoder.workspaces().size_shared_for(sized_for);
        }
        let marks = self.options.record_marks;
        // A worker's workspace: its own on one thread, else one sharing the
        // encoder's short table.
        let worker_lease = || {
            let mut lease = match self.threads {
                1 => encoder.lease(),
                _ => encoder.workspaces().lease_shared(),
            }?;
            lease.short.reserve_lines(short_lines_for(sized_for));
            lease.short.populate();
            Ok(lease)
        };
        let mut write_error = None;
        let outcome = ordered_map(
            usize::MAX,
            workers,
            workers * CHUNKS_AHEAD_PER_THREAD,
            // Threads share one short table, so a piece merged by one is a hit for all.
            // Each worker's encode loop sees a Ctrl-C (`progress::interrupted`) within a
            // batch of pieces, not at the end of its chunk: one chunk of 78 MB, on 2
            // threads, ran to its end after it.
            || (worker_lease(), self.progress.watch_here()),
            |i, (ws, _)| {
                self.progress.check()?;
                // A workspace that could not be made fails the worker's first chunk.
                let ws = match ws {
                    Ok(ws) => ws,
                    Err(e) => return Err(std::mem::replace(e, Error::Cancelled)),
                };
                let Some(item) = items.get(i)? else {
                    return Ok(None);
                };
                encoder.workspaces().refresh_shared(ws);
                let spare = self.spare_buffers.lock().ok().and_then(|mut b| b.pop());
                let mut ids = spare.unwrap_or_default();
                ids.clear();
                let len = item.text_len();
                ids.try_reserve(len / 2 + 16)
                    .map_err(|_| Error::out_of_memory::<u32>("token ids", len / 2))?;
                let mut record_ends = Vec::new();
                let mut encode = |doc: Doc<'_>| -> Result<()> {
                    let allowed = if doc.specials { allowed } else { &none };
                    if doc.record {
                        ids.extend(marks.bos);
                    }
                    encoder.encode_into(&doc.text, allowed, ws, &mut ids)?;
                    if doc.record {
                        ids.extend(marks.eos);
                        record_ends.push(ids.len());
                    }
                    Ok(())
                };
                let (mapped, tally) = match &item.body {
                    Body::Mapped { source, range } => {
                        let tally =
                            self.reader
                                .mapped(item.input, source, range.clone(), &mut encode)?;
                        (Some((*source, range.end)), tally)
                    }
                    _ => (None, self.reader.owned(&item, &mut encode)?),
                };
                self.progress.add(item.progress_len());
                Ok(Some(Encoded {
                    input: item.input,
                    at: item.at,
                    tally,
                    mapped,
                    ids,
                    record_ends,
                }))
            },
            |_, encoded| {
                if let Err(e) = writer.write(&encoded) {
                    write_error = Some(e);
                    return Err(Error::Cancelled);
                }
                if let Ok(mut spare) = self.spare_buffers.lock() {
                    spare.push(encoded.ids);
                }
                Ok(())
            },
        );
        match (write_error, outcome) {
            (Some(e), _) => Err(RunError::Write(e)),
            (None, r) => r.map_err(RunError::Core),
        }
    }
}
