//! Output files that appear whole or not at all, and are never written through a
//! link someone planted.
//!
//! A file is written under no name at all where Linux allows it (`O_TMPFILE` in the
//! output's folder): an interrupted run, even one killed with SIGKILL, leaves
//! nothing behind, and there is no name for anyone to plant a symbolic link at. At
//! the end the open file is linked in under a fresh unguessable name (`linkat`
//! never follows a link at its new name, and fails if the name exists) and renamed
//! over the output in one step, so the output is the old file or the whole new one.
//! Elsewhere, or on file systems without `O_TMPFILE`, the file is created under an
//! unguessable name with `O_CREAT | O_EXCL` (which never follows a link either) and
//! removed if the run fails. The handle made at the start is the one written,
//! patched and linked: nothing is opened again by name.

use std::fs::{File, OpenOptions};
use std::hash::{BuildHasher, Hasher};
use std::io;
use std::path::{Path, PathBuf};

/// An output being written: committed with [`WholeFile::commit`], else removed.
pub(crate) struct WholeFile {
    file: File,
    target: PathBuf,
    /// The file's temporary name, where it has one (no `O_TMPFILE`).
    named: Option<PathBuf>,
    /// Whether `file` was opened with `O_DIRECT`.
    direct: bool,
}

impl WholeFile {
    /// Starts a new file that will replace `target`, in `target`'s folder (so that
    /// the final rename stays on one file system). With `direct`, asks for
    /// `O_DIRECT` and falls back to buffered writes where the file system refuses it
    /// ([`WholeFile::is_direct`] says which).
    pub(crate) fn create(target: &Path, direct: bool) -> io::Result<Self> {
        let folder = folder_of(target);
        #[cfg(target_os = "linux")]
        {
            let flags = [
                direct.then_some(libc::O_TMPFILE | libc::O_DIRECT),
                Some(libc::O_TMPFILE),
            ];
            for flags in flags.into_iter().flatten() {
                match open_with(&folder, flags, false) {
                    Ok(file) => {
                        return Ok(Self {
                            file,
                            target: target.to_owned(),
                            named: None,
                            direct: flags & libc::O_DIRECT != 0,
                        })
                    }
                    // The folder itself is missing or not writable: no fallback helps.
                    Err(e) if is_final(&e) => return Err(e),
                    Err(_) => {}
                }
            }
        }
        Self::create_named(target, direct)
    }

    /// [`WholeFile::create`] under a temporary name (where `O_TMPFILE` is missing).
    fn create_named(target: &Path, direct: bool) -> io::Result<Self> {
        let mut last = None;
        for _ in 0..16 {
            let name = temp_name(target);
            let mut tries = Vec::new();
            #[cfg(target_os = "linux")]
            if direct {
                tries.push(libc::O_DIRECT);
            }
            tries.push(0);
            for flags in tries {
                match open_with(&name, flags, true) {
                    Ok(file) => {
                        return Ok(Self {
                            file,
                            target: target.to_owned(),
                            named: Some(name),
                            direct: flags != 0,
                        })
                    }
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                        last = Some(e);
                        break;
                    }
                    Err(e) if flags == 0 => return Err(e),
                    Err(_) => {}
                }
            }
        }
        Err(last.unwrap_or_else(|| io::Error::other("no free temporary name")))
    }

    pub(crate) fn file(&self) -> &File {
        &self.file
    }

    /// Whether the file was opened for direct writes.
    pub(crate) fn is_direct(&self) -> bool {
        self.direct
    }

    /// Puts the file in place of the target (replacing a file there, or a link
    /// itself, never a link's target). After an error nothing new is left behind.
    ///
    /// No `fsync` first: this guards against interrupted runs, not power loss, and
    /// flushing gigabytes of ids written through the page cache would cost seconds.
    pub(crate) fn commit(mut self) -> io::Result<()> {
        let named = match self.named.take() {
            Some(name) => name,
            None => self.link_anonymous()?,
        };
        match std::fs::rename(&named, &self.target) {
            Ok(()) => Ok(()),
            Err(e) => {
                let _ = std::fs::remove_file(&named);
                Err(e)
            }
        }
    }

    /// Links the `O_TMPFILE` file in under a fresh temporary name beside the target.
    #[cfg(target_os = "linux")]
    fn link_anonymous(&self) -> io::Result<PathBuf> {
        use std::ffi::CString;
        use std::os::fd::AsRawFd;
        use std::os::unix::ffi::OsStrExt;
        let fd = self.file.as_raw_fd();
        let proc_path = CString::new(format!("/proc/self/fd/{fd}")).map_err(io::Error::other)?;
        let mut last = io::Error::other("no free temporary name");
        for _ in 0..16 {
            let name = temp_name(&self.target);
            let c_name = CString::new(name.as_os_str().as_bytes()).map_err(io::Error::other)?;
            // SAFETY: both paths are valid NUL-terminated strings; linkat does not
            // follow a link at the new name and fails if the name exists.
            let r = unsafe {
                libc::linkat(
                    libc::AT_FDCWD,
                    proc_path.as_ptr(),
                    libc::AT_FDCWD,
                    c_name.as_ptr(),
                    libc::AT_SYMLINK_FOLLOW,
                )
            };
            if r == 0 {
                return Ok(name);
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::AlreadyExists {
                // Without /proc: linking the descriptor itself needs CAP_DAC_READ_SEARCH.
                let empty = c"";
                // SAFETY: as above; AT_EMPTY_PATH links the file `fd` refers to.
                let r = unsafe {
                    libc::linkat(
                        fd,
                        empty.as_ptr(),
                        libc::AT_FDCWD,
                        c_name.as_ptr(),
                        libc::AT_EMPTY_PATH,
                    )
                };
                return match r {
                    0 => Ok(name),
                    _ => Err(e),
                };
            }
            last = e;
        }
        Err(last)
    }

    #[cfg(not(target_os = "linux"))]
    fn link_anonymous(&self) -> io::Result<PathBuf> {
        Err(io::Error::other("anonymous files are Linux-only"))
    }
}

impl Drop for WholeFile {
    fn drop(&mut self) {
        if let Some(name) = self.named.take() {
            let _ = std::fs::remove_file(name);
        }
    }
}

/// A new file for this process alone, read and written, in `dir`: under no name
/// where Linux allows it (`O_TMPFILE`), else created under an unguessable name and
/// unlinked at once. For scratch data that is mapped back (a decompressed `.gz`
/// input, a pipe's bytes); nothing is left behind, whatever happens.
pub(crate) fn scratch_file(dir: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true).write(true);
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let mut anonymous = options.clone();
        anonymous.custom_flags(libc::O_TMPFILE).mode(0o600);
        match anonymous.open(dir) {
            Ok(file) => return Ok(file),
            Err(e) if is_final(&e) => return Err(e),
            Err(_) => {}
        }
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.create_new(true);
    let mut last = io::Error::other("no free temporary name");
    for _ in 0..16 {
        let name = temp_name(&dir.join("bpekit-scratch"));
        match options.open(&name) {
            Ok(file) => {
                // The open handle keeps the bytes; no name is left behind.
                let _ = std::fs::remove_file(&name);
                return Ok(file);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = e,
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

/// The folder a file `target` is written in.
fn folder_of(target: &Path) -> PathBuf {
    match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    }
}

/// Opens `path` for writing with `flags` added (new and exclusive with `new`), with
/// the mode a plain create gives (0o666 less the umask).
fn open_with(path: &Path, flags: i32, new: bool) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true);
    if new {
        options.create_new(true);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(flags).mode(0o666);
    }
    #[cfg(not(unix))]
    let _ = flags;
    options.open(path)
}

/// Errors after which no other way of creating the file can work.
#[cfg(target_os = "linux")]
fn is_final(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOENT | libc::ENOTDIR | libc::EACCES | libc::EROFS | libc::ENOSPC)
    )
}

/// `.NAME.<16 random hex digits>.tmp` beside `target`: hidden, and unguessable, so
/// that nobody can plant a link there ahead of time.
fn temp_name(target: &Path) -> PathBuf {
    let name = target
        .file_name()
        .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    // RandomState is seeded from the OS's random source once per process and moved
    // on for each instance; the time and pid make names of forked children differ.
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    if let Ok(t) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        h.write_u128(t.as_nanos());
    }
    folder_of(target).join(format!(".{name}.{:016x}.tmp", h.finish()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("bpekit-whole-file-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn commits_whole_and_leaves_nothing_on_failure() {
        let dir = scratch("commit");
        let out = dir.join("out.bin");
        std::fs::write(&out, b"old").unwrap();
        let f = WholeFile::create(&out, false).unwrap();
        f.file().write_all(b"new data").unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"old");
        f.commit().unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"new data");
        assert_eq!(names(&dir), ["out.bin"]);
        // Dropped without a commit: nothing new, the old file as it was.
        let f = WholeFile::create(&out, false).unwrap();
        f.file().write_all(b"lost").unwrap();
        drop(f);
        assert_eq!(names(&dir), ["out.bin"]);
        assert_eq!(std::fs::read(&out).unwrap(), b"new data");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_named_fallback_cleans_up() {
        let dir = scratch("named");
        let out = dir.join("out.bin");
        let f = WholeFile::create_named(&out, false).unwrap();
        f.file().write_all(b"x").unwrap();
        assert_eq!(names(&dir).len(), 1);
        drop(f);
        assert!(names(&dir).is_empty());
        let f = WholeFile::create_named(&out, false).unwrap();
        f.file().write_all(b"y").unwrap();
        f.commit().unwrap();
        assert_eq!(names(&dir), ["out.bin"]);
        assert_eq!(std::fs::read(&out).unwrap(), b"y");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_planted_link_is_replaced_not_followed() {
        let dir = scratch("link");
        let victim = dir.join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        let out = dir.join("out.bin");
        std::os::unix::fs::symlink(&victim, &out).unwrap();
        let f = WholeFile::create(&out, false).unwrap();
        f.file().write_all(b"ids").unwrap();
        f.commit().unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        assert!(!std::fs::symlink_metadata(&out).unwrap().is_symlink());
        assert_eq!(std::fs::read(&out).unwrap(), b"ids");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn temporary_names_differ() {
        let a = temp_name(Path::new("x/t.npy"));
        let b = temp_name(Path::new("x/t.npy"));
        assert_ne!(a, b);
        let s = a.to_string_lossy();
        assert!(s.starts_with("x/.t.npy.") && s.ends_with(".tmp"), "{s}");
    }

    #[test]
    fn a_missing_folder_is_an_error() {
        let e = WholeFile::create(Path::new("/nonexistent-bpekit/out.npy"), true)
            .err()
            .unwrap();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
    }
}
