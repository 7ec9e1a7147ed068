//! Progress and cancellation shared between a long-running job and whoever watches it.
//!
//! The core never calls back into Python on its own: it bumps atomic counters and
//! polls a cancel flag; the binding layer reads the counters to draw a progress bar and
//! sets the flag on Ctrl-C. Work that must run on the watching thread (pulling a Python
//! generator, see [`on_thread`]) is handed to it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

#[derive(Default, Debug)]
pub struct Progress {
    done: AtomicU64,
    total: AtomicU64,
    /// Shared with readers that wait outside any loop of the core (a pipe's,
    /// [`Progress::cancel_flag`]).
    cancelled: Arc<AtomicBool>,
    /// The thread watching this job, while one does ([`run_watched`]): for
    /// [`Progress::check_now`].
    watcher: Mutex<Option<mpsc::Sender<Wake>>>,
}

/// What wakes the thread that watches a job: the job's end, work to run there, or a
/// look for a stop now (answered on the channel).
enum Wake {
    Done,
    Call(Box<dyn FnOnce() + Send>),
    Tick(mpsc::SyncSender<()>),
}

/// The threads that watch a job now ([`run_watched`]), and where work for each goes
/// ([`on_thread`]). A few entries at most: one per thread that runs a job.
static WATCHERS: Mutex<Vec<(ThreadId, mpsc::Sender<Wake>)>> = Mutex::new(Vec::new());

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
    /// The cancel flag, for a reader that waits on something else (a pipe) and checks
    /// it between waits.
    pub(crate) fn cancel_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.cancelled)
    }
    /// `Err(Cancelled)` once someone asked to stop; jobs call it between units of work.
    pub(crate) fn check(&self) -> Result<()> {
        if self.cancelled.load(Ordering::Relaxed) {
            Err(Error::Cancelled)
        } else {
            Ok(())
        }
    }

    /// [`Progress::check`] after the watching thread has looked for a stop (Ctrl-C)
    /// now, not at its next tick: for a job about to commit its result.
    ///
    /// Why: the watcher looks every 100 ms, and a job whose last unit of work was long
    /// (one large chunk) ended and put its file in place before the look that saw the
    /// Ctrl-C pressed meanwhile; the call then raised `KeyboardInterrupt` with the new
    /// file in place of the old.
    pub(crate) fn check_now(&self) -> Result<()> {
        let watcher = self.watcher.lock().ok().and_then(|w| w.clone());
        if let Some(watcher) = watcher {
            let (tx, rx) = mpsc::sync_channel(1);
            if watcher.send(Wake::Tick(tx)).is_ok() {
                // No answer: the watcher has ended, after the job's last look.
                let _ = rx.recv();
            }
        }
        self.check()
    }

    /// Makes [`interrupted`] on this thread read this job's stop, while the guard
    /// lives: for the threads a watched job starts, whose deep loops (one chunk's
    /// encode) would otherwise run to their end after a Ctrl-C.
    pub(crate) fn watch_here(&self) -> Watched<'_> {
        Watched::enter(self)
    }

    fn set_watcher(&self, sender: Option<mpsc::Sender<Wake>>) {
        if let Ok(mut w) = self.watcher.lock() {
            *w = sender;
        }
    }
}

/// Runs `work` on `thread` if it watches a job now ([`run_watched`]'s caller) and
/// returns what it returns, waiting for it; runs it here otherwise. `Err(Cancelled)`
/// when the job was stopped before `work` could run.
///
/// Why: a Python generator pulled on a worker thread could not be interrupted. Python
/// runs signal handlers on its main thread only, so Ctrl-C waited for a generator
/// blocked in `time.sleep` to yield, and forever for one blocked in `queue.get()`.
/// Pulled on the thread that called the job (the main thread, for a script), a signal
/// stops the generator where it waits, as it would a plain `for` loop over it.
pub fn on_thread<R: Send + 'static>(
    thread: ThreadId,
    work: impl FnOnce() -> R + Send + 'static,
) -> Result<R> {
    let watcher = WATCHERS.lock().ok().and_then(|w| {
        w.iter()
            .find(|(id, _)| *id == thread)
            .map(|(_, tx)| tx.clone())
    });
    let Some(watcher) = watcher else {
        return Ok(work());
    };
    let (tx, rx) = mpsc::sync_channel(1);
    let call = Box::new(move || {
        let _ = tx.send(work());
    });
    watcher
        .send(Wake::Call(call))
        .map_err(|_| Error::Cancelled)?;
    // The watcher drops the call unrun once the job is cancelled, which ends this wait.
    rx.recv().map_err(|_| Error::Cancelled)
}

/// Registers this thread as the watcher that `sender` reaches ([`on_thread`]), or
/// (`None`) takes it off.
fn set_watcher(sender: Option<mpsc::Sender<Wake>>) {
    let me = std::thread::current().id();
    if let Ok(mut w) = WATCHERS.lock() {
        w.retain(|(id, _)| *id != me);
        w.extend(sender.map(|tx| (me, tx)));
    }
}

/// Sends [`Wake::Done`] when dropped: at the end of a job, also one that panicked.
struct DoneOnDrop(mpsc::Sender<Wake>);

impl Drop for DoneOnDrop {
    fn drop(&mut self) {
        let _ = self.0.send(Wake::Done);
    }
}

/// Runs `job` on a thread of its own while this thread calls `tick` every `every`: to
/// draw progress, or to notice Ctrl-C. An `Err` from `tick` cancels the job and comes
/// back beside the job's outcome; `tick` is not called again after one.
///
/// Work the job hands to this thread ([`on_thread`]) runs here as it comes,
/// between ticks.
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
    let job = Mutex::new(Some(job));
    let outcome: Mutex<Option<Result<T>>> = Mutex::new(None);
    let (job, slot) = (&job, &outcome);
    let run = move || {
        let _watched = Watched::enter(progress);
        let job = job.lock().ok().and_then(|mut j| j.take());
        if let Some(job) = job {
            let r = job(progress);
            if let Ok(mut slot) = slot.lock() {
                *slot = Some(r);
            }
        }
    };
    let take = || outcome.lock().ok().and_then(|mut o| o.take());
    let stopped_by = std::thread::scope(|s| {
        let (tx, rx) = mpsc::channel();
        set_watcher(Some(tx.clone()));
        progress.set_watcher(Some(tx.clone()));
        let done = DoneOnDrop(tx);
        let spawned = std::thread::Builder::new().spawn_scoped(s, move || {
            let _done = done;
            run();
        });
        let handle = match spawned {
            Ok(handle) => handle,
            // No thread to be had (a memory or thread limit): the job runs here, with
            // no ticks, and fails where it needs memory it cannot get.
            Err(_) => {
                set_watcher(None);
                progress.set_watcher(None);
                run();
                return None;
            }
        };
        let mut stopped_by = None;
        let mut next_tick = Instant::now() + every;
        loop {
            let wait = next_tick.saturating_duration_since(Instant::now());
            match rx.recv_timeout(wait) {
                Ok(Wake::Done) | Err(RecvTimeoutError::Disconnected) => break,
                // Once the job is cancelled, a call is dropped unrun: its asker stops.
                Ok(Wake::Call(call)) if stopped_by.is_none() && progress.check().is_ok() => call(),
                Ok(Wake::Call(_)) | Err(RecvTimeoutError::Timeout) => {}
                Ok(Wake::Tick(answer)) => {
                    if stopped_by.is_none() {
                        if let Err(e) = tick(progress) {
                            progress.cancel();
                            stopped_by = Some(e);
                        }
                    }
                    let _ = answer.send(());
                }
            }
            // Also after calls, which may come faster than ticks.
            if Instant::now() >= next_tick {
                next_tick = Instant::now() + every;
                if stopped_by.is_none() {
                    if let Err(e) = tick(progress) {
                        progress.cancel();
                        stopped_by = Some(e);
                    }
                }
            }
        }
        set_watcher(None);
        progress.set_watcher(None);
        // Calls sent after the end are dropped with `rx`: their askers stop.
        drop(rx);
        if let Err(payload) = handle.join() {
            if let Ok(mut slot) = outcome.lock() {
                slot.get_or_insert(Err(Error::from_panic(payload.as_ref())));
            }
        }
        stopped_by
    });
    let outcome = match take() {
        Some(r) => r,
        None => Err(Error::internal("the job's thread ended without a result")),
    };
    (outcome, stopped_by)
}

thread_local! {
    /// The cancel flag of the job this thread runs for [`run_watched`], if any.
    static WATCHED: std::cell::Cell<*const AtomicBool> = const { std::cell::Cell::new(std::ptr::null()) };
}

/// Marks this thread as running for a watched job until dropped, when what it ran
/// for before comes back. Borrows the job's `Progress`, whose flag it points to, and
/// stays on its thread (a raw pointer is not `Send`).
pub(crate) struct Watched<'p> {
    before: *const AtomicBool,
    _progress: std::marker::PhantomData<&'p Progress>,
}

impl<'p> Watched<'p> {
    fn enter(progress: &'p Progress) -> Self {
        let before = WATCHED.with(|w| w.replace(Arc::as_ptr(&progress.cancelled)));
        Watched {
            before,
            _progress: std::marker::PhantomData,
        }
    }
}

impl Drop for Watched<'_> {
    fn drop(&mut self) {
        WATCHED.with(|w| w.set(self.before));
    }
}

/// Whether the watched job this thread runs (see [`run_watched`]) was asked to stop.
/// For loops deep inside the core that have no `Progress` at hand (merging one
/// huge piece): they stop early, and their caller reports `Cancelled`. False on
/// threads that run no watched job.
pub(crate) fn interrupted() -> bool {
    WATCHED.with(|w| {
        let flag = w.get();
        // SAFETY: the pointer is set only while a `Watched` guard lives on this
        // thread, which borrows the `Progress` it points into.
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
    fn check_now_looks_for_a_stop_at_once() {
        // Ticks an hour apart: only `check_now` can make the watcher look. The stop
        // (a Ctrl-C) comes while the job works; the job sees it before it commits.
        let progress = Progress::new();
        let pressed = AtomicBool::new(false);
        let started = Instant::now();
        let (outcome, stopped) = run_watched(
            &progress,
            |p| {
                p.check_now()?;
                pressed.store(true, Ordering::Relaxed);
                p.check()?;
                p.check_now()?;
                Ok("committed")
            },
            Duration::from_secs(3600),
            |_| match pressed.load(Ordering::Relaxed) {
                true => Err("interrupted"),
                false => Ok(()),
            },
        );
        assert!(matches!(outcome, Err(Error::Cancelled)), "{outcome:?}");
        assert_eq!(stopped, Some("interrupted"));
        assert!(started.elapsed() < Duration::from_secs(60));
        // Outside a watched job it is `check`.
        let idle = Progress::new();
        assert!(idle.check_now().is_ok());
        idle.cancel();
        assert!(matches!(idle.check_now(), Err(Error::Cancelled)));
    }

    #[test]
    fn a_thread_watching_for_a_job_sees_its_stop_until_the_guard_goes() {
        let (outer, inner) = (Progress::new(), Progress::new());
        assert!(!interrupted(), "no job on this thread");
        {
            let _outer = outer.watch_here();
            {
                let _inner = inner.watch_here();
                inner.cancel();
                assert!(interrupted());
            }
            assert!(!interrupted(), "the outer job's flag is back");
            outer.cancel();
            assert!(interrupted());
            // Another thread sees it only while it watches for the job too.
            std::thread::scope(|s| {
                s.spawn(|| {
                    assert!(!interrupted());
                    let _w = outer.watch_here();
                    assert!(interrupted());
                });
            });
        }
        assert!(!interrupted());
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

    /// Work handed to the watching thread runs there, at once (not at the next tick),
    /// and is dropped unrun once the job is cancelled, which stops its asker.
    #[test]
    fn on_thread_runs_work_on_the_watching_thread() {
        let progress = Progress::new();
        let me = std::thread::current().id();
        let started = std::time::Instant::now();
        let (outcome, stopped) = run_watched(
            &progress,
            |_| {
                let mut ran_on = Vec::new();
                for _ in 0..20 {
                    ran_on.push(on_thread(me, || std::thread::current().id())?);
                }
                Ok(ran_on)
            },
            Duration::from_secs(10),
            |_| Ok::<(), ()>(()),
        );
        assert!(outcome.unwrap().iter().all(|&id| id == me) && stopped.is_none());
        assert!(started.elapsed() < Duration::from_secs(5));
        // With no job watched on `me`, work runs on the asking thread.
        let elsewhere = std::thread::spawn(move || on_thread(me, || std::thread::current().id()));
        let asker = elsewhere.thread().id();
        assert_eq!(elsewhere.join().unwrap().unwrap(), asker);
        // Cancelled: the work never runs, and its asker gets `Cancelled`.
        let progress = Progress::new();
        let (outcome, stopped) = run_watched(
            &progress,
            |p| {
                while p.check().is_ok() {
                    std::thread::sleep(Duration::from_millis(1));
                }
                on_thread(me, || panic!("ran after the job was cancelled"))
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
