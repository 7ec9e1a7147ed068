//! A compressed file (`.gz`, `.zst`) decompressed as it is read, or a pipe read as it
//! comes, a block at a time, each block ending where the next can start on its own:
//! at a safe cut of text, or after a line of JSON lines.
//!
//! Why streamed rather than decompressed into a scratch file and mapped: the workers
//! start on the first block while the rest is decompressed (on 2 cores, the
//! decompression overlaps the counting), nothing is written to disk, and a folder of
//! compressed shards needs no room in the temporary folder.

use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use super::input::Compression;
use super::pipe::{self, PathKind, PipeReader};
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

/// One block of a compressed file or a pipe.
pub(crate) struct Block {
    pub(crate) bytes: Vec<u8>,
    /// The offset of its first byte in the decompressed file.
    pub(crate) offset: u64,
    /// Lines before it (counted for JSON lines only, for messages).
    pub(crate) line: u64,
}

/// A compressed file or a pipe, read (and decompressed) a block at a time.
pub(crate) struct Blocks {
    path: PathBuf,
    compression: Compression,
    reader: Box<dyn Read + Send>,
    pub(crate) read: ReadCount,
    /// Bytes read and not yet in a block.
    carry: Vec<u8>,
    offset: u64,
    line: u64,
    done: bool,
    /// Whether the file is a pipe (its size is not known ahead).
    pipe: bool,
}

impl Blocks {
    /// Opens `path` to read it decompressed; a pipe's reads stop once `cancel` is set
    /// ([`PipeReader`]).
    pub(crate) fn open(
        path: &Path,
        compression: Compression,
        cancel: Arc<AtomicBool>,
    ) -> Result<Self> {
        let (file, _, kind) = pipe::open(path)?;
        let inner: Box<dyn Read + Send> = match kind {
            PathKind::File => Box::new(file),
            PathKind::Pipe => Box::new(PipeReader::new(file, cancel)),
        };
        Self::of_reader(path, inner, compression, kind == PathKind::Pipe)
    }

    /// `inner`'s bytes (a stream's, named `path` in messages), read decompressed.
    pub(crate) fn of_reader(
        path: &Path,
        inner: Box<dyn Read + Send>,
        compression: Compression,
        pipe: bool,
    ) -> Result<Self> {
        let read = ReadCount::default();
        let counted = std::io::BufReader::with_capacity(
            1 << 16,
            Counted {
                inner,
                count: read.clone(),
            },
        );
        let reader: Box<dyn Read + Send> = match compression {
            Compression::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(counted)),
            Compression::Zstd => Box::new(zstd_decoder(path, counted)?),
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
            pipe,
        })
    }

    /// Whether the file is a pipe, whose size is not known ahead.
    pub(crate) fn is_pipe(&self) -> bool {
        self.pipe
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

    /// Reads until `carry` holds `want` bytes or the file ends.
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
        if pipe::is_stopped(&e) {
            return Error::Cancelled;
        }
        let e = match super::input::raised(e) {
            Ok(passed) => return passed,
            Err(e) => e,
        };
        if self.compression == Compression::Zstd && is_zstd_out_of_memory(&e) {
            return zstd_out_of_memory(&self.path, None);
        }
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

/// The largest window a `.zst` frame may ask for: zstd's own limit on 64-bit
/// (`zstd --long=31`), where the decoder's default stops at 128 MiB (`--long=27`).
const ZSTD_WINDOW_LOG_MAX: u32 = if cfg!(target_pointer_width = "64") {
    31
} else {
    30
};

/// The window up to which zstd decodes by default, and no memory check is made.
const ZSTD_DEFAULT_WINDOW: u64 = 1 << 27;

/// A decoder of the `.zst` file `path` that `reader` reads, taking frames written with
/// a long window (`zstd --long=31`: up to 2 GiB), which zstd's default refuses as
/// "Frame requires too much memory". The first frame's window is read from its header
/// and, past the default, checked to fit in memory first ([`crate::hugemem::probe`]):
/// an error naming the file and the window, rather than an allocation that fails in
/// the decoder (or, with overcommit, a process killed as it fills).
fn zstd_decoder<R: BufRead>(
    path: &Path,
    mut reader: R,
) -> Result<zstd::stream::read::Decoder<'static, R>> {
    let window = reader.fill_buf().ok().and_then(zstd_window);
    if let Some(window) = window.filter(|&w| w > ZSTD_DEFAULT_WINDOW) {
        let fits = usize::try_from(window).is_ok_and(crate::hugemem::probe);
        if !fits {
            return Err(zstd_out_of_memory(path, Some(window)));
        }
    }
    let io = |e| Error::io(path, e);
    let mut decoder = zstd::stream::read::Decoder::with_buffer(reader).map_err(io)?;
    decoder.window_log_max(ZSTD_WINDOW_LOG_MAX).map_err(io)?;
    Ok(decoder)
}

/// The window (bytes) that the zstd frame starting `bytes` declares, from its header:
/// the window descriptor, or for a single-segment frame its content size. `None` for
/// what is not the start of a zstd frame (a skippable frame, too few bytes).
fn zstd_window(bytes: &[u8]) -> Option<u64> {
    const MAGIC: u32 = 0xFD2F_B528;
    if u32::from_le_bytes(bytes.get(..4)?.try_into().ok()?) != MAGIC {
        return None;
    }
    let descriptor = *bytes.get(4)?;
    if descriptor & 0x20 == 0 {
        // Window_Descriptor: exponent (5 bits) and mantissa (3 bits).
        let wd = *bytes.get(5)?;
        let base = 1u64 << (10 + u32::from(wd >> 3));
        return Some(base + base / 8 * u64::from(wd & 7));
    }
    // Single segment: the window is the whole content, whose size follows the
    // dictionary id.
    let dict_len = [0, 1, 2, 4][usize::from(descriptor & 3)];
    let size_len = [1, 2, 4, 8][usize::from(descriptor >> 6)];
    let at = 5 + dict_len;
    let mut size = [0u8; 8];
    size[..size_len].copy_from_slice(bytes.get(at..at + size_len)?);
    let size = u64::from_le_bytes(size);
    Some(if size_len == 2 { size + 256 } else { size })
}

/// Whether `e` is zstd's failure to allocate (a window that did not fit).
fn is_zstd_out_of_memory(e: &std::io::Error) -> bool {
    e.to_string().contains("Allocation error")
}

/// The error for a `.zst` file whose window (if known) could not be had in memory.
fn zstd_out_of_memory(path: &Path, window: Option<u64>) -> Error {
    let window = match window {
        Some(w) => format!("its window of {} MiB", w >> 20),
        None => "its window".to_owned(),
    };
    Error::io(
        path,
        std::io::Error::new(
            std::io::ErrorKind::OutOfMemory,
            format!(
                "out of memory for {window} (it was compressed with a long window, \
                 zstd --long): decompress it where there is more memory, or compress it \
                 again without --long"
            ),
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_of_a_zst_file_end_at_cuts_and_join_to_the_text() {
        let dir = std::env::temp_dir().join(format!("bpekit-blocks-{}", std::process::id()));
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
            let mut blocks = Blocks::open(&path, Compression::Zstd, Default::default()).unwrap();
            let (mut joined, mut line) = (Vec::new(), 0);
            while let Some(block) = blocks.next_block(target, true, lines).unwrap() {
                assert_eq!(block.offset, joined.len() as u64);
                assert_eq!(block.line, line);
                assert_eq!(block.bytes.last(), Some(&b'\n'));
                line += memchr::memchr_iter(b'\n', &block.bytes).count() as u64;
                joined.extend_from_slice(&block.bytes);
            }
            assert_eq!(joined, text, "{target}");
            assert_eq!(blocks.read.get(), std::fs::metadata(&path).unwrap().len());
        }
        // Gone on with from a line start: the blocks are the rest, their lines counted.
        let at = text.len() / 3;
        let at = at + text[at..].iter().position(|&b| b == b'\n').unwrap() + 1;
        let mut blocks = Blocks::open(&path, Compression::Zstd, Default::default()).unwrap();
        blocks.pass_over(at as u64, true).unwrap();
        let block = blocks.next_block(1 << 20, true, lines).unwrap().unwrap();
        assert_eq!((block.offset, &block.bytes[..]), (at as u64, &text[at..]));
        assert_eq!(
            block.line,
            memchr::memchr_iter(b'\n', &text[..at]).count() as u64
        );
        let mut blocks = Blocks::open(&path, Compression::Zstd, Default::default()).unwrap();
        let e = blocks.pass_over(text.len() as u64 + 1, true).unwrap_err();
        assert!(e.to_string().contains("was it changed?"), "{e}");
        // A damaged file names itself.
        std::fs::write(&path, b"not zstd at all").unwrap();
        let mut blocks = Blocks::open(&path, Compression::Zstd, Default::default()).unwrap();
        let e = blocks
            .next_block(10, true, lines)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("t.jsonl.zst: not a valid .zst file"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_zst_frame_header_gives_its_window() {
        // A frame of `zstd --long=31` read from a pipe: window descriptor 0xA8.
        assert_eq!(
            zstd_window(&[0x28, 0xB5, 0x2F, 0xFD, 0x04, 0xA8]),
            Some(1 << 31)
        );
        // Exponent 17, mantissa 4: 2^27 + 4/8 of it.
        assert_eq!(
            zstd_window(&[0x28, 0xB5, 0x2F, 0xFD, 0x00, (17 << 3) | 4]),
            Some((1 << 27) + (1 << 26))
        );
        // Single segment: the content size (2 bytes, plus 256).
        assert_eq!(
            zstd_window(&[0x28, 0xB5, 0x2F, 0xFD, 0x60, 0x10, 0x00]),
            Some(0x10 + 256)
        );
        assert_eq!(zstd_window(b"not zstd"), None);
        assert_eq!(zstd_window(&[0x28, 0xB5, 0x2F, 0xFD]), None);
        // What zstd writes itself decodes, and says its window.
        let frame = zstd::encode_all(&b"hello"[..], 3).unwrap();
        assert!(zstd_window(&frame).is_some());
    }
}
