//! Inputs that cannot be mapped themselves (pipes), copied into a private scratch
//! file that is mapped instead, and devices that are refused.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use memmap2::Mmap;

use crate::error::{Error, Result};

/// The bytes `reader` gives (the text of `path`, for errors), copied into a scratch
/// file in the temporary folder that no other process can see
/// ([`crate::atomic::scratch_file`]) and mapped. For inputs that cannot be mapped
/// themselves (pipes): memory stays bounded however long they are,
/// where reading them into memory would take all of it for an endless pipe. `None`
/// for no bytes (an empty file cannot be mapped).
///
/// The map is private to this process, so nobody else can truncate it: it needs no
/// [`mapguard`](crate::mapguard).
pub(super) fn spool(path: &Path, mut reader: impl Read, doing: &str) -> Result<Option<Mmap>> {
    let dir = std::env::temp_dir();
    let in_tmp = |e: std::io::Error| {
        let message = format!(
            "{doing} {} here: {e} (set TMPDIR to a folder with room)",
            path.display()
        );
        Error::io(&dir, std::io::Error::new(e.kind(), message))
    };
    let mut out = crate::atomic::scratch_file(&dir).map_err(in_tmp)?;
    let mut buf = vec![0u8; 1 << 20];
    let mut len = 0usize;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::io(path, e)),
        };
        std::io::Write::write_all(&mut out, &buf[..n]).map_err(in_tmp)?;
        len += n;
    }
    if len == 0 {
        return Ok(None);
    }
    // SAFETY: the file is private to this process (no name, or unlinked) and no
    // longer written. Not guarded: nobody else can truncate it.
    unsafe { Mmap::map(&out) }.map(Some).map_err(in_tmp)
}

/// Whether `file` is a device that is not a terminal (`/dev/zero`, `/dev/urandom`, a
/// disk): endless or binary, never a text to read to its end.
pub(super) fn is_endless_device(file: &File, meta: &std::fs::Metadata) -> bool {
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
