//! Timing the two stages of encoding apart, for benchmarks (`encode_compare.py`).

use std::sync::OnceLock;

use super::{Engine, Workspace};
use crate::error::Result;

impl Engine {
    /// Times the two stages of encoding `text` (no special tokens) apart, for
    /// benchmarks: `(pre-tokenize seconds, merge seconds, token count)`, in CPU time of
    /// the calling thread (so a busy machine does not inflate them). The merge stage
    /// runs on pieces collected beforehand, with a cold cache.
    pub(crate) fn profile(&self, text: &str) -> Result<(f64, f64, usize)> {
        let t0 = thread_cpu_seconds();
        let mut pieces: Vec<&str> = Vec::with_capacity(text.len() / 4);
        self.pretok.for_each_piece(text, |p| pieces.push(p))?;
        let pretok_s = thread_cpu_seconds() - t0;
        let mut ws = Workspace::new()?;
        let mut out = Vec::with_capacity(text.len() / 3);
        let t1 = thread_cpu_seconds();
        for p in &pieces {
            self.encode_piece(p.as_bytes(), &mut ws, &mut out);
        }
        Ok((pretok_s, thread_cpu_seconds() - t1, out.len()))
    }
}

/// CPU seconds used by the calling thread (wall-clock seconds where unsupported).
fn thread_cpu_seconds() -> f64 {
    #[cfg(target_os = "linux")]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec.
        if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } == 0 {
            return ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9;
        }
    }
    static START: OnceLock<std::time::Instant> = OnceLock::new();
    START
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_secs_f64()
}
