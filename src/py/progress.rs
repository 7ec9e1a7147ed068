//! Runs a core job on a worker thread with the GIL released, while this thread
//! wakes every 100 ms to call the Python progress callback and check for Ctrl-C.
//! The core itself never touches Python: it only bumps `Progress` counters. A short
//! job (one text's encoding) runs here instead: `interruptible` picks by its size.

use std::time::Duration;

use pyo3::prelude::*;

use crate::error::Result;
use crate::progress::{run_watched, Progress};

const POLL: Duration = Duration::from_millis(100);

/// A `MemoryError` where a threaded job could not even start: too little memory for
/// its threads and the small allocations that abort where they fail
/// ([`crate::hugemem::headroom`]). Called before the job's arguments are converted.
pub fn check_room() -> PyResult<()> {
    let room = crate::hugemem::headroom(crate::pool::default_threads() + 1);
    match crate::hugemem::probe(room) {
        true => Ok(()),
        false => Err(crate::error::Error::out_of_memory::<u8>("starting the work", room).into()),
    }
}

/// `callback(done, total)` is called while the job runs and once at the end.
pub fn run_with_progress<T, F>(py: Python<'_>, callback: Option<Py<PyAny>>, work: F) -> PyResult<T>
where
    T: Send,
    F: FnOnce(&Progress) -> Result<T> + Send,
{
    // A long job starts a watcher thread and its own: with no room for them, a
    // MemoryError now, not an abort at whichever small allocation fails first.
    check_room()?;
    let progress = Progress::new();
    let report = |progress: &Progress| -> PyResult<()> {
        Python::attach(|py| {
            py.check_signals()?;
            if let Some(cb) = &callback {
                cb.call1(py, (progress.done(), progress.total()))?;
            }
            Ok(())
        })
    };
    let (outcome, interrupted) = py.detach(|| run_watched(&progress, work, POLL, report));
    if let Some(e) = interrupted {
        return Err(e);
    }
    let value = outcome?;
    report(&progress)?;
    Ok(value)
}

/// Texts of at least this many bytes (or code points) are encoded on a watched
/// thread ([`run_with_progress`]), so that Ctrl-C stops them within ~0.1 s; a thread
/// start (~30 us) is nothing beside the milliseconds such a text takes.
const WATCH_FROM: usize = 1 << 20;

/// Texts of fewer bytes (or code points) are encoded with the GIL held: releasing and
/// taking it back cost ~45 ns, a tenth of a call on a 10-byte text, and such a text
/// holds it for about a microsecond (OLMo 2, 180 bytes: ~1 us; 255 code points that
/// a normalizer expands many times over, tens of microseconds). An encoder's first
/// call may also build its workspace or its table of cuts under the GIL, once.
const KEEP_GIL_BELOW: usize = 256;

/// Runs `work` with the GIL released (a short one with it held); a long one on a
/// watched thread.
pub fn interruptible<T: Send>(
    py: Python<'_>,
    len: usize,
    work: impl FnOnce() -> crate::Result<T> + Send,
) -> PyResult<T> {
    if len < KEEP_GIL_BELOW {
        return Ok(work()?);
    }
    if len < WATCH_FROM {
        return Ok(py.detach(work)?);
    }
    run_with_progress(py, None, |_| work())
}
