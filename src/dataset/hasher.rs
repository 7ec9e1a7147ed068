//! Finished shards hashed (sha256 of the file and of its index) and reported, in the
//! order they finished, on a thread of their own.
//!
//! What hashing costs: sha256 runs at ~1.8 GB/s here (SHA-NI), and a shard is about
//! half the bytes of its text, so hashing takes ~10% of an encoding core's time. On a
//! 2-thread encode of the 116 MB English JSONL (shards of 2**24 tokens) the run took
//! 1.13-1.27x a single `.npy`'s time with hashing and 1.01-1.05x without
//! (`DatasetRun::skip_checksums`).
//!
//! Why a thread that reads the files back, rather than hashing the ids as they are
//! written: a shard's header (`.npy`, llm.c) holds its token count, known only when
//! the shard ends, and sha256 cannot take its first bytes last. On its own thread the
//! hashing of one shard overlaps the encoding of the next. Only the last shard's
//! hash is waited for.
//!
//! How a shard is read back: with `O_DIRECT` where the file system takes it, into
//! one page-aligned buffer kept for the run, so no page of it enters the page cache.
//! Through a map of the file instead (its pages faulted into the page cache), the
//! hashing of a 527 MB shard took 1.25-1.80 CPU seconds while an encode of `owt-12G`
//! ran beside it, against 0.42 s read direct. perf put 71% of the mapped hash's
//! samples on its first load of each 64-byte block: the time went to bringing the
//! pages in, not to hashing. A 2-thread `encode_dataset` of `owt-12G` took 49-51 s
//! with the map and 37-40 s read direct (35 s without hashing). Files under
//! [`READ_BYTES`] (indexes, side files) and file systems that refuse direct reads
//! keep the map: a direct read first waits for the pages just written to go to disk.

use std::io::{self, Read};
use std::path::Path;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::thread::JoinHandle;

use memmap2::Mmap;
use sha2::{Digest, Sha256};

use super::shard::ShardInfo;
use crate::mapguard::Guard;

/// Told of each shard once it is hashed (to record it in a manifest, say); an error
/// stops the run.
pub type OnShard = Box<dyn FnMut(&ShardInfo) -> io::Result<()> + Send>;

pub(super) struct ShardHasher {
    sender: Option<Sender<ShardInfo>>,
    thread: Option<JoinHandle<io::Result<Vec<ShardInfo>>>>,
}

impl ShardHasher {
    /// Starts the thread: the shards of the dataset folder `root`, sent to
    /// [`ShardHasher::sender`], are hashed (unless not `hash`), reported to `on_shard` and
    /// kept.
    pub(super) fn start(root: &Path, hash: bool, on_shard: Option<OnShard>) -> io::Result<Self> {
        let (sender, receiver) = channel();
        let root = root.to_owned();
        let thread = std::thread::Builder::new()
            .name("bpekit-hash".into())
            .spawn(move || run(&root, hash, &receiver, on_shard))?;
        Ok(Self {
            sender: Some(sender),
            thread: Some(thread),
        })
    }

    pub(super) fn sender(&self) -> Sender<ShardInfo> {
        match &self.sender {
            Some(s) => s.clone(),
            // Only `finish` takes it, and it consumes the hasher.
            None => channel().0,
        }
    }

    /// Waits for every shard sent to be hashed and reported; returns them, in order.
    pub(super) fn finish(mut self) -> io::Result<Vec<ShardInfo>> {
        self.join()
    }

    fn join(&mut self) -> io::Result<Vec<ShardInfo>> {
        // The thread ends once every sender is gone: the shards' copies go with them.
        self.sender = None;
        match self.thread.take() {
            Some(t) => t
                .join()
                .map_err(|_| io::Error::other("the shards' hasher panicked"))?,
            None => Ok(Vec::new()),
        }
    }
}

impl Drop for ShardHasher {
    /// A run that fails still records the shards it finished, so a rerun keeps them.
    fn drop(&mut self) {
        let _ = self.join();
    }
}

fn run(
    root: &Path,
    hash: bool,
    receiver: &Receiver<ShardInfo>,
    mut on_shard: Option<OnShard>,
) -> io::Result<Vec<ShardInfo>> {
    let mut done = Vec::new();
    // Page-aligned, as direct reads need.
    let mut buffer = memmap2::MmapMut::map_anon(READ_BYTES)?;
    for mut info in receiver {
        if hash {
            info.sha256 = sha256(&root.join(&info.file), &mut buffer)?;
            info.index_sha256 = sha256(&root.join(&info.index), &mut buffer)?;
            for side in &mut info.side {
                side.sha256 = sha256(&root.join(&side.file), &mut buffer)?;
            }
        }
        if let Some(report) = &mut on_shard {
            report(&info)?;
        }
        done.push(info);
    }
    Ok(done)
}

/// Bytes of a mapped file hashed between two releases of its pages: few enough
/// releases that their TLB flushes cost nothing much (32 per GB).
const HASH_STEP: usize = 32 << 20;

/// Bytes read at a time: 256 reads a GB, few enough that their fixed cost is small;
/// the buffer is the hasher's only memory.
const READ_BYTES: usize = 4 << 20;

/// The alignment direct reads ask of buffers, offsets and sizes on Linux.
#[cfg(target_os = "linux")]
const BLOCK: usize = 4096;

/// The sha256 of the file at `path`, in hex.
///
/// Read direct where it can be and the file is at least [`READ_BYTES`] (see the
/// module's docs); else through a map: a `read` into `buffer` copied each shard back
/// out of the page cache, and that copy took 11% of the CPU time of a 2-thread
/// `encode_dataset` of owt-1G (perf), as much as the hashing itself.
fn sha256(path: &Path, buffer: &mut [u8]) -> io::Result<String> {
    let name = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", path.display()));
    let mut file = std::fs::File::open(path).map_err(name)?;
    let len = file.metadata().map_err(name)?.len();
    // A small file (an index, a shard's side files) is read where it is, in the page
    // cache: a direct read would first wait for its pages to be written back.
    #[cfg(target_os = "linux")]
    if len >= READ_BYTES as u64 {
        if let Some(digest) = sha256_direct(path, buffer).map_err(name)? {
            return Ok(hex(&digest));
        }
    }
    let mut hasher = Sha256::new();
    let map = match len {
        0 => None,
        // SAFETY: the map is read-only. A file truncated under us while mapped would
        // raise SIGBUS; the guard (without one the file is read instead) turns that
        // into zeros and a mark checked below.
        _ => unsafe { Mmap::map(&file) }.ok(),
    };
    let guarded = map.and_then(|m| Guard::new(m.as_ptr(), m.len()).map(|g| (m, g)));
    match guarded {
        Some((map, guard)) => {
            let _ = map.advise(memmap2::Advice::Sequential);
            // Hashed pages are let go a step at a time, so that the process holds
            // no more of a shard than a step (mapped, they counted in its RSS: a
            // 1 GB dataset's peak went from 290 to 786 MiB).
            for at in (0..map.len()).step_by(HASH_STEP) {
                let step = HASH_STEP.min(map.len() - at);
                hasher.update(&map[at..at + step]);
                #[cfg(unix)]
                // SAFETY: the map is private, read-only and never written, so dropping
                // its pages only means they are read from the file again if touched.
                let _ = unsafe {
                    map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, at, step)
                };
            }
            let now = file.metadata().map_err(name)?.len();
            if guard.faulted() || now != len {
                return Err(name(io::Error::other(
                    "changed size while being hashed; was another program writing it?",
                )));
            }
        }
        None => loop {
            match file.read(buffer) {
                Ok(0) => break,
                Ok(n) => hasher.update(&buffer[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(name(e)),
            }
        },
    }
    Ok(hex(&hasher.finalize()))
}

fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The sha256 of the file at `path` read with `O_DIRECT` into `buffer`; `None` where
/// that cannot be had: a file system without direct reads (tmpfs before Linux 6.6),
/// a read refused part way (the caller then reads the whole file again another way),
/// or a buffer not block-aligned.
#[cfg(target_os = "linux")]
fn sha256_direct(path: &Path, buffer: &mut [u8]) -> io::Result<Option<[u8; 32]>> {
    use std::os::unix::fs::OpenOptionsExt;

    let aligned =
        (buffer.as_ptr() as usize).is_multiple_of(BLOCK) && buffer.len().is_multiple_of(BLOCK);
    if !aligned || buffer.is_empty() {
        return Ok(None);
    }
    let refused = |e: &io::Error| e.raw_os_error() == Some(libc::EINVAL);
    let mut file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if refused(&e) => return Ok(None),
        Err(e) => return Err(e),
    };
    let len = file.metadata()?.len();
    let mut hasher = Sha256::new();
    let mut read = 0u64;
    loop {
        match file.read(buffer) {
            Ok(0) => break,
            Ok(n) => {
                hasher.update(&buffer[..n]);
                read += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            // Some file systems take O_DIRECT at open and refuse the reads; a read
            // that came short before the end leaves the next one unaligned.
            Err(e) if refused(&e) => return Ok(None),
            Err(e) => return Err(e),
        }
    }
    if read != len || file.metadata()?.len() != len {
        return Err(io::Error::other(
            "changed size while being hashed; was another program writing it?",
        ));
    }
    Ok(Some(hasher.finalize().into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_of_a_file_is_that_of_its_bytes() {
        let dir = std::env::temp_dir().join(format!("bpekit-hash-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        std::fs::write(&path, b"abc").unwrap();
        let mut buffer = vec![0u8; 2];
        assert_eq!(
            sha256(&path, &mut buffer).unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        // An empty file, which cannot be mapped, is read.
        std::fs::write(&path, b"").unwrap();
        assert_eq!(
            sha256(&path, &mut buffer).unwrap(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_file_read_direct_hashes_as_its_bytes() {
        use super::super::outfile::OutFile;

        // In target/, on the disk: the system's temporary folder may be a tmpfs, which
        // refused direct reads before Linux 6.6, and this would test nothing there.
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("target")
            .join(format!("bpekit-hash-direct-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut buffer = memmap2::MmapMut::map_anon(2 * BLOCK).unwrap();
        let pattern =
            |len: usize| -> Vec<u8> { (0..len).map(|i| (i * 7 + i / 251) as u8).collect() };
        // Sizes about the block and the buffer: direct reads come short at the end.
        // Each file is hashed as just written, its pages still dirty in the page
        // cache, which a direct read must see.
        let sizes = [0, 1, BLOCK - 1, BLOCK, BLOCK + 1, 2 * BLOCK, 5 * BLOCK + 7];
        let mut direct = 0;
        for len in sizes {
            let bytes = pattern(len);
            let path = dir.join(format!("f{len}"));
            std::fs::write(&path, &bytes).unwrap();
            let want: [u8; 32] = Sha256::digest(&bytes).into();
            if let Some(got) = sha256_direct(&path, &mut buffer).unwrap() {
                assert_eq!(got, want, "{len} bytes");
                // An empty file reads as empty even where direct reads are refused.
                direct += usize::from(len > 0);
            }
            assert_eq!(
                sha256(&path, &mut buffer).unwrap(),
                hex(&want),
                "{len} bytes"
            );
        }
        // Where the file system takes direct reads, every file was read so; where it
        // refuses them, none was.
        assert!(
            direct == 0 || direct == sizes.len() - 1,
            "{direct} of {} files read direct",
            sizes.len() - 1
        );
        // A file as the shard writer makes one: its first 4 MiB through the page
        // cache, then direct writes, a last write through the page cache, and its
        // header written last over its first bytes. `sha256` reads it direct (it is
        // over READ_BYTES) with a buffer smaller than it.
        let bytes = pattern(READ_BYTES + 3 * BLOCK + 100);
        let path = dir.join("shard");
        let mut out = OutFile::create(&path).unwrap();
        out.write_bytes(&[0; 128]).unwrap();
        out.write_bytes(&bytes[128..]).unwrap();
        out.finish(&bytes[..128]).unwrap();
        let want: [u8; 32] = Sha256::digest(&bytes).into();
        assert_eq!(sha256(&path, &mut buffer).unwrap(), hex(&want));
        if direct > 0 {
            assert_eq!(sha256_direct(&path, &mut buffer).unwrap(), Some(want));
        }
        // A buffer not block-aligned is not used for direct reads.
        assert!(sha256_direct(&path, &mut buffer[1..BLOCK + 1])
            .unwrap()
            .is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
