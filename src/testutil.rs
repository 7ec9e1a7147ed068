//! Helpers for the unit tests.

use std::sync::mpsc;
use std::time::{Duration, Instant};

/// `f()`, run on a thread of its own; panics naming `what` if it takes longer than
/// `limit` seconds, so that a test of a complexity bound fails rather than hangs when
/// the bound regresses (the runaway thread ends with the test process). Give a
/// generous limit: the tests run unoptimised and beside other tests.
pub(crate) fn finishes_within<T: Send + 'static>(
    limit: f64,
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    let start = Instant::now();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs_f64(limit)) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what} took over {limit} s"),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            panic!(
                "{what} panicked after {:.2} s",
                start.elapsed().as_secs_f64()
            )
        }
    }
}

/// A small xorshift generator: the tests stay deterministic and need no crate.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number below `n` (not 0).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}
