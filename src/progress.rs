//! Progress and cancellation shared between a long-running job and whoever watches it.
//!
//! The core never calls back into Python: it bumps atomic counters and polls a
//! cancel flag; the binding layer reads the counters to draw a progress bar and
//! sets the flag on Ctrl-C.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use crate::error::{Error, Result};

#[derive(Default, Debug)]
pub struct Progress {
    done: AtomicU64,
    total: AtomicU64,
    cancelled: AtomicBool,
}

impl Progress {
    pub fn new() -> Self {
        Self::default()
    }
    pub(crate) fn set_total(&self, total: u64) {
        self.total.store(total, Ordering::Relaxed);
    }
    pub(crate) fn set_done(&self, done: u64) {
        self.done.store(done, Ordering::Relaxed);
    }
    pub(crate) fn add(&self, n: u64) {
        self.done.fetch_add(n, Ordering::Relaxed);
    }
    /// Restart the counters for the next phase of a job.
    pub(crate) fn reset(&self, total: u64) {
        self.done.store(0, Ordering::Relaxed);
        self.total.store(total, Ordering::Relaxed);
    }
    pub fn done(&self) -> u64 {
        self.done.load(Ordering::Relaxed)
    }
    pub fn total(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Relaxed);
    }
    /// `Err(Cancelled)` once someone asked to stop; jobs call it between units of work.
    pub(crate) fn check(&self) -> Result<()> {
        if self.cancelled.load(Ordering::Relaxed) {
            Err(Error::Cancelled)
        } else {
            Ok(())
        }
    }
}

/// Runs `job` on a thread of its own while this thread calls `tick` every `every`: to
/// draw progress, or to notice Ctrl-C. An `Err` from `tick` cancels the job and comes
/// back beside the job's outcome; `tick` is not called again after one.
///
/// A panic in the job comes back as [`Error::Internal`] instead of being raised again
/// on this thread, so that the caller can report it as an error: the job's thread is
/// joined here, where a scope left to join it would panic in turn.
pub fn run_watched<T, E, J, K>(
    progress: &Progress,
    job: J,
    every: Duration,
    mut tick: K,
) -> (Result<T>, Option<E>)
where
    T: Send,
    J: FnOnce(&Progress) -> Result<T> + Send,
    K: FnMut(&Progress) -> std::result::Result<(), E>,
{
    // Taken by whichever thread runs it (see below).
    let job = std::sync::Mutex::new(Some(job));
    let job = &job;
    std::thread::scope(|s| {
        let (tx, rx) = mpsc::channel();
        let run = move |tx: mpsc::Sender<_>| {
            let _watched = Watched::enter(progress);
            let job = job.lock().ok().and_then(|mut j| j.take());
            if let Some(job) = job {
                let _ = tx.send(job(progress));
            }
        };
        let spawned = std::thread::Builder::new().spawn_scoped(s, {
            let tx = tx.clone();
            move || run(tx)
        });
        let handle = match spawned {
            Ok(handle) => handle,
            // No thread to be had (a memory or thread limit): the job runs here, with
            // no ticks, and fails where it needs memory it cannot get.
            Err(_) => {
                run(tx);
                let outcome = rx
                    .try_recv()
                    .unwrap_or_else(|_| Err(Error::internal("the job did not run")));
                return (outcome, None);
            }
        };
        drop(tx);
        let mut stopped_by = None;
        let outcome = loop {
            match rx.recv_timeout(every) {
                Ok(r) => break Some(r),
                Err(RecvTimeoutError::Disconnected) => break None,
                Err(RecvTimeoutError::Timeout) => {
                    if stopped_by.is_none() {
                        if let Err(e) = tick(progress) {
                            progress.cancel();
                            stopped_by = Some(e);
                        }
                    }
                }
            }
        };
        let outcome = match (outcome, handle.join()) {
            (Some(r), _) => r,
            (None, Err(payload)) => Err(Error::from_panic(payload.as_ref())),
            (None, Ok(())) => Err(Error::internal("the job's thread ended without a result")),
        };
        (outcome, stopped_by)
    })
}

thread_local! {
    /// The cancel flag of the job this thread runs for [`run_watched`], if any.
    static WATCHED: std::cell::Cell<*const AtomicBool> = const { std::cell::Cell::new(std::ptr::null()) };
}

/// Marks this thread as running a watched job until dropped.
struct Watched;

impl Watched {
    fn enter(progress: &Progress) -> Self {
        WATCHED.with(|w| w.set(&progress.cancelled));
        Watched
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        WATCHED.with(|w| w.set(std::ptr::null()));
    }
}

/// Whether the watched job this thread runs (see [`run_watched`]) was asked to stop.
/// For loops deep inside the core that have no `Progress` at hand (merging one
/// huge piece): they stop early, and their caller reports `Cancelled`. False on
/// threads that run no watched job.
pub(crate) fn interrupted() -> bool {
    WATCHED.with(|w| {
        let flag = w.get();
        // SAFETY: the pointer is set only while `run_watched`'s job runs on this
        // thread, during which the `Progress` it points into is borrowed.
        !flag.is_null() && unsafe { (*flag).load(Ordering::Relaxed) }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TICK: Duration = Duration::from_millis(5);

    #[test]
    fn run_watched_returns_the_outcome_and_ticks_meanwhile() {
        let progress = Progress::new();
        let mut ticks = 0;
        let (outcome, stopped) = run_watched(
            &progress,
            |p| {
                std::thread::sleep(Duration::from_millis(60));
                p.add(7);
                Ok(42)
            },
            TICK,
            |_| {
                ticks += 1;
                Ok::<(), ()>(())
            },
        );
        assert!(matches!(outcome, Ok(42)));
        assert!(stopped.is_none() && ticks > 0 && progress.done() == 7);
    }

    #[test]
    fn run_watched_cancels_the_job_when_a_tick_fails() {
        let progress = Progress::new();
        let (outcome, stopped) = run_watched(
            &progress,
            |p| loop {
                p.check()?;
                std::thread::sleep(Duration::from_millis(1));
            },
            TICK,
            |_| Err::<(), _>("interrupted"),
        );
        assert!(matches!(outcome, Err::<(), _>(Error::Cancelled)));
        assert_eq!(stopped, Some("interrupted"));
    }

    /// The job's thread is joined here rather than left to the scope to join, which
    /// would raise its panic again: the caller gets an error to report (Python a
    /// RuntimeError, not pyo3's PanicException).
    #[test]
    fn run_watched_returns_a_panic_as_its_message() {
        let progress = Progress::new();
        let (outcome, stopped) = run_watched(
            &progress,
            |_| -> Result<()> { panic!("test panic {}", 7) },
            TICK,
            |_| Ok::<(), ()>(()),
        );
        let internal = |outcome: Result<()>| match outcome {
            Err(Error::Internal(m)) => m,
            other => panic!("{other:?}"),
        };
        assert_eq!(internal(outcome), "a worker thread panicked: test panic 7");
        assert!(stopped.is_none());
        let (outcome, _) = run_watched(
            &progress,
            |_| -> Result<()> { std::panic::panic_any(5u8) },
            TICK,
            |_| Ok::<(), ()>(()),
        );
        assert_eq!(internal(outcome), "a worker thread panicked: no message");
    }
}
