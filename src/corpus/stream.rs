//! A compressed file (`.gz`, `.zst`) decompressed as it is read, a block at a time,
//! each block ending where the next can start on its own: at a safe cut of text, or
//! after a line of JSON lines.
//!
//! Why streamed rather than decompressed into a scratch file and mapped: the workers
//! start on the first block while the rest is decompressed (on 2 cores, the
//! decompression overlaps the counting), nothing is written to disk, and a folder of
//! compressed shards needs no room in the temporary folder.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::input::Compression;
use crate::error::{Error, Result};

/// Bytes of the file read so far (compressed), shared with the progress report.
#[derive(Clone, Default)]
pub(crate) struct ReadCount(Arc<AtomicU64>);

impl ReadCount {
    pub(crate) fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A reader that counts the bytes it gives.
struct Counted<R> {
    inner: R,
    count: ReadCount,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.0.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// One block of a stream.
pub(crate) struct Block {
    pub(crate) bytes: Vec<u8>,
    /// The offset of its first byte in the decompressed file.
    pub(crate) offset: u64,
    /// Lines before it (counted for JSON lines only, for messages).
    pub(crate) line: u64,
}

/// A file decompressed a block at a time.
pub(crate) struct Stream {
    path: PathBuf,
    compression: Compression,
    reader: Box<dyn Read + Send>,
    pub(crate) read: ReadCount,
    /// Bytes read and not yet in a block.
    carry: Vec<u8>,
    offset: u64,
    line: u64,
    done: bool,
}

impl Stream {
    pub(crate) fn open(path: &Path, compression: Compression) -> Result<Self> {
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        if file.metadata().is_ok_and(|m| m.is_dir()) {
            return Err(Error::invalid(format!(
                "{}: is a directory; pass its files",
                path.display()
            )));
        }
        let read = ReadCount::default();
        let counted = std::io::BufReader::with_capacity(
            1 << 16,
            Counted {
                inner: file,
                count: read.clone(),
            },
        );
        let reader: Box<dyn Read + Send> = match compression {
            Compression::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(counted)),
            Compression::Zstd => Box::new(
                zstd::stream::read::Decoder::with_buffer(counted)
                    .map_err(|e| Error::io(path, e))?,
            ),
            Compression::None => Box::new(counted),
        };
        Ok(Self {
            path: path.to_owned(),
            compression,
            reader,
            read,
            carry: Vec::new(),
            offset: 0,
            line: 0,
            done: false,
        })
    }

    /// The next block of about `target` bytes or more, ending at the cut that `cut`
    /// finds in the bytes read (`cut(bytes, at_end)`: 0 for none yet, and then more is
    /// read); `None` at the end. With `count_lines`, blocks say how many lines came
    /// before them.
    pub(crate) fn next_block(
        &mut self,
        target: usize,
        count_lines: bool,
        cut: impl Fn(&[u8], bool) -> usize,
    ) -> Result<Option<Block>> {
        let mut want = target.max(1);
        loop {
            self.fill(want)?;
            if self.carry.is_empty() {
                return Ok(None);
            }
            let at = cut(&self.carry, self.done).min(self.carry.len());
            if at == 0 && !self.done {
                // No place to cut yet (a long line, a stretch with no safe cut): read
                // on; the block holds it whole.
                want = self.carry.len().saturating_mul(2);
                continue;
            }
            let at = if self.done && at == 0 {
                self.carry.len()
            } else {
                at
            };
            let rest = self.carry[at..].to_vec();
            let mut bytes = std::mem::replace(&mut self.carry, rest);
            bytes.truncate(at);
            let block = Block {
                offset: self.offset,
                line: self.line,
                bytes,
            };
            self.offset += at as u64;
            if count_lines {
                self.line += memchr::memchr_iter(b'\n', &block.bytes).count() as u64;
            }
            return Ok(Some(block));
        }
    }

    /// Reads past the first `at` bytes (a block's start in an earlier read of the same
    /// file), so that the next block starts there.
    pub(crate) fn pass_over(&mut self, at: u64, count_lines: bool) -> Result<()> {
        const STEP: u64 = 1 << 20;
        while self.offset < at {
            let want = (at - self.offset).min(STEP) as usize;
            self.fill(want)?;
            let n = want.min(self.carry.len());
            if n == 0 {
                return Err(Error::invalid(format!(
                    "{}: ends at byte {} of its text, before byte {at} where the earlier \
                     run read on; was it changed?",
                    self.path.display(),
                    self.offset
                )));
            }
            if count_lines {
                self.line += memchr::memchr_iter(b'\n', &self.carry[..n]).count() as u64;
            }
            self.carry.drain(..n);
            self.offset += n as u64;
        }
        Ok(())
    }

    /// Reads until `carry` holds `want` bytes or the stream ends.
    fn fill(&mut self, want: usize) -> Result<()> {
        while !self.done && self.carry.len() < want {
            let len = self.carry.len();
            let room = (want - len).max(1 << 16);
            self.carry
                .try_reserve(room)
                .map_err(|_| Error::out_of_memory::<u8>("decompressed input", len + room))?;
            self.carry.resize(len + room, 0);
            let n = loop {
                match self.reader.read(&mut self.carry[len..]) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        self.carry.truncate(len);
                        return Err(self.read_error(e));
                    }
                }
            };
            self.carry.truncate(len + n);
            if n == 0 {
                self.done = true;
            }
        }
        Ok(())
    }

    /// A read error: a damaged or cut-short compressed file says so, naming it.
    fn read_error(&self, e: std::io::Error) -> Error {
        use std::io::ErrorKind;
        match (self.compression, e.kind()) {
            (Compression::None, _) => Error::io(&self.path, e),
            (
                _,
                ErrorKind::InvalidData
                | ErrorKind::InvalidInput
                | ErrorKind::UnexpectedEof
                | ErrorKind::Other,
            ) => Error::invalid(format!(
                "{}: not a valid {} file ({e})",
                self.path.display(),
                self.compression.suffix()
            )),
            _ => Error::io(&self.path, e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_of_a_zst_file_end_at_cuts_and_join_to_the_text() {
        let dir = std::env::temp_dir().join(format!("bpekit-stream-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let text: Vec<u8> = (0..3000)
            .flat_map(|i| format!("{{\"text\": \"line {i}\"}}\n").into_bytes())
            .collect();
        let path = dir.join("t.jsonl.zst");
        std::fs::write(&path, zstd::encode_all(&text[..], 1).unwrap()).unwrap();
        let lines = |b: &[u8], end: bool| match end {
            true => b.len(),
            false => memchr::memrchr(b'\n', b).map_or(0, |i| i + 1),
        };
        for target in [1, 100, 4096, 1 << 20] {
            let mut stream = Stream::open(&path, Compression::Zstd).unwrap();
            let (mut joined, mut line) = (Vec::new(), 0);
            while let Some(block) = stream.next_block(target, true, lines).unwrap() {
                assert_eq!(block.offset, joined.len() as u64);
                assert_eq!(block.line, line);
                assert_eq!(block.bytes.last(), Some(&b'\n'));
                line += memchr::memchr_iter(b'\n', &block.bytes).count() as u64;
                joined.extend_from_slice(&block.bytes);
            }
            assert_eq!(joined, text, "{target}");
            assert_eq!(stream.read.get(), std::fs::metadata(&path).unwrap().len());
        }
        // Gone on with from a line start: the blocks are the rest, their lines counted.
        let at = text.len() / 3;
        let at = at + text[at..].iter().position(|&b| b == b'\n').unwrap() + 1;
        let mut stream = Stream::open(&path, Compression::Zstd).unwrap();
        stream.pass_over(at as u64, true).unwrap();
        let block = stream.next_block(1 << 20, true, lines).unwrap().unwrap();
        assert_eq!((block.offset, &block.bytes[..]), (at as u64, &text[at..]));
        assert_eq!(
            block.line,
            memchr::memchr_iter(b'\n', &text[..at]).count() as u64
        );
        let mut stream = Stream::open(&path, Compression::Zstd).unwrap();
        let e = stream.pass_over(text.len() as u64 + 1, true).unwrap_err();
        assert!(e.to_string().contains("was it changed?"), "{e}");
        // A damaged file names itself.
        std::fs::write(&path, b"not zstd at all").unwrap();
        let mut stream = Stream::open(&path, Compression::Zstd).unwrap();
        let e = stream
            .next_block(10, true, lines)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("t.jsonl.zst: not a valid .zst file"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
