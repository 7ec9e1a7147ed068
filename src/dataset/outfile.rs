//! The token file's writer: ids appended as little-endian bytes through a staging
//! buffer, written with `O_DIRECT` where the file system takes it.
//!
//! Why direct I/O (perf, `bpekit encode` of the 116 MB English corpus, 2 threads on
//! the 2-core VM): a buffered `write` copies every byte into the page cache, and the
//! kernel's copy (`copy_folio_from_iter_atomic`) took the writer thread 15-35% of an
//! encoding thread's time; on two cores that time comes out of the encoders (2
//! threads without writing: 1.85x one thread; with buffered writes: 1.6x). A direct
//! write is a DMA from the staging buffer, so the writer's only work is filling it
//! (narrowing to `uint16` on the way). Direct writes need block-aligned buffers,
//! offsets and sizes: the buffer is whole 4 KiB blocks, the last block is padded and
//! the file cut to its real length at the end. File systems without `O_DIRECT`
//! (tmpfs) refuse it at open, or at the first write, and get buffered writes.
//!
//! A file's first [`BUFFERED_BYTES`] and its last write go through the page cache
//! all the same. Why: a direct write waits for the device (1 MiB took the writer
//! 3.1-3.4 ms on the VM's disk), and a write nothing else runs beside (a small
//! file's only one, or any file's last, after the encoders are done) adds that wait
//! to the call, where the page cache takes 1 MiB in ~0.3 ms; the file is then also
//! in the page cache for whoever reads it next. On the 2 MB TinyStories sample
//! (gpt2, 1 MB of ids) `encode_file` took ~15 ms with direct writes, ~11 with these.
//!
//! A file may be checksummed (CRC-32) as its bytes are staged, with the header given
//! at the end taken first ([`OutFile::with_checksum`]): a distributed encode's unit
//! files were read back whole to be hashed (sha256) when done, which on `owt-12G`
//! took 14 of the 30 CPU seconds a Ray run spent over one process's (perf: the
//! kernel's copy into the reader and the hash). CRC-32 here runs at memory speed, and
//! guards what it is for: a torn or damaged file a rerun must not keep.

use std::io::{self, Write};
use std::path::Path;

use memmap2::MmapMut;
use sha2::{Digest, Sha256};

use crate::whole_file::WholeFile;

/// The alignment direct I/O asks of buffers, offsets and sizes on Linux file systems.
const BLOCK: usize = 4096;
/// Blocks in the staging buffer: 1 MiB, so a write is large enough to cost little
/// per call and small enough to leave the encoders' chunks in cache.
const STAGING_BLOCKS: usize = 256;
/// Bytes of each file written through the page cache before direct writes start
/// (see the module's docs): 4 staging buffers.
const BUFFERED_BYTES: u64 = 4 << 20;

pub struct OutFile {
    /// Written under no name (or a temporary one) until [`OutFile::finish`].
    file: WholeFile,
    /// Whether writes are direct now.
    direct: bool,
    /// Whether the file system takes direct writes (to start them at
    /// [`BUFFERED_BYTES`]).
    can_direct: bool,
    /// Page-aligned, as direct writes need. An anonymous map rather than a zeroed
    /// vector: the kernel supplies its pages as they are first written, while the
    /// encoders run, where zeroing 4 MiB up front took ~2.5 ms before any encoding
    /// could start (and most of it for nothing when the output is small).
    staging: MmapMut,
    /// Bytes of `staging` in use.
    staged: usize,
    /// Bytes written to the file so far (a multiple of [`BLOCK`] until the last write
    /// where direct writes can be had).
    flushed: u64,
    /// What the file's bytes are summed into as they are staged, if anything.
    checksum: Option<Sum>,
}

/// Which file an [`OutFile::append_from`] failed on.
#[derive(Debug)]
pub(crate) enum Side {
    Read(io::Error),
    Write(io::Error),
}

/// A file's checksum, taken as its bytes are staged.
enum Sum {
    /// The CRC-32 of the bytes appended after the header's placeholder (combined
    /// with the header's at the end), the placeholder's bytes still to pass, and its
    /// length.
    Crc(crc32fast::Hasher, usize, usize),
    /// The sha256 of every byte, in order: for a file whose header is appended
    /// first, known from the start.
    Sha(Box<Sha256>),
}

impl OutFile {
    /// Starts a file that will replace `path` when finished ([`WholeFile`]), direct
    /// where the file system allows.
    pub fn create(path: &Path) -> io::Result<Self> {
        let file = WholeFile::create(path, true).map_err(|e| {
            let folder = path.parent().filter(|p| !p.as_os_str().is_empty());
            let folder = folder.map_or(".".into(), |p| p.display().to_string());
            std::io::Error::new(e.kind(), format!("cannot create a file in {folder}: {e}"))
        })?;
        let mut out = Self {
            direct: file.is_direct(),
            can_direct: file.is_direct(),
            file,
            staging: MmapMut::map_anon(STAGING_BLOCKS * BLOCK)?,
            staged: 0,
            flushed: 0,
            checksum: None,
        };
        // Buffered first (see the module's docs); where that cannot be set, the
        // writes stay direct, which is only slower for a small file.
        if out.direct {
            let _ = out.set_direct(false);
        }
        Ok(out)
    }

    /// [`OutFile::create`], checksumming the file: [`OutFile::finish_checked`] gives
    /// the CRC-32 of the whole file, whose first `header_len` bytes (appended as a
    /// placeholder) are the header given there.
    pub fn with_checksum(path: &Path, header_len: usize) -> io::Result<Self> {
        let mut file = Self::create(path)?;
        file.checksum = Some(Sum::Crc(crc32fast::Hasher::new(), header_len, header_len));
        Ok(file)
    }

    /// [`OutFile::create`], hashing every byte appended (sha256), in order: for a file
    /// whose header is appended first ([`OutFile::finish_sha256`] gives the hash).
    pub fn with_sha256(path: &Path) -> io::Result<Self> {
        let mut file = Self::create(path)?;
        file.checksum = Some(Sum::Sha(Box::default()));
        Ok(file)
    }

    /// Keeps every write in the page cache (no direct writes), for a file read back
    /// within seconds and then deleted: a distributed encode's unit files. Written
    /// direct, their ids went to the disk and the shard writers read them back from
    /// it; through the page cache the reads come from memory, and a file deleted
    /// before the kernel writes it back never reaches the disk.
    pub fn through_page_cache(mut self) -> Self {
        self.can_direct = false;
        self
    }

    /// Adds `bytes`, just staged, to the checksum.
    fn sum(&mut self, bytes_at: usize, len: usize) {
        match &mut self.checksum {
            Some(Sum::Crc(hasher, skip, _)) => {
                let passed = (*skip).min(len);
                *skip -= passed;
                hasher.update(&self.staging[bytes_at + passed..bytes_at + len]);
            }
            Some(Sum::Sha(hasher)) => hasher.update(&self.staging[bytes_at..bytes_at + len]),
            None => {}
        }
    }

    fn staging_bytes(&mut self) -> &mut [u8] {
        &mut self.staging
    }

    /// Writes `staging`'s first `len` bytes to the file.
    fn write_staged(&self, len: usize) -> io::Result<()> {
        self.file.file().write_all(&self.staging[..len])
    }

    /// Appends `bytes`.
    pub fn write_bytes(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            let at = self.staged;
            let room = self.staging_bytes().len() - at;
            let n = room.min(bytes.len());
            self.staging_bytes()[at..at + n].copy_from_slice(&bytes[..n]);
            self.sum(at, n);
            self.staged += n;
            bytes = &bytes[n..];
            if self.staged == self.staging_bytes().len() {
                self.flush_staged(self.staged)?;
            }
        }
        Ok(())
    }

    /// Appends `ids` as little-endian `u16` (`width` 2, each id must fit) or `u32`
    /// (`width` 4), converted straight into the staging buffer.
    pub fn write_ids(&mut self, ids: &[u32], width: usize) -> io::Result<()> {
        if width == 4 && cfg!(target_endian = "little") {
            // SAFETY: `u32` has no padding and every byte pattern is a valid `u8`.
            let bytes =
                unsafe { std::slice::from_raw_parts(ids.as_ptr().cast::<u8>(), ids.len() * 4) };
            return self.write_bytes(bytes);
        }
        let mut rest = ids;
        while !rest.is_empty() {
            let at = self.staged;
            let room = (self.staging_bytes().len() - at) / width;
            if room == 0 {
                self.flush_staged(at)?;
                continue;
            }
            let n = room.min(rest.len());
            let dst = &mut self.staging_bytes()[at..at + n * width];
            if width == 2 {
                // A loop the compiler vectorises (a per-byte iterator cost ~3% of a
                // 2-thread encode).
                for (d, &id) in dst.chunks_exact_mut(2).zip(&rest[..n]) {
                    d.copy_from_slice(&(id as u16).to_le_bytes());
                }
            } else {
                for (d, &id) in dst.chunks_exact_mut(4).zip(&rest[..n]) {
                    d.copy_from_slice(&id.to_le_bytes());
                }
            }
            self.sum(at, n * width);
            self.staged += n * width;
            rest = &rest[n..];
        }
        Ok(())
    }

    /// Writes the first `len` staged bytes: whole blocks when direct (or to be, so
    /// that the switch finds the file at a block boundary), keeping a partial last
    /// block staged (moved to the front).
    fn flush_staged(&mut self, len: usize) -> io::Result<()> {
        let whole = if self.direct || self.can_direct {
            len / BLOCK * BLOCK
        } else {
            len
        };
        if whole > 0 {
            match self.write_staged(whole) {
                Ok(()) => {}
                // Some file systems take O_DIRECT at open and refuse the writes.
                Err(e) if self.direct && e.raw_os_error() == Some(libc::EINVAL) => {
                    self.can_direct = false;
                    self.set_direct(false)?;
                    return self.flush_staged(len);
                }
                Err(e) => return Err(e),
            }
            self.flushed += whole as u64;
            // Direct from here on (a failed switch leaves the writes buffered, which
            // is only slower).
            if self.can_direct
                && !self.direct
                && self.flushed >= BUFFERED_BYTES
                && self.set_direct(true).is_err()
            {
                self.can_direct = false;
            }
        }
        let rest = len - whole;
        self.staging_bytes().copy_within(whole..len, 0);
        self.staged = rest;
        Ok(())
    }

    /// Appends `len` bytes of `file` from byte `at`, read straight into the staging
    /// buffer (no buffer between). The error says which side failed: reading `file`
    /// (`UnexpectedEof` where it ends first) or writing this one.
    pub fn append_from(
        &mut self,
        file: &std::fs::File,
        mut at: u64,
        mut len: u64,
    ) -> Result<(), Side> {
        while len > 0 {
            let start = self.staged;
            let room = self.staging_bytes().len() - start;
            let want = room.min(usize::try_from(len).unwrap_or(usize::MAX));
            let n = read_at(file, &mut self.staging_bytes()[start..start + want], at)
                .map_err(Side::Read)?;
            if n == 0 {
                return Err(Side::Read(io::ErrorKind::UnexpectedEof.into()));
            }
            self.sum(start, n);
            self.staged += n;
            (at, len) = (at + n as u64, len - n as u64);
            if self.staged == self.staging_bytes().len() {
                self.flush_staged(self.staged).map_err(Side::Write)?;
            }
        }
        Ok(())
    }

    /// [`OutFile::finish`] of a file made [`OutFile::with_sha256`], whose header was
    /// appended first: its length and sha256.
    pub fn finish_sha256(mut self) -> io::Result<(u64, [u8; 32])> {
        let Some(Sum::Sha(hasher)) = self.checksum.take() else {
            return Err(io::Error::other("internal: a file not hashed with sha256"));
        };
        let len = self.finish(&[])?;
        Ok((len, hasher.finalize().into()))
    }

    /// Turns direct writes on or off for the writes to come.
    fn set_direct(&mut self, on: bool) -> io::Result<()> {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            let fd = self.file.file().as_raw_fd();
            // SAFETY: F_GETFL on an open descriptor we own; no pointers involved.
            let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
            let flags = match on {
                true => flags | libc::O_DIRECT,
                false => flags & !libc::O_DIRECT,
            };
            // SAFETY: F_SETFL on the same descriptor, with its own flags, one changed.
            if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags) } < 0 {
                return Err(io::Error::last_os_error());
            }
        }
        self.direct = on;
        Ok(())
    }

    /// Writes what is staged, then `header` over the file's first bytes, cuts the
    /// file to its real length and puts it in place of the path it was made for.
    /// Returns the file's length.
    pub fn finish(self, header: &[u8]) -> io::Result<u64> {
        self.finish_checked(header).map(|(len, _)| len)
    }

    /// [`OutFile::finish`], also giving the file's CRC-32 where it was made
    /// [`OutFile::with_checksum`] (with a header of the length it was told).
    pub fn finish_checked(mut self, header: &[u8]) -> io::Result<(u64, Option<u32>)> {
        let crc = match self.checksum.take() {
            None => None,
            Some(Sum::Crc(body, 0, placeholder)) if placeholder == header.len() => {
                let mut whole = crc32fast::Hasher::new();
                whole.update(header);
                whole.combine(&body);
                Some(whole.finalize())
            }
            Some(_) => {
                return Err(io::Error::other(
                    "internal: a checksummed file's header is not its placeholder's length, \
                     or its hash is not a CRC",
                ))
            }
        };
        let len = self.flushed + self.staged as u64;
        // The last write and the header (a few bytes at offset 0, not block-aligned)
        // go through the page cache: nothing runs beside them (see the module's docs).
        self.can_direct = false;
        if self.direct {
            self.set_direct(false)?;
        }
        self.flush_staged(self.staged)?;
        write_all_at(self.file.file(), header, 0)?;
        self.file.file().set_len(len)?;
        self.file.commit()?;
        Ok((len, crc))
    }
}

#[cfg(unix)]
fn read_at(file: &std::fs::File, buf: &mut [u8], at: u64) -> io::Result<usize> {
    loop {
        match std::os::unix::fs::FileExt::read_at(file, buf, at) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            found => return found,
        }
    }
}

#[cfg(not(unix))]
fn read_at(mut file: &std::fs::File, buf: &mut [u8], at: u64) -> io::Result<usize> {
    use std::io::{Read, Seek};
    file.seek(io::SeekFrom::Start(at))?;
    file.read(buf)
}

#[cfg(unix)]
fn write_all_at(file: &std::fs::File, bytes: &[u8], at: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, bytes, at)
}

#[cfg(not(unix))]
fn write_all_at(mut file: &std::fs::File, bytes: &[u8], at: u64) -> io::Result<()> {
    use std::io::Seek;
    file.seek(io::SeekFrom::Start(at))?;
    file.write_all(bytes)?;
    file.seek(io::SeekFrom::End(0)).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(ids: &[u32], width: usize, pieces: usize) -> Vec<u8> {
        static RUN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let run = RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("bpekit-outfile-{}-{run}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.bin");
        let mut out = OutFile::create(&path).unwrap();
        out.write_bytes(&[0xAA; 10]).unwrap();
        for part in ids.chunks(ids.len().div_ceil(pieces).max(1)) {
            out.write_ids(part, width).unwrap();
        }
        let len = out.finish(b"HEAD").unwrap();
        let data = std::fs::read(&path).unwrap();
        assert_eq!(data.len() as u64, len);
        std::fs::remove_dir_all(&dir).unwrap();
        data
    }

    #[test]
    fn bytes_land_in_order_across_staging_flushes() {
        // Over two staging buffers, in uneven parts, both widths.
        let ids: Vec<u32> = (0..(STAGING_BLOCKS * BLOCK * 5 / 8) as u32).collect();
        for width in [2, 4] {
            for pieces in [1, 7] {
                let data = roundtrip(&ids, width, pieces);
                assert_eq!(&data[..4], b"HEAD");
                assert_eq!(&data[4..10], &[0xAA; 6]);
                assert_eq!(data.len(), 10 + ids.len() * width);
                for (i, c) in data[10..].chunks(width).enumerate() {
                    let want = ids[i].to_le_bytes();
                    assert_eq!(c, &want[..width], "id {i}, width {width}");
                }
            }
        }
    }

    #[test]
    fn buffered_after_direct_is_refused() {
        let dir = std::env::temp_dir().join(format!("bpekit-outfile-buf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.bin");
        let mut out = OutFile::create(&path).unwrap();
        out.write_ids(&[1, 2], 2).unwrap();
        out.set_direct(false).unwrap();
        out.write_ids(&[3], 4).unwrap();
        out.finish(b"H").unwrap();
        assert_eq!(
            std::fs::read(&path).unwrap(),
            b"H\x00\x02\x00\x03\x00\x00\x00"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn direct_writes_start_after_the_buffered_bytes() {
        // Across the switch to direct writes (where the file system takes them),
        // with a last block to pad and cut, both widths; the checksum sees it all.
        let dir =
            std::env::temp_dir().join(format!("bpekit-outfile-switch-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.bin");
        let n = (BUFFERED_BYTES as usize + 3 * STAGING_BLOCKS * BLOCK / 2 + 6) / 2;
        let ids: Vec<u32> = (0..n as u32)
            .map(|i| i.wrapping_mul(2_654_435_761) >> 16)
            .collect();
        for width in [2, 4] {
            let mut out = OutFile::with_checksum(&path, 3).unwrap();
            assert!(!out.direct, "the first bytes are buffered");
            let could = out.can_direct;
            out.write_bytes(&[0; 3]).unwrap();
            let mut went_direct = false;
            for part in ids.chunks(70_001) {
                out.write_ids(part, width).unwrap();
                went_direct |= out.direct;
                assert!(out.flushed <= BUFFERED_BYTES || out.direct == could);
            }
            assert_eq!(
                went_direct, could,
                "direct after {BUFFERED_BYTES} bytes where it can be"
            );
            let (len, crc) = out.finish_checked(b"HDR").unwrap();
            let data = std::fs::read(&path).unwrap();
            assert_eq!(data.len() as u64, len);
            assert_eq!(len, 3 + (n * width) as u64);
            assert_eq!(crc, Some(crc32fast::hash(&data)));
            assert_eq!(&data[..3], b"HDR");
            for (i, c) in data[3..].chunks(width).enumerate() {
                assert_eq!(c, &ids[i].to_le_bytes()[..width], "id {i}, width {width}");
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_file_through_the_page_cache_is_never_direct() {
        // Past the bytes after which a file goes direct, and through finish.
        let dir = std::env::temp_dir().join(format!("bpekit-outfile-cache-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.bin");
        let ids: Vec<u32> = (0..(BUFFERED_BYTES as usize + 3 * BLOCK) as u32 / 2).collect();
        let mut out = OutFile::with_checksum(&path, 2)
            .unwrap()
            .through_page_cache();
        out.write_bytes(&[0; 2]).unwrap();
        for part in ids.chunks(50_000) {
            out.write_ids(part, 2).unwrap();
            assert!(!out.direct);
        }
        let (len, crc) = out.finish_checked(b"HD").unwrap();
        let data = std::fs::read(&path).unwrap();
        assert_eq!(
            (data.len() as u64, crc),
            (len, Some(crc32fast::hash(&data)))
        );
        assert_eq!(len, 2 + 2 * ids.len() as u64);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn checksum_is_the_whole_files_crc32() {
        let dir = std::env::temp_dir().join(format!("bpekit-outfile-crc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.bin");
        let ids: Vec<u32> = (0..(STAGING_BLOCKS * BLOCK) as u32)
            .map(|i| i * 7)
            .collect();
        for (width, header) in [(2, &b"HEADER"[..]), (4, &b"H"[..]), (2, &b""[..])] {
            let mut out = OutFile::with_checksum(&path, header.len()).unwrap();
            out.write_bytes(&vec![0; header.len()]).unwrap();
            out.write_bytes(b"abc").unwrap();
            for part in ids.chunks(100_003) {
                out.write_ids(part, width).unwrap();
            }
            let (len, crc) = out.finish_checked(header).unwrap();
            let data = std::fs::read(&path).unwrap();
            assert_eq!(data.len() as u64, len);
            assert_eq!(&data[..header.len()], header);
            assert_eq!(crc, Some(crc32fast::hash(&data)), "width {width}");
        }
        let out = OutFile::create(&path).unwrap();
        assert_eq!(out.finish_checked(b"").unwrap().1, None);
        // A header of another length than its placeholder's is refused.
        let mut out = OutFile::with_checksum(&path, 4).unwrap();
        out.write_bytes(&[0; 4]).unwrap();
        assert!(out.finish_checked(b"HEADER").is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn short_and_empty_files() {
        assert_eq!(roundtrip(&[], 2, 1), b"HEAD\xAA\xAA\xAA\xAA\xAA\xAA");
        assert_eq!(roundtrip(&[7, 8], 4, 1).len(), 18);
    }
}
