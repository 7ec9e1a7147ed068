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
    let mut buffer = vec![0u8; 1 << 20];
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

/// The sha256 of the file at `path`, in hex.
///
/// Read through a map where it can be: a `read` into `buffer` copied each shard back
/// out of the page cache, and that copy took 11% of the CPU time of a 2-thread
/// `encode_dataset` of owt-1G (perf), as much as the hashing itself.
fn sha256(path: &Path, buffer: &mut [u8]) -> io::Result<String> {
    let name = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", path.display()));
    let mut file = std::fs::File::open(path).map_err(name)?;
    let len = file.metadata().map_err(name)?.len();
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
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
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
}
