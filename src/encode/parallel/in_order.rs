//! [`encode_texts_in_order`]: a batch whose outcomes the calling thread takes in order
//! while the other threads go on encoding.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

use super::{encode_one, lease, no_workspace, Encoded};
use crate::encode::encoder::Encoder;
use crate::encode::engine::Lease;
use crate::encode::text::Text;
use crate::error::{Error, Result};
use crate::pool::in_place_scope;
use crate::specials::Specials;

/// What the threads of [`encode_texts_in_order`] share: the texts' outcomes by index,
/// the next text to claim, and how the calling thread waits for the one it needs.
struct Board {
    outcomes: Vec<Mutex<Option<Encoded>>>,
    next: AtomicUsize,
    /// Set when the caller stops early: no more texts are claimed.
    stop: AtomicBool,
    /// The index the caller sleeps on (`usize::MAX`: none), and the workers still
    /// running; both read and written under this lock, so no wake-up is lost.
    waits: Mutex<(usize, usize)>,
    woken: Condvar,
}

impl Board {
    fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
        // A worker that panicked holds no lock across its encoding, and the values
        // behind the locks are whole at every point: a poisoned lock is still good.
        m.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The next text nobody has claimed, unless stopped or none is left.
    fn claim(&self, n: usize) -> Option<usize> {
        if self.stop.load(Ordering::Relaxed) {
            return None;
        }
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        (i < n).then_some(i)
    }

    fn put(&self, i: usize, outcome: Encoded) {
        *Self::lock(&self.outcomes[i]) = Some(outcome);
        let waits = Self::lock(&self.waits);
        if waits.0 == i {
            self.woken.notify_one();
        }
    }

    fn take(&self, i: usize) -> Option<Encoded> {
        Self::lock(&self.outcomes[i]).take()
    }

    fn is_done(&self, i: usize) -> bool {
        Self::lock(&self.outcomes[i]).is_some()
    }

    /// Sleeps until text `i` is done (`i == usize::MAX`: until no worker runs).
    fn wait_for(&self, i: usize) {
        let mut waits = Self::lock(&self.waits);
        waits.0 = i;
        while if i == usize::MAX {
            waits.1 > 0
        } else {
            !self.is_done(i)
        } {
            waits = self.woken.wait(waits).unwrap_or_else(|p| p.into_inner());
        }
        waits.0 = usize::MAX;
    }

    fn worker_ends(&self) {
        let mut waits = Self::lock(&self.waits);
        waits.1 -= 1;
        if waits.1 == 0 {
            self.woken.notify_one();
        }
    }
}

/// A text a thread has claimed and not yet put: put as an internal error if the
/// thread unwinds, so that nobody waits for it forever.
struct Held<'b> {
    board: &'b Board,
    text: Option<usize>,
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        if let Some(i) = self.text {
            let panicked = Error::Internal("a worker thread panicked while encoding".into());
            self.board.put(i, Err(panicked));
        }
    }
}

/// A worker's end, told to the board however the worker leaves.
struct Ends<'b>(&'b Board);

impl Drop for Ends<'_> {
    fn drop(&mut self) {
        self.0.worker_ends();
    }
}

/// Stops the batch when the calling thread leaves it.
struct Stops<'b>(&'b Board);

impl Drop for Stops<'_> {
    fn drop(&mut self) {
        self.0.stop.store(true, Ordering::Relaxed);
    }
}

/// The outcomes ready now, in order, from the first not yet handed over; each one
/// handed over is gone from the board.
pub(crate) struct Ready<'a> {
    board: &'a Board,
    next: &'a mut usize,
}

impl Iterator for Ready<'_> {
    type Item = (usize, Encoded);

    fn next(&mut self) -> Option<(usize, Encoded)> {
        let i = *self.next;
        let outcome = self
            .board
            .outcomes
            .get(i)
            .and_then(|_| self.board.take(i))?;
        *self.next += 1;
        Some((i, outcome))
    }
}

/// Encodes `texts` as [`encode_texts`] does, on `num_threads` threads (0: all cores)
/// of which the calling thread is one, and hands the outcomes to `take` on the calling
/// thread, in order: each call gets those ready, from the first not yet handed over.
///
/// Only `take` needs what the calling thread may hold (for Python: the GIL, which the
/// caller releases around this call and `take` takes back for its lists). `take`
/// returning an error (its own, or an outcome's) stops the batch: no further text is
/// started, the workers' texts in hand are finished and dropped, and the error is
/// returned once every worker has ended.
pub(crate) fn encode_texts_in_order<E: From<Error>>(
    encoder: &Encoder,
    texts: &[Text<'_>],
    allowed: &Specials,
    disallowed: Option<&Specials>,
    num_threads: usize,
    mut take: impl FnMut(Ready<'_>) -> std::result::Result<(), E>,
) -> std::result::Result<(), E> {
    let n = texts.len();
    let threads = match num_threads {
        0 => crate::pool::default_threads(),
        t => t,
    }
    .clamp(1, n.max(1));
    let mut outcomes = Vec::new();
    outcomes
        .try_reserve_exact(n)
        .map_err(|_| Error::out_of_memory::<Mutex<Option<Encoded>>>("a batch's results", n))?;
    outcomes.resize_with(n, || Mutex::new(None));
    let board = Board {
        outcomes,
        next: AtomicUsize::new(0),
        stop: AtomicBool::new(false),
        waits: Mutex::new((usize::MAX, threads - 1)),
        woken: Condvar::new(),
    };
    if threads > 1 {
        encoder
            .workspaces()
            .size_shared_for(texts.iter().map(Text::len).sum());
    }
    let shared = threads > 1;
    let work = |ws: &mut Result<Lease<'_>>, buf: &mut Vec<u8>, i: usize| {
        // Should the encoding panic, the text still gets an outcome and the thread
        // waiting for it wakes.
        let mut held = Held {
            board: &board,
            text: Some(i),
        };
        let outcome = match ws {
            Ok(ws) => encode_one(encoder, &texts[i], allowed, disallowed, ws, buf),
            Err(_) => Err(no_workspace()),
        };
        held.text = None;
        board.put(i, outcome);
    };
    let worker = || {
        let _ends = Ends(&board);
        let (mut ws, mut buf) = (lease(encoder, shared), Vec::new());
        while let Some(i) = board.claim(n) {
            work(&mut ws, &mut buf, i);
        }
    };
    let mut caller = || -> std::result::Result<(), E> {
        // However the caller leaves (an error, or a panic in its share), no further
        // text is started.
        let _stops = Stops(&board);
        let (mut ws, mut buf) = (None, Vec::new());
        let mut next = 0;
        let outcome = loop {
            if let Err(e) = take(Ready {
                board: &board,
                next: &mut next,
            }) {
                break Err(e);
            }
            if next == n {
                break Ok(());
            }
            // The next text is not done: encode unclaimed ones until it is, or wait.
            while !board.is_done(next) {
                match board.claim(n) {
                    Some(i) => {
                        let ws = ws.get_or_insert_with(|| lease(encoder, shared));
                        work(ws, &mut buf, i);
                    }
                    None => board.wait_for(next),
                }
            }
        };
        board.stop.store(true, Ordering::Relaxed);
        drop(ws);
        // The workers' texts in hand are finished before their board goes.
        board.wait_for(usize::MAX);
        outcome
    };
    if threads == 1 {
        // A panic is an internal error here too, as on the pool's threads.
        return std::panic::catch_unwind(std::panic::AssertUnwindSafe(caller))
            .map_err(|payload| E::from(Error::from_panic(payload.as_ref())))?;
    }
    in_place_scope(threads - 1, |scope| {
        for _ in 1..threads {
            scope.spawn(|_| worker());
        }
        caller()
    })
    .map_err(E::from)?
}

#[cfg(test)]
mod tests {
    use super::super::encode_texts;
    use super::*;
    use crate::testutil::{mixed_docs, pattern_encoder, tiny_encoder as encoder};

    /// Every outcome `encode_texts_in_order` hands over, checked to come in order.
    fn in_order(
        e: &Encoder,
        texts: &[Text<'_>],
        all: &Specials,
        d: Option<&Specials>,
        threads: usize,
    ) -> Result<Vec<Option<Vec<u32>>>> {
        let mut got = Vec::new();
        encode_texts_in_order(e, texts, all, d, threads, |ready| {
            for (i, outcome) in ready {
                assert_eq!(i, got.len());
                got.push(outcome?);
            }
            Ok::<(), Error>(())
        })?;
        Ok(got)
    }

    #[test]
    fn in_order_hands_over_what_encode_texts_returns() {
        let e = pattern_encoder("o200k");
        let all = e.specials().clone();
        let docs = mixed_docs();
        let texts: Vec<Text<'_>> = docs.iter().map(|d| Text::Utf8(d)).collect();
        let want = encode_texts(&e, &texts, &all, None, 1).unwrap();
        for threads in [0, 1, 2, 3, 8, 1000] {
            assert_eq!(
                in_order(&e, &texts, &all, None, threads).unwrap(),
                want,
                "{threads}"
            );
        }
        assert!(in_order(&e, &[], &all, None, 2).unwrap().is_empty());
    }

    #[test]
    fn in_order_stops_at_the_first_error_in_order() {
        let e = pattern_encoder("o200k");
        let all = e.specials().clone();
        let docs: Vec<String> = (0..200)
            .map(|i| match i {
                150 => "x<|eot|>".to_string(),
                _ => "the cat sat on été 🙃 ".repeat(50 + i),
            })
            .collect();
        let texts: Vec<Text<'_>> = docs.iter().map(|d| Text::Utf8(d)).collect();
        for threads in [1, 2, 4] {
            let mut seen = 0;
            let err = encode_texts_in_order(
                &e,
                &texts,
                &Specials::default(),
                Some(&all),
                threads,
                |ready| {
                    for (_, outcome) in ready {
                        outcome?;
                        seen += 1;
                    }
                    Ok::<(), Error>(())
                },
            )
            .unwrap_err();
            assert!(
                matches!(&err, Error::DisallowedSpecial { token } if token == "<|eot|>"),
                "{err}"
            );
            assert_eq!(seen, 150);
            // A `take` that fails stops the batch: no text after it is started.
            let mut calls = 0;
            let err = encode_texts_in_order(&e, &texts, &all, None, threads, |ready| {
                calls += 1;
                match ready.count() {
                    0 => Ok(()),
                    _ => Err(Error::invalid("enough")),
                }
            })
            .unwrap_err();
            assert!(
                matches!(&err, Error::InvalidArgument(m) if m == "enough"),
                "{err}"
            );
            assert!(calls <= 2);
        }
    }

    #[test]
    fn a_slow_taker_still_gets_everything() {
        let e = encoder(&[]);
        let all = e.specials().clone();
        let docs: Vec<String> = (0..64).map(|i| " the then".repeat(i)).collect();
        let texts: Vec<Text<'_>> = docs.iter().map(|d| Text::Utf8(d)).collect();
        let want = encode_texts(&e, &texts, &all, None, 2).unwrap();
        let mut got = Vec::new();
        encode_texts_in_order(&e, &texts, &all, None, 3, |ready| {
            std::thread::sleep(std::time::Duration::from_millis(1));
            got.extend(ready.map(|(_, o)| o.unwrap()));
            Ok::<(), Error>(())
        })
        .unwrap();
        assert_eq!(got, want);
    }
}
