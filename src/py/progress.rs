//! Runs a core job on a worker thread with the GIL released, while this thread
//! wakes every 100 ms to call the Python progress callback and check for Ctrl-C.
//! The core itself never touches Python: it only bumps `Progress` counters.

use std::sync::mpsc;
use std::time::Duration;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use crate::error::Result;
use crate::progress::Progress;

const POLL: Duration = Duration::from_millis(100);

/// `callback(done, total)` is called while the job runs and once at the end.
pub fn run_with_progress<T, F>(py: Python<'_>, callback: Option<Py<PyAny>>, work: F) -> PyResult<T>
where
    T: Send,
    F: FnOnce(&Progress) -> Result<T> + Send,
{
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
    let (outcome, interrupted) = py.detach(|| {
        std::thread::scope(|s| {
            let (tx, rx) = mpsc::channel();
            let progress = &progress;
            s.spawn(move || {
                let r = work(progress);
                let _ = tx.send(r);
            });
            let mut interrupted: Option<PyErr> = None;
            loop {
                match rx.recv_timeout(POLL) {
                    Ok(r) => return (Some(r), interrupted),
                    Err(mpsc::RecvTimeoutError::Disconnected) => return (None, interrupted),
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        if interrupted.is_none() {
                            if let Err(e) = report(progress) {
                                progress.cancel();
                                interrupted = Some(e);
                            }
                        }
                    }
                }
            }
        })
    });
    if let Some(e) = interrupted {
        return Err(e);
    }
    match outcome {
        Some(Ok(value)) => {
            report(&progress)?;
            Ok(value)
        }
        Some(Err(e)) => Err(e.into()),
        None => Err(PyRuntimeError::new_err(
            "bpekit worker thread panicked; please report this as a bug",
        )),
    }
}
