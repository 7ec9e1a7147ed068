//! Inputs -> one `.npy` of token ids, in parallel, in memory independent of the input size.
//!
//! Each file is mapped and cut into document-aligned chunks (`corpus::Chunks`: before
//! special tokens and at safe newlines, so chunks encode independently; only the
//! bytes near each cut are read, and each cut is found when a worker asks for its
//! chunk, so encoding starts at once).
//! Chunks are encoded in parallel (`super::ordered::ordered_map`, a few chunks ahead of the
//! writer at most) and written in input order into a file with no name yet
//! ([`crate::whole_file::WholeFile`]) after a placeholder header; the header gets the
//! real length at the end and the file is put in place of the output. Each chunk's
//! input pages are released once it is written. An error, Ctrl-C or even SIGKILL
//! leaves no new file behind.

use std::path::{Path, PathBuf};

use super::job::{check_options, encode_all, is_text_file, Encoded, Sink};
use super::npy;
use super::options::FileOptions;
use super::outfile::OutFile;
use crate::corpus::{Input, StatsSummary};
use crate::encode::Encoder;
use crate::error::{Error, Result};
use crate::progress::Progress;

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
    check_options(encoder, &options)?;
    let paths: Vec<PathBuf> = inputs
        .iter()
        .filter_map(|i| match i {
            Input::File { path, .. } => Some(path.clone()),
            Input::Stream { .. } | Input::Feed { .. } => None,
        })
        .collect();
    check_output(output, &paths)?;
    write_npy(encoder, inputs, output, options, progress)
}

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
    let descr = if options.dtype_bytes == 2 {
        "<u2"
    } else {
        "<u4"
    };
    let io = |e| Error::io(output, e);
    let mut file = OutFile::create(output).map_err(io)?;
    file.write_bytes(&npy::header(descr, 0)).map_err(io)?;
    let mut writer = Writer {
        file: &mut file,
        options,
        is_text: is_text_file(&inputs),
        count: 0,
        ended: 0,
        started: false,
        released: vec![0; inputs.len()],
    };
    let stats = encode_all(
        encoder,
        inputs,
        options,
        progress,
        output,
        &mut writer,
        None,
    )?;
    // Before the output is in place: a run that read no document writes nothing, and
    // one stopped (Ctrl-C) during its last chunk leaves the old file where it was.
    stats.check_some_read()?;
    progress.check_now()?;
    let count = writer.count;
    file.finish(&npy::header(descr, count)).map_err(io)?;
    Ok((count, stats))
}

/// Writes items' ids in order into one `.npy`, with the marks around files.
struct Writer<'f> {
    file: &'f mut OutFile,
    options: FileOptions,
    is_text: Vec<bool>,
    count: u64,
    /// Inputs before this one are ended (their closing marks written).
    ended: usize,
    /// Whether input `ended` has begun (its opening mark written).
    started: bool,
    /// Where each mapped input's released bytes end ([`corpus::Source::release_behind`]).
    released: Vec<usize>,
}

impl Sink for Writer<'_> {
    fn write(&mut self, encoded: &Encoded<'_>) -> std::io::Result<()> {
        self.write_encoded(encoded)
    }

    fn end_until(&mut self, input: usize) -> std::io::Result<()> {
        self.end_inputs(input)
    }
}

impl Writer<'_> {
    fn ids(&mut self, ids: &[u32]) -> std::io::Result<()> {
        self.file.write_ids(ids, self.options.dtype_bytes)?;
        self.count += ids.len() as u64;
        Ok(())
    }

    fn write_encoded(&mut self, encoded: &Encoded<'_>) -> std::io::Result<()> {
        self.end_inputs(encoded.input)?;
        if !self.started {
            self.started = true;
            if self.is_text[encoded.input] {
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
    fn end_inputs(&mut self, input: usize) -> std::io::Result<()> {
        while self.ended < input {
            if self.is_text[self.ended] {
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
