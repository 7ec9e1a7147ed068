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

use crate::corpus::{self, Utf8Policy};
use crate::encode::encoder::Encoder;
use crate::encode::engine::short_lines_for;
use crate::error::{Error, Result};
use crate::progress::Progress;
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
}

impl Default for FileOptions {
    fn default() -> Self {
        Self {
            num_threads: 0,
            utf8: Utf8Policy::Strict,
            dtype_bytes: 4,
            chunk_size: 0,
            after_each_file: None,
        }
    }
}

/// Chunks a worker may run ahead of the writer: enough to ride over a slow chunk,
/// few enough that buffered ids stay small.
const CHUNKS_AHEAD_PER_THREAD: usize = 4;

/// Encodes `paths` in order into the `.npy` file `output`; returns the token count.
pub fn encode_files(
    encoder: &Encoder,
    paths: &[PathBuf],
    output: &Path,
    options: FileOptions,
    progress: &Progress,
) -> Result<u64> {
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
    if let Some(id) = options.after_each_file {
        // In the vocabulary, so it fits the dtype checked above.
        if encoder.bpe().token(id).is_none() {
            return Err(Error::invalid(format!(
                "token id {id}, to write after each file, is not in the vocabulary"
            )));
        }
    }
    check_output(output, paths)?;
    write_npy(encoder, paths, output, options, progress)
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
    paths: &[PathBuf],
    output: &Path,
    options: FileOptions,
    progress: &Progress,
) -> Result<u64> {
    progress.reset(corpus::size_on_disk(paths));
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
    let total = usize::try_from(progress.total()).unwrap_or(usize::MAX);
    let chunk_size = match options.chunk_size {
        0 => corpus::chunk_size(total, threads, MAX_AUTO_CHUNK),
        n => n,
    };
    let mut count = 0u64;
    // Id buffers go back to the workers once written: a fresh buffer per chunk cost a
    // page fault (and the kernel zeroing a page) per 1024 ids, 6% of a 2-thread run.
    let spare_buffers: Mutex<Vec<Vec<u32>>> = Mutex::new(Vec::new());
    // Files a group at a time (`corpus::Groups`); within a group, every chunk of every
    // file in order, so the workers never wait between files.
    for group in corpus::Groups::new(paths, progress) {
        let sources = group?;
        // The tables are sized for the whole input as far as it is known: opening this
        // group put its pipes' and `.gz` files' real sizes into the total, where their
        // sizes on disk (0, or the compressed size) had left a table too small, grown
        // by copying while the workers waited on it.
        let sized_for = usize::try_from(progress.total()).unwrap_or(usize::MAX);
        if threads > 1 {
            encoder.workspaces().size_shared_for(sized_for);
        }
        // Files of this group whose ids are all written: `after_each_file` goes out when
        // the first chunk of a later file arrives (an empty file has no chunk), and for
        // the rest at the group's end.
        let mut files_ended = 0;
        // Where each file's released bytes end ([`corpus::Source::release_behind`]).
        let mut released = vec![0; sources.len()];
        // Counted from the bytes held, as a pipe's or a `.gz` file's size on disk says
        // nothing.
        let held: usize = sources.iter().map(|s| s.bytes().len()).sum();
        let workers = corpus::worker_count(threads, held, sources.len(), chunk_size);
        let chunks = corpus::Chunks::new(
            &sources,
            &allowed.matcher,
            chunk_size,
            encoder.pretokenizer().kind(),
        )
        .tapered(workers);
        ordered_map(
            usize::MAX,
            workers,
            workers * CHUNKS_AHEAD_PER_THREAD,
            // Threads share one short table, so a piece merged by one is a hit for all.
            || {
                let mut lease = match threads {
                    1 => encoder.lease(),
                    _ => encoder.workspaces().lease_shared(),
                }?;
                lease.short.reserve_lines(short_lines_for(sized_for));
                lease.short.populate();
                Ok(lease)
            },
            |i, ws| {
                progress.check()?;
                // A workspace that could not be made fails the worker's first chunk.
                let ws = match ws {
                    Ok(ws) => ws,
                    Err(e) => return Err(std::mem::replace(e, Error::Cancelled)),
                };
                let Some((s, range)) = chunks.get(i) else {
                    return Ok(None);
                };
                let text = corpus::decode(&sources[s], range.clone(), options.utf8)?;
                encoder.workspaces().refresh_shared(ws);
                let spare = spare_buffers.lock().ok().and_then(|mut b| b.pop());
                let mut ids = spare.unwrap_or_default();
                ids.clear();
                ids.try_reserve(range.len() / 2 + 16)
                    .map_err(|_| Error::out_of_memory::<u32>("token ids", range.len() / 2))?;
                encoder.encode_into(&text, allowed, ws, &mut ids)?;
                progress.add(range.len() as u64);
                Ok(Some((s, range, ids)))
            },
            |_, (s, range, ids)| {
                count += end_files(&mut file, &mut files_ended, s, options).map_err(io)?;
                file.write_ids(&ids, options.dtype_bytes).map_err(io)?;
                count += ids.len() as u64;
                // Done with these bytes: keep the mapped file out of resident memory.
                released[s] = sources[s].release_behind(released[s], range.end);
                if let Ok(mut spare) = spare_buffers.lock() {
                    spare.push(ids);
                }
                Ok(())
            },
        )?;
        corpus::check_intact(&sources)?;
        count += end_files(&mut file, &mut files_ended, sources.len(), options).map_err(io)?;
    }
    file.finish(&npy::header(descr, count)).map_err(io)?;
    Ok(count)
}

/// Writes `options.after_each_file` for each file from `*ended` up to (not including)
/// `file`, and moves `*ended` there; returns the ids written.
fn end_files(
    out: &mut OutFile,
    ended: &mut usize,
    file: usize,
    options: FileOptions,
) -> std::io::Result<u64> {
    let Some(id) = options.after_each_file else {
        return Ok(0);
    };
    let n = file.saturating_sub(*ended);
    for _ in 0..n {
        out.write_ids(&[id], options.dtype_bytes)?;
    }
    *ended = (*ended).max(file);
    Ok(n as u64)
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
