//! Runs a core job on a worker thread with the GIL released, while this thread
//! wakes every 100 ms to call the Python progress callback and check for Ctrl-C.
//! The core itself never touches Python: it only bumps `Progress` counters.

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
