//! One plain input file's bytes: mapped (read into memory where it is empty, or a
//! file of `/proc`), and released behind its readers. Pipes are streamed instead
//! ([`super::blocks`]).

use std::io::Read;
use std::ops::Range;
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use super::pipe::{self, PathKind};
use crate::error::{Error, Result};
use crate::mapguard::Guard;

/// A source's bytes: mapped, or in memory.
enum Bytes {
    Mapped(Mapped),
    Owned(Vec<u8>),
}

fn bytes_len(bytes: &Bytes) -> usize {
    match bytes {
        Bytes::Mapped(m) => m.map.len(),
        Bytes::Owned(v) => v.len(),
    }
}

/// A mapped input file, registered with [`mapguard`](crate::mapguard) while it lives.
struct Mapped {
    /// Declared before `map`, so it unregisters the mapping before it is unmapped.
    guard: Option<Guard>,
    map: Mmap,
    /// The file's device and inode, to tell a shrunk file from one replaced by
    /// another under the same name (which leaves the mapped bytes as they were).
    id: Option<(u64, u64)>,
}

/// One input file's bytes.
pub struct Source {
    pub(crate) path: PathBuf,
    bytes: Bytes,
    /// The file's size on disk (0 for files of `/proc`), which progress totals start
    /// from.
    pub(super) on_disk: u64,
    /// The bytes a job reads: the whole file, or the byte range a distributed job
    /// planned for this worker ([`Source::open_window`]).
    window: Range<usize>,
}

impl Source {
    /// Maps `path`. Compressed files and pipes are not sources: they are streamed
    /// ([`super::blocks`]); a pipe here is an error.
    pub fn open(path: &Path) -> Result<Self> {
        let err = |e| Error::io(path, e);
        let (mut file, meta, kind) = pipe::open(path)?;
        let bytes = if kind == PathKind::Pipe {
            return Err(Error::invalid(format!(
                "{}: is a pipe, not a file that can be mapped; write it to a file first",
                path.display()
            )));
        } else if meta.len() == 0 {
            // An empty file cannot be mapped; files of /proc report 0 and hold text.
            let mut buf = Vec::new();
            file.read_to_end(&mut buf).map_err(err)?;
            Bytes::Owned(buf)
        } else {
            let mut buf = Vec::new();
            // SAFETY: the map is read-only. A file truncated under us while mapped
            // would raise SIGBUS; the guard turns that into zeros and a mark that the
            // readers check ([`Source::check_intact`]).
            match unsafe { Mmap::map(&file) } {
                Ok(map) => Bytes::Mapped(Mapped {
                    guard: Guard::new(map.as_ptr(), map.len()),
                    map,
                    id: file_id(&meta),
                }),
                // Out of address space (a memory limit): reading it whole would not
                // fit either.
                Err(e) if e.raw_os_error() == Some(libc::ENOMEM) => return Err(err(e)),
                // Files of some special file systems cannot be mapped: read instead.
                Err(_) => {
                    file.read_to_end(&mut buf).map_err(err)?;
                    Bytes::Owned(buf)
                }
            }
        };
        let window = 0..bytes_len(&bytes);
        Ok(Self {
            path: path.to_owned(),
            bytes,
            on_disk: meta.len(),
            window,
        })
    }

    /// Maps `path` ([`Source::open`]) to read its bytes `range` only (all of them for
    /// `None`). The range must lie in the file: one past its end means the file
    /// changed since the range was planned, an error naming both.
    pub fn open_window(path: &Path, range: Option<Range<u64>>) -> Result<Self> {
        let mut source = Self::open(path)?;
        if let Some(range) = range {
            let len = source.bytes().len();
            let fits = range.start <= range.end && range.end <= len as u64;
            if !fits {
                return Err(Error::io(
                    path,
                    std::io::Error::other(format!(
                        "holds {len} bytes, not the bytes {}..{} planned to be read \
                         (it changed since the run was planned)",
                        range.start, range.end
                    )),
                ));
            }
            source.window = range.start as usize..range.end as usize;
        }
        Ok(source)
    }

    /// The byte range of the file a job reads: the whole file unless opened with
    /// [`Source::open_window`].
    pub(crate) fn window(&self) -> Range<usize> {
        self.window.clone()
    }

    /// How many bytes a job reads from this source.
    pub(crate) fn read_len(&self) -> usize {
        self.window.len()
    }

    /// In-memory bytes, for tests.
    #[cfg(test)]
    pub(crate) fn from_bytes(path: impl Into<PathBuf>, bytes: Vec<u8>) -> Self {
        Self {
            path: path.into(),
            on_disk: bytes.len() as u64,
            window: 0..bytes.len(),
            bytes: Bytes::Owned(bytes),
        }
    }

    /// Tells the OS that `range` of a mapped file will not be read again, so its pages
    /// leave this process's resident memory (they stay in the page cache). Readers of
    /// huge files call it behind them to keep memory flat. No-op for in-memory bytes.
    fn release(&self, range: Range<usize>) {
        #[cfg(unix)]
        if let Bytes::Mapped(Mapped { map: m, .. }) = &self.bytes {
            if range.start < range.end && range.end <= m.len() {
                // SAFETY: the map is private, read-only and never written, so dropping its
                // pages only means they are read from the file again if touched.
                let _ = unsafe {
                    m.unchecked_advise_range(
                        memmap2::UncheckedAdvice::DontNeed,
                        range.start,
                        range.len(),
                    )
                };
            }
        }
        #[cfg(not(unix))]
        let _ = range;
    }

    /// A reader that is done with `..to` and released `..from` before: releases
    /// `from..` up to the last 2 MiB boundary (of address) at or below `to` once that
    /// is at least [`RELEASE_STEP`] on, and returns where released bytes now end.
    /// `to == len` releases the rest.
    ///
    /// Why in steps and at huge-page boundaries: each release splits the file's
    /// huge-page mappings and flushes them from every core's TLB, with an interrupt to
    /// each other core. Released after every 1 MB chunk, waiting for those flushes
    /// took up to 14% of a 1-thread gpt2 encode of the 116 MB English corpus (perf, 2
    /// cores; the share grows with the host's load).
    pub(crate) fn release_behind(&self, from: usize, to: usize) -> usize {
        use crate::hugemem::HUGE_PAGE;
        let len = self.bytes().len();
        let base = self.bytes().as_ptr() as usize;
        let end = match to >= len {
            true => len,
            false => ((base + to) & !(HUGE_PAGE - 1)).saturating_sub(base),
        };
        if end <= from || (end < len && end - from < RELEASE_STEP) {
            return from;
        }
        self.release(from..end);
        end
    }

    pub fn bytes(&self) -> &[u8] {
        match &self.bytes {
            Bytes::Mapped(m) => &m.map,
            Bytes::Owned(v) => v,
        }
    }

    /// Whether the bytes were read into memory (files that cannot be mapped) rather
    /// than mapped.
    pub(super) fn is_owned(&self) -> bool {
        matches!(self.bytes, Bytes::Owned(_))
    }

    /// Whether a read of the mapped file ran past its end (it was truncated while
    /// mapped), and read zeros there instead ([`mapguard`]). One atomic load.
    pub(crate) fn faulted(&self) -> bool {
        match &self.bytes {
            Bytes::Mapped(m) => m.guard.as_ref().is_some_and(Guard::faulted),
            Bytes::Owned(_) => false,
        }
    }

    /// An error if the file shrank while it was mapped: a read past its new end was
    /// turned into zeros, or (a shrink within the last page faults nowhere) the file
    /// at the same path, the same inode, is now shorter than what was mapped.
    pub(crate) fn check_intact(&self) -> Result<()> {
        let Bytes::Mapped(m) = &self.bytes else {
            return Ok(());
        };
        let now = std::fs::metadata(&self.path).ok();
        let shrunk = now.as_ref().is_some_and(|meta| {
            file_id(meta) == m.id && m.id.is_some() && meta.len() < m.map.len() as u64
        });
        if self.faulted() || shrunk {
            let size = now.map_or(String::new(), |meta| format!(", now {}", meta.len()));
            return Err(Error::io(
                &self.path,
                std::io::Error::other(format!(
                    "changed size while being read (was {} bytes{size}); \
                     nothing was written from it",
                    m.map.len()
                )),
            ));
        }
        Ok(())
    }
}

/// The least a reader releases at once ([`Source::release_behind`]): mapped input
/// stays at most this much (plus a huge page) above what it reads. 8 MB cut the TLB
/// flushes of a file encode 8-fold against 1 MB steps, for ~10 MiB more peak memory
/// (en, gpt2: 75 -> 85 MiB on 1 thread, 93 -> 97 on 2).
const RELEASE_STEP: usize = 8 << 20;

/// A file's device and inode, where the platform has them.
fn file_id(meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some((meta.dev(), meta.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releasing_behind_a_reader_goes_in_steps_and_keeps_the_bytes() {
        let path = std::env::temp_dir().join(format!("bpekit-release-{}", std::process::id()));
        let text: Vec<u8> = (0..(20 << 20) + 123).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &text).unwrap();
        let source = Source::open(&path).unwrap();
        let base = source.bytes().as_ptr() as usize;
        // Less than a step behind: nothing yet.
        assert_eq!(source.release_behind(0, 1 << 20), 0);
        // A step and a huge page or more: up to a huge-page boundary at or below the
        // reader (of address: the map may start anywhere in a huge page).
        let to = RELEASE_STEP + (3 << 20) + 5;
        let first = source.release_behind(0, to);
        assert!((RELEASE_STEP..=to).contains(&first));
        assert_eq!((base + first) % crate::hugemem::HUGE_PAGE, 0);
        assert_eq!(source.release_behind(first, first + 100), first);
        // The end of the file releases the rest.
        assert_eq!(source.release_behind(first, text.len()), text.len());
        // Released pages are read from the file again.
        assert!(source.bytes() == text.as_slice());
        drop(source);
        std::fs::remove_file(&path).unwrap();
    }
}
