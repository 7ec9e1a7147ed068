//! Files -> one `.npy` of token ids, in parallel, in memory independent of the input size.
//!
//! Each file is mapped and cut into document-aligned chunks (`corpus::Chunks`: before
//! special tokens and at safe newlines, so chunks encode independently; only the
//! bytes near each cut are read, and each cut is found when a worker asks for its
//! chunk, so encoding starts at once).
//! Chunks are encoded in parallel (`ordered::ordered_map`, a few chunks ahead of the
//! writer at most) and written in input order into a file with no name yet
//! ([`crate::atomic::AtomicFile`]) after a placeholder header; the header gets the
//! real length at the end and the file is put in place of the output. Each chunk's
//! input pages are released once it is written. An error, Ctrl-C or even SIGKILL
//! leaves no new file behind.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

mod npy;
mod ordered;
mod outfile;

use crate::corpus::{
    self, BadRecords, Body, Doc, Input, Items, MappedItems, ReadOptions, Reader, Run,
    SequentialItems, SpecialPolicy, Stats, StatsSummary, Utf8Policy,
};
use crate::encode::encoder::Encoder;
use crate::encode::engine::short_lines_for;
use crate::error::{Error, Result};
use crate::progress::Progress;
use crate::specials::Specials;
use ordered::ordered_map;
use outfile::OutFile;

/// How a file encode runs; the output never depends on these (except `dtype_bytes`).
#[derive(Clone, Copy, Debug)]
pub struct FileOptions {
    /// Worker threads (0: all cores).
    pub num_threads: usize,
    pub utf8: Utf8Policy,
    /// 2 (uint16) or 4 (uint32).
    pub dtype_bytes: usize,
    /// Target chunk size in bytes (0: picked from the input size and thread count).
    pub chunk_size: usize,
    /// An id written after each input file, empty ones included (an end-of-text token
    /// that marks where one file's document ends and the next begins).
    pub after_each_file: Option<u32>,
    /// Special tokens in documents, bad records.
    pub special_in_text: Option<SpecialPolicy>,
    pub bad_records: BadRecords,
    /// Ids around each record's document (a JSON line, a row, an item).
    pub record_marks: Marks,
    /// Ids around each text file (one document for these).
    pub file_marks: Marks,
}

/// Ids written before (`bos`) and after (`eos`) each document of a kind.
#[derive(Clone, Copy, Debug, Default)]
pub struct Marks {
    pub bos: Option<u32>,
    pub eos: Option<u32>,
}

impl Default for FileOptions {
    fn default() -> Self {
        Self {
            num_threads: 0,
            utf8: Utf8Policy::Strict,
            dtype_bytes: 4,
            chunk_size: 0,
            after_each_file: None,
            special_in_text: None,
            bad_records: BadRecords::Error,
            record_marks: Marks::default(),
            file_marks: Marks::default(),
        }
    }
}

/// Chunks a worker may run ahead of the writer: enough to ride over a slow chunk,
/// few enough that buffered ids stay small.
const CHUNKS_AHEAD_PER_THREAD: usize = 4;

/// Encodes the text files `paths` in order into the `.npy` file `output`; returns the
/// token count.
pub fn encode_files(
    encoder: &Encoder,
    paths: &[PathBuf],
    output: &Path,
    options: FileOptions,
    progress: &Progress,
) -> Result<u64> {
    let inputs = Input::text_files(paths);
    encode_inputs(encoder, inputs, output, options, progress).map(|(n, _)| n)
}

/// Encodes the documents of `inputs` in order into the `.npy` file `output`; returns
/// the token count and what was read.
pub fn encode_inputs(
    encoder: &Encoder,
    inputs: Vec<Input>,
    output: &Path,
    options: FileOptions,
    progress: &Progress,
) -> Result<(u64, StatsSummary)> {
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
    let paths: Vec<PathBuf> = inputs
        .iter()
        .filter_map(|i| match i {
            Input::File { path, .. } => Some(path.clone()),
            Input::Feed { .. } => None,
        })
        .collect();
    check_output(output, &paths)?;
    write_npy(encoder, inputs, output, options, progress)
}

/// The largest automatic chunk ([`corpus::chunk_size`]): at most 1 MB so the chunks
/// in flight stay small. Each chunk wakes the writer, which on a 2-core machine
/// preempts an encoder: 1 MB chunks instead of 256 KB took a warm 2-thread encode of
/// the 116 MB English corpus from ~540 to ~590 MB/s.
const MAX_AUTO_CHUNK: usize = 1 << 20;

/// Refuses an output that could never be written, or should not be, before any input
/// is read: a run over gigabytes should not fail at its final rename, and the rename
/// would replace an input (or, run as root, a device such as `/dev/null`).
fn check_output(output: &Path, inputs: &[PathBuf]) -> Result<()> {
    use std::io::{Error as IoError, ErrorKind};
    if let Some(input) = inputs.iter().find(|p| same_file(p, output)) {
        return Err(Error::invalid(format!(
            "{}: the output is also an input ({}); write it elsewhere",
            output.display(),
            input.display()
        )));
    }
    if output.exists() && !output.is_file() && !output.is_dir() {
        return Err(Error::invalid(format!(
            "{}: not a regular file (a device or a pipe); the output is written beside \
             its path and renamed over it, so give the path of a file",
            output.display()
        )));
    }
    if output.is_dir() {
        return Err(Error::io(
            output,
            IoError::new(
                ErrorKind::IsADirectory,
                "is a folder; give the path of the .npy file to write",
            ),
        ));
    }
    let folder = match output.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !folder.is_dir() {
        return Err(Error::io(
            folder,
            IoError::new(
                ErrorKind::NotFound,
                format!(
                    "no such folder to write {} in",
                    output
                        .file_name()
                        .map_or("the output".into(), |n| n.to_string_lossy())
                ),
            ),
        ));
    }
    Ok(())
}

/// Whether `a` and `b` name the same existing file (hard links and other spellings
/// of one path included).
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        #[cfg(unix)]
        (Ok(x), Ok(y)) => {
            use std::os::unix::fs::MetadataExt;
            x.dev() == y.dev() && x.ino() == y.ino()
        }
        #[cfg(not(unix))]
        (Ok(_), Ok(_)) => a.canonicalize().ok() == b.canonicalize().ok(),
        _ => false,
    }
}

fn write_npy(
    encoder: &Encoder,
    inputs: Vec<Input>,
    output: &Path,
    options: FileOptions,
    progress: &Progress,
) -> Result<(u64, StatsSummary)> {
    let (info, runs) = corpus::plan(inputs);
    progress.reset(runs.iter().map(Run::size_on_disk).sum());
    let descr = if options.dtype_bytes == 2 {
        "<u2"
    } else {
        "<u4"
    };
    let io = |e| Error::io(output, e);
    let mut file = OutFile::create(output).map_err(io)?;
    file.write_bytes(&npy::header(descr, 0)).map_err(io)?;
    let threads = if options.num_threads == 0 {
        crate::pool::default_threads()
    } else {
        options.num_threads
    };
    let allowed = encoder.specials();
    let stats = Stats::default();
    let read = ReadOptions {
        utf8: options.utf8,
        special_in_text: options.special_in_text,
        bad_records: options.bad_records,
    };
    let reader = Reader::new(&info, read, &allowed.matcher, &stats);
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
    let mut writer = Writer {
        file: &mut file,
        options,
        reader: &reader,
        count: 0,
        ended: 0,
        started: false,
        released: vec![0; info.len()],
    };
    let kind = encoder.pretokenizer().kind();
    for run in runs {
        match run {
            // Files a group at a time (`corpus::Groups`); within a group, every chunk
            // of every file in order, so the workers never wait between files.
            Run::Mapped(files) => corpus::each_group(files, progress, |sources, inputs| {
                // Counted from the bytes held, as a pipe's size on disk says nothing.
                let held: usize = sources.iter().map(|s| s.bytes().len()).sum();
                let workers = corpus::worker_count(threads, held, sources.len(), chunk_size);
                let cut = reader.cut_specials();
                let items =
                    MappedItems::new(sources, inputs, &info, cut, chunk_size, kind, workers);
                job.run(&items, workers, &mut writer).map_err(io_at(output))
            })?,
            Run::Sequential(list) => {
                let items = SequentialItems::new(
                    list,
                    &info,
                    reader.cut_specials(),
                    kind,
                    chunk_size,
                    progress,
                );
                job.run(&items, threads, &mut writer)
                    .map_err(io_at(output))?;
            }
        }
    }
    writer.end_until(info.len()).map_err(io)?;
    let count = writer.count;
    file.finish(&npy::header(descr, count)).map_err(io)?;
    for i in 0..info.len() {
        if reader.is_text_file(i) {
            stats.add_text_file();
        }
    }
    Ok((count, stats.summary()))
}

/// The error of a run: the core's, or a write error of the output.
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
struct Encoded<'a> {
    input: usize,
    /// A mapped chunk's file and end, to release the bytes behind it once written.
    mapped: Option<(&'a corpus::Source, usize)>,
    ids: Vec<u32>,
}

impl Job<'_> {
    /// Encodes every item of `items` on `workers` threads, in order into `writer`.
    fn run<'a>(
        &self,
        items: &impl Items<'a>,
        workers: usize,
        writer: &mut Writer<'_, '_>,
    ) -> std::result::Result<(), RunError> {
        let encoder = self.encoder;
        let allowed = encoder.specials();
        let none = Specials::default();
        // The tables are sized for the whole input as far as it is known: opening a
        // group puts its pipes' real sizes into the total.
        let sized_for = usize::try_from(self.progress.total()).unwrap_or(usize::MAX);
        if self.threads > 1 {
            encoder.workspaces().size_shared_for(sized_for);
        }
        let marks = self.options.record_marks;
        let mut write_error = None;
        let outcome = ordered_map(
            usize::MAX,
            workers,
            workers * CHUNKS_AHEAD_PER_THREAD,
            // Threads share one short table, so a piece merged by one is a hit for all.
            || {
                let mut lease = match self.threads {
                    1 => encoder.lease(),
                    _ => encoder.workspaces().lease_shared(),
                }?;
                lease.short.reserve_lines(short_lines_for(sized_for));
                lease.short.populate();
                Ok(lease)
            },
            |i, ws| {
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
                let mut encode = |doc: Doc<'_>| -> Result<()> {
                    let allowed = if doc.specials { allowed } else { &none };
                    if doc.record {
                        ids.extend(marks.bos);
                    }
                    encoder.encode_into(&doc.text, allowed, ws, &mut ids)?;
                    if doc.record {
                        ids.extend(marks.eos);
                    }
                    Ok(())
                };
                let mapped = match &item.body {
                    Body::Mapped { source, range } => {
                        self.reader
                            .mapped(item.input, source, range.clone(), &mut encode)?;
                        Some((*source, range.end))
                    }
                    _ => {
                        self.reader.owned(&item, &mut encode)?;
                        None
                    }
                };
                self.progress.add(item.progress_len());
                Ok(Some(Encoded {
                    input: item.input,
                    mapped,
                    ids,
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

/// Writes items' ids in order, with the marks around files.
struct Writer<'f, 'r> {
    file: &'f mut OutFile,
    options: FileOptions,
    reader: &'r Reader<'r>,
    count: u64,
    /// Inputs before this one are ended (their closing marks written).
    ended: usize,
    /// Whether input `ended` has begun (its opening mark written).
    started: bool,
    /// Where each mapped input's released bytes end ([`corpus::Source::release_behind`]).
    released: Vec<usize>,
}

impl Writer<'_, '_> {
    fn ids(&mut self, ids: &[u32]) -> std::io::Result<()> {
        self.file.write_ids(ids, self.options.dtype_bytes)?;
        self.count += ids.len() as u64;
        Ok(())
    }

    fn write(&mut self, encoded: &Encoded<'_>) -> std::io::Result<()> {
        self.end_until(encoded.input)?;
        if !self.started {
            self.started = true;
            if self.reader.is_text_file(encoded.input) {
                let bos = self.options.file_marks.bos;
                self.ids(bos.as_slice())?;
            }
        }
        self.ids(&encoded.ids)?;
        // Done with these bytes: keep the mapped file out of resident memory.
        if let Some((source, end)) = encoded.mapped {
            let released = &mut self.released[encoded.input];
            *released = source.release_behind(*released, end);
        }
        Ok(())
    }

    /// Ends every input before `input` (an empty one too): a text file's bos (where it
    /// had no chunk) and eos, and `after_each_file`.
    fn end_until(&mut self, input: usize) -> std::io::Result<()> {
        while self.ended < input {
            if self.reader.is_text_file(self.ended) {
                let marks = self.options.file_marks;
                if !self.started {
                    self.ids(marks.bos.as_slice())?;
                }
                self.ids(marks.eos.as_slice())?;
            }
            let after = self.options.after_each_file;
            self.ids(after.as_slice())?;
            self.ended += 1;
            self.started = false;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::encode::cache::ShortCache;

    /// The ids of a `uint16` `.npy` file.
    fn read_u16_ids(path: &Path) -> Vec<u32> {
        let data = std::fs::read(path).unwrap();
        data[npy::HEADER_LEN..]
            .chunks(2)
            .map(|c| u32::from(u16::from_le_bytes([c[0], c[1]])))
            .collect()
    }

    #[test]
    fn file_equals_encode_and_cancel_leaves_nothing() {
        let vocab: Vec<(u32, Vec<u8>)> = (0..=255u8).map(|b| (u32::from(b), vec![b])).collect();
        let merges = vec![];
        let e = Encoder::from_merges(vocab, &merges, vec!["<|e|>".into()], "gpt2").unwrap();
        let dir = std::env::temp_dir().join(format!("bpekit-file-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let input = dir.join("in.txt");
        let text = "one doc\nTwo lines<|e|>second doc\nok".repeat(50);
        std::fs::write(&input, &text).unwrap();
        let out = dir.join("out.npy");
        let options = FileOptions {
            chunk_size: 16,
            num_threads: 2,
            dtype_bytes: 2,
            ..FileOptions::default()
        };
        let n = encode_files(
            &e,
            std::slice::from_ref(&input),
            &out,
            options,
            &Progress::new(),
        )
        .unwrap();
        let expected = e.encode(&text, e.specials()).unwrap();
        assert_eq!(n as usize, expected.len());
        assert_eq!(read_u16_ids(&out), expected);
        // The workers of a 2-thread encode lease the shared cache, so that no piece
        // is merged once per thread (regression test).
        if ShortCache::can_share() {
            assert!(e.workspaces().shared_cache_len() > 0);
        }

        // `after_each_file`: the id goes after each file, an empty one too.
        let empty = dir.join("empty.txt");
        std::fs::write(&empty, "").unwrap();
        let ended = FileOptions {
            after_each_file: Some(256),
            ..options
        };
        let paths = [input.clone(), empty.clone(), input.clone()];
        let n = encode_files(&e, &paths, &out, ended, &Progress::new()).unwrap();
        let mut want = expected.clone();
        want.extend([256, 256]);
        want.extend(&expected);
        want.push(256);
        assert_eq!(n as usize, want.len());
        assert_eq!(read_u16_ids(&out), want);
        std::fs::remove_file(&empty).unwrap();
        let unknown = FileOptions {
            after_each_file: Some(9999),
            ..options
        };
        assert!(encode_files(&e, &paths[..1], &out, unknown, &Progress::new()).is_err());

        let cancelled = Progress::new();
        cancelled.cancel();
        let out2 = dir.join("out2.npy");
        assert!(encode_files(&e, &[input], &out2, options, &cancelled).is_err());
        assert!(!out2.exists());
        let leftovers = std::fs::read_dir(&dir).unwrap().count();
        assert_eq!(leftovers, 2); // in.txt and out.npy
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
