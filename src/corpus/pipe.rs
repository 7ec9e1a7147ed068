//! Opening an input by what it is: a regular file (mapped, or streamed when
//! compressed); a pipe, a FIFO or a terminal (streamed as it comes, a block at a time);
//! a folder, a socket or a device (refused, saying so).
//!
//! Why pipes are streamed, not copied to a scratch file and mapped: the copy of an
//! endless pipe (`yes | bpekit encode /dev/stdin`) grew by ~700 MB/s until the disk
//! was full, and a run waited for the writer to close before it started. Streamed,
//! a pipe holds only the blocks in flight, the work starts with its first block, and
//! an endless pipe is an endless run that Ctrl-C stops.

use std::fs::{File, Metadata};
use std::io::Read;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::error::{Error, Result};

/// What an input path is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PathKind {
    /// A regular file (or a file of `/proc`, which reports no size and holds text).
    File,
    /// A pipe or FIFO, or a terminal: read as it comes, never mapped.
    Pipe,
}

/// Whether `path` is read as it comes ([`PathKind::Pipe`]), as far as its metadata tells
/// before it is opened. Errors are left to [`open`], which names them.
pub(crate) fn is_pipe(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        std::fs::metadata(path).is_ok_and(|m| {
            let t = m.file_type();
            t.is_fifo() || t.is_char_device()
        })
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        false
    }
}

/// `path` opened for reading, with its metadata and kind. A FIFO is opened without
/// waiting for a writer, non-blocking (reads wait instead, where they can be
/// cancelled: [`PipeReader`]). Folders, sockets and devices other than terminals are refused,
/// naming the path.
pub(crate) fn open(path: &Path) -> Result<(File, Metadata, PathKind)> {
    let err = |e| Error::io(path, e);
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
        // A FIFO's open returns at once instead of waiting, uncancellable, for a
        // writer. Only a FIFO's: a regular file under a lease (a file server's) would
        // fail to open at once instead of waiting for the lease to be given up.
        if std::fs::metadata(path).is_ok_and(|m| m.file_type().is_fifo()) {
            options.custom_flags(libc::O_NONBLOCK);
        }
    }
    let file = match options.open(path) {
        Ok(file) => file,
        Err(e) => return Err(refused(path).unwrap_or_else(|| err(e))),
    };
    let meta = file.metadata().map_err(err)?;
    if meta.is_file() {
        return Ok((file, meta, PathKind::File));
    }
    if let Some(e) = refused(path) {
        return Err(e);
    }
    if is_endless_device(&file, &meta) {
        return Err(Error::invalid(format!(
            "{}: is a device, not a file of text (it may never end); give a file or a pipe",
            path.display()
        )));
    }
    Ok((file, meta, PathKind::Pipe))
}

/// The error for a path that is no input at all (a folder, a socket), or `None`.
fn refused(path: &Path) -> Option<Error> {
    let meta = std::fs::metadata(path).ok()?;
    if meta.is_dir() {
        return Some(Error::invalid(format!(
            "{}: is a directory; pass its files",
            path.display()
        )));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if meta.file_type().is_socket() {
            return Some(Error::invalid(format!(
                "{}: is a socket, not a file or a pipe; give a file, or pipe what the \
                 socket sends into /dev/stdin",
                path.display()
            )));
        }
    }
    None
}

/// Whether `file` is a device that is not a terminal (`/dev/zero`, `/dev/urandom`, a
/// disk): endless or binary, never a text to read to its end.
fn is_endless_device(file: &File, meta: &Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::FileTypeExt;
        let ft = meta.file_type();
        // SAFETY: isatty only inspects the descriptor.
        (ft.is_char_device() || ft.is_block_device())
            && unsafe { libc::isatty(file.as_raw_fd()) } == 0
    }
    #[cfg(not(unix))]
    {
        let _ = (file, meta);
        false
    }
}

/// How long a read of a pipe waits for bytes before it looks at the cancel flag: the
/// watcher notices Ctrl-C within 100 ms, the reader within this much more.
const WAIT_MS: i32 = 20;

/// The reader of a pipe opened by [`open`] (non-blocking): each read waits for bytes
/// (or the writer's end) in steps of [`WAIT_MS`], and fails with [`Stopped`] once
/// `cancel` is set. A blocking read could not be cancelled: Ctrl-C waited for
/// `sleep 60 | bpekit ...` to end.
pub(crate) struct PipeReader {
    file: File,
    cancel: Arc<AtomicBool>,
}

impl PipeReader {
    pub(crate) fn new(file: File, cancel: Arc<AtomicBool>) -> Self {
        Self { file, cancel }
    }
}

/// The error a [`PipeReader`] fails with once its job is cancelled.
#[derive(Debug)]
pub(crate) struct Stopped;

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("interrupted")
    }
}

impl std::error::Error for Stopped {}

/// Whether `e` is a [`PipeReader`]'s [`Stopped`] (passed through a decompressor).
pub(crate) fn is_stopped(e: &std::io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<Stopped>())
}

impl Read for PipeReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            if self.cancel.load(Ordering::Relaxed) {
                return Err(std::io::Error::other(Stopped));
            }
            // Polled before each read: a FIFO that no writer has opened yet reads as
            // its end (0 bytes) without waiting, but polls as not ready.
            if !wait_readable(&self.file)? {
                continue;
            }
            match self.file.read(buf) {
                Ok(n) => return Ok(n),
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted
                    ) => {}
                Err(e) => return Err(e),
            }
        }
    }
}

/// Waits up to [`WAIT_MS`] for `file` to have bytes or to end; whether it does.
fn wait_readable(file: &File) -> std::io::Result<bool> {
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        let mut fd = libc::pollfd {
            fd: file.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd, for the call only.
        match unsafe { libc::poll(&mut fd, 1, WAIT_MS) } {
            n if n > 0 => Ok(true),
            0 => Ok(false),
            _ => {
                let e = std::io::Error::last_os_error();
                match e.kind() {
                    std::io::ErrorKind::Interrupted => Ok(false),
                    _ => Err(e),
                }
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = file;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_fifo_opens_at_once_and_its_reads_stop_when_cancelled() {
        let dir = std::env::temp_dir().join(format!("bpekit-pipe-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("in.fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(is_pipe(&fifo));
        // No writer: open returns, and a read waits until cancelled.
        let (file, _, kind) = open(&fifo).unwrap();
        assert_eq!(kind, PathKind::Pipe);
        let cancel = Arc::new(AtomicBool::new(false));
        let mut reader = PipeReader::new(file, Arc::clone(&cancel));
        let setter = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            cancel.store(true, Ordering::Relaxed);
        });
        let started = std::time::Instant::now();
        let e = reader.read(&mut [0u8; 16]).unwrap_err();
        assert!(is_stopped(&e), "{e}");
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
        setter.join().unwrap();
        // A writer's bytes, then its end.
        let (file, _, _) = open(&fifo).unwrap();
        let writer = std::thread::spawn({
            let fifo = fifo.clone();
            move || std::fs::write(&fifo, b"hello").unwrap()
        });
        let mut text = Vec::new();
        PipeReader::new(file, Arc::new(AtomicBool::new(false)))
            .read_to_end(&mut text)
            .unwrap();
        writer.join().unwrap();
        assert_eq!(text, b"hello");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn folders_sockets_and_endless_devices_are_refused_by_name() {
        let dir = std::env::temp_dir().join(format!("bpekit-kinds-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let sock = dir.join("s.sock");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let e = open(&sock).unwrap_err().to_string();
        assert!(e.contains("s.sock: is a socket, not a file"), "{e}");
        let e = open(&dir).unwrap_err().to_string();
        assert!(e.ends_with(": is a directory; pass its files"), "{e}");
        let e = open(Path::new("/dev/zero")).unwrap_err().to_string();
        assert!(e.contains("/dev/zero: is a device"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
