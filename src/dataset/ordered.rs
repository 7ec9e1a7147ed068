//! An ordered parallel map with bounded lookahead: `threads` workers take items in
//! order from a shared counter, and the calling thread consumes results strictly in
//! item order as they complete. The item count need not be known up front: an item
//! past the end says so, and the map ends there. A worker waits when it runs more than `max_ahead`
//! items ahead of the consumer, so memory stays bounded; unlike processing fixed
//! windows with a barrier, a slow item never leaves the other workers idle.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};

use crate::error::{Error, Result};

struct State<T> {
    done: BTreeMap<usize, Result<T>>,
    consumed: usize,
    stop: bool,
    /// No item at or after this exists (found by a worker).
    end: usize,
    /// The consumer sleeps on `ready` for item `consumed`.
    consumer_waiting: bool,
    /// Workers sleeping on `room` until the consumer catches up.
    workers_waiting: usize,
    /// A worker panicked: its item will never come.
    worker_panicked: bool,
}

impl<T> State<T> {
    /// Whether the consumer, if asleep, has something to do: its next item, or the end.
    /// (A stop or a panic wakes it through `halt`, which wakes every sleeper.)
    fn consumer_can_go(&self) -> bool {
        self.consumed >= self.end || self.done.contains_key(&self.consumed)
    }
}

/// Runs `work(i, &mut scratch)` for `i in 0..n` on `threads` workers (each with its own
/// `init()` scratch) and feeds the results to `sink(i, value)` in order on this thread.
/// `work` returns `None` for an item past the end: no later item is asked for, and the
/// map ends after the items before it. The first error (from `work` or `sink`) stops
/// everything and is returned, also one of an item past the end.
///
/// Wakeups are targeted: a finished item wakes the consumer only when it is the one
/// the consumer sleeps on, and a consumed item wakes workers only when some wait for
/// room, each after the lock is let go. On a machine with as many cores as workers,
/// every wakeup preempts a worker; waking the consumer for every item, while the
/// waker still held the lock, cost two switches per item where one was needed.
pub fn ordered_map<S, T, I, W, K>(
    n: usize,
    threads: usize,
    max_ahead: usize,
    init: I,
    work: W,
    mut sink: K,
) -> Result<()>
where
    T: Send,
    I: Fn() -> S + Sync,
    W: Fn(usize, &mut S) -> Result<Option<T>> + Sync,
    K: FnMut(usize, T) -> Result<()>,
{
    let next = AtomicUsize::new(0);
    let state = Mutex::new(State {
        done: BTreeMap::new(),
        consumed: 0,
        stop: false,
        end: n,
        consumer_waiting: false,
        workers_waiting: 0,
        worker_panicked: false,
    });
    // The consumer waits on `ready` for its next item; workers wait on `room`.
    let ready = Condvar::new();
    let room = Condvar::new();
    let poisoned = || Error::internal("a worker thread panicked");
    let max_ahead = max_ahead.max(1);
    // Stops every thread and wakes the sleepers. Run when the consumer is done or
    // failed (a worker past the end waits for room too, and the scope joins them
    // all), and when any thread unwinds, so that a panic ends the map (the scope
    // raises it again once all threads are joined) instead of hanging it.
    let halt = |worker_panicked: bool| {
        {
            let mut g = state.lock().unwrap_or_else(PoisonError::into_inner);
            g.stop = true;
            g.worker_panicked |= worker_panicked;
        }
        ready.notify_all();
        room.notify_all();
    };
    std::thread::scope(|s| {
        // Where a thread cannot be started (a memory or thread limit), fewer work;
        // none at all is an error.
        let mut started = 0;
        for _ in 0..threads.max(1) {
            let spawned = std::thread::Builder::new().spawn_scoped(s, || {
                let _on_panic = OnDrop(|| {
                    if std::thread::panicking() {
                        halt(true);
                    }
                });
                let mut scratch = init();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        return;
                    }
                    {
                        let Ok(mut g) = state.lock() else { return };
                        while !g.stop && i < g.end && i >= g.consumed + max_ahead {
                            g.workers_waiting += 1;
                            g = match room.wait(g) {
                                Ok(g) => g,
                                Err(_) => return,
                            };
                            g.workers_waiting -= 1;
                        }
                        if g.stop || i >= g.end {
                            return;
                        }
                    }
                    let r = work(i, &mut scratch);
                    let Ok(mut g) = state.lock() else { return };
                    match r {
                        Ok(None) => g.end = g.end.min(i),
                        Ok(Some(v)) => {
                            g.done.insert(i, Ok(v));
                        }
                        Err(e) => {
                            g.done.insert(i, Err(e));
                        }
                    }
                    let wake_consumer = g.consumer_waiting && g.consumer_can_go();
                    drop(g);
                    if wake_consumer {
                        ready.notify_one();
                    }
                }
            });
            if spawned.is_err() {
                break;
            }
            started += 1;
        }
        if started == 0 {
            return Err(crate::pool::no_thread());
        }
        let _halt = OnDrop(|| halt(false));
        (|| {
            for i in 0..n {
                let r = {
                    let mut g = state.lock().map_err(|_| poisoned())?;
                    loop {
                        if let Some(r) = g.done.remove(&i) {
                            break r;
                        }
                        if i >= g.end {
                            // An error wins over the end, whichever item it came with:
                            // a reader that fails can have its end seen first.
                            let failed = g.done.iter().find(|(_, r)| r.is_err()).map(|(&k, _)| k);
                            return match failed.and_then(|k| g.done.remove(&k)) {
                                Some(Err(e)) => Err(e),
                                _ => Ok(()),
                            };
                        }
                        if g.worker_panicked {
                            return Err(poisoned());
                        }
                        g.consumer_waiting = true;
                        g = ready.wait(g).map_err(|_| poisoned())?;
                        g.consumer_waiting = false;
                    }
                };
                r.and_then(|v| sink(i, v))?;
                let wake_workers = {
                    let mut g = state.lock().map_err(|_| poisoned())?;
                    g.consumed = i + 1;
                    g.workers_waiting > 0
                };
                if wake_workers {
                    room.notify_all();
                }
            }
            Ok(())
        })()
    })
}

/// Runs its closure when dropped: on return and on unwinding alike.
struct OnDrop<F: Fn()>(F);

impl<F: Fn()> Drop for OnDrop<F> {
    fn drop(&mut self) {
        (self.0)();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_overlap() {
        // Sleeping needs no CPU, so this holds on a busy machine: 20 items of 50 ms on
        // 2 workers take ~0.5 s, serially 1 s.
        let t = std::time::Instant::now();
        ordered_map(
            20,
            2,
            4,
            || (),
            |i, _| {
                std::thread::sleep(std::time::Duration::from_millis(50));
                Ok(Some(i))
            },
            |_, _| Ok(()),
        )
        .unwrap();
        assert!(t.elapsed().as_secs_f64() < 0.85, "{:?}", t.elapsed());
    }

    #[test]
    fn in_order_and_stops_on_error() {
        let mut seen = Vec::new();
        ordered_map(
            100,
            3,
            4,
            || (),
            |i, _| Ok(Some(i * 2)),
            |i, v| {
                seen.push((i, v));
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(seen, (0..100).map(|i| (i, i * 2)).collect::<Vec<_>>());

        let mut count = 0;
        let r = ordered_map(
            1000,
            2,
            4,
            || (),
            |i, _| {
                if i == 10 {
                    Err(Error::Cancelled)
                } else {
                    Ok(Some(i))
                }
            },
            |_, _| {
                count += 1;
                Ok(())
            },
        );
        assert!(matches!(r, Err(Error::Cancelled)));
        assert_eq!(count, 10);
    }

    /// Workers asleep for room (some of them past the end) must wake when the map ends,
    /// at the end or when the consumer fails, or it would never return (the scope joins
    /// them). A slow consumer and a lookahead of 1 keep most workers asleep.
    #[test]
    fn wakes_workers_waiting_for_room_at_the_end_and_on_error() {
        let slow_sink = |_: usize, _: usize| {
            std::thread::sleep(std::time::Duration::from_millis(2));
            Ok(())
        };
        for threads in [2, 4, 8] {
            let r = ordered_map(
                usize::MAX,
                threads,
                1,
                || (),
                |i, _| Ok((i < 9).then_some(i)),
                slow_sink,
            );
            assert!(r.is_ok());
            let r = ordered_map(
                usize::MAX,
                threads,
                1,
                || (),
                |i, _| Ok(Some(i)),
                |i, v| match i {
                    5 => Err(Error::Cancelled),
                    _ => slow_sink(i, v),
                },
            );
            assert!(matches!(r, Err(Error::Cancelled)));
        }
    }

    /// A panic in `work` or in `sink` ends the map, as a panic, instead of leaving the
    /// consumer waiting for an item that never comes (or the scope joining workers
    /// asleep for room), as it did before the threads halted on unwinding.
    #[test]
    fn a_panic_in_work_or_sink_ends_the_map() {
        for (panic_in_work, threads) in [(true, 1), (true, 3), (false, 1), (false, 3)] {
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    ordered_map(
                        usize::MAX,
                        threads,
                        1,
                        || (),
                        |i, _| {
                            assert!(!(panic_in_work && i == 3), "test panic in work");
                            Ok(Some(i))
                        },
                        |i, _| {
                            assert!(panic_in_work || i != 3, "test panic in sink");
                            Ok(())
                        },
                    )
                }));
                let _ = tx.send(r.is_err());
            });
            let panicked = rx
                .recv_timeout(std::time::Duration::from_secs(30))
                .expect("the map hung after a panic");
            assert!(panicked, "in work: {panic_in_work}, threads: {threads}");
        }
    }

    /// An item past the end that fails (it finished before the end was found) fails
    /// the map: the end never hides an error.
    #[test]
    fn an_error_past_the_end_still_fails_the_map() {
        let r = ordered_map(
            usize::MAX,
            3,
            8,
            || (),
            |i, _| match i {
                5 => {
                    std::thread::sleep(std::time::Duration::from_millis(100));
                    Ok(None)
                }
                6 => Err(Error::invalid("item 6 failed")),
                7.. => {
                    std::thread::sleep(std::time::Duration::from_millis(200));
                    Ok(None)
                }
                _ => Ok(Some(i)),
            },
            |_, _| Ok(()),
        );
        assert!(
            matches!(&r, Err(e) if e.to_string().contains("item 6")),
            "{r:?}"
        );
    }

    #[test]
    fn ends_at_the_first_item_past_the_end() {
        for threads in [1, 2, 3] {
            let asked = AtomicUsize::new(0);
            let mut seen = Vec::new();
            ordered_map(
                usize::MAX,
                threads,
                4,
                || (),
                |i, _| {
                    asked.fetch_add(1, Ordering::Relaxed);
                    Ok((i < 37).then_some(i))
                },
                |i, v| {
                    assert_eq!(i, v);
                    seen.push(v);
                    Ok(())
                },
            )
            .unwrap();
            assert_eq!(seen, (0..37).collect::<Vec<_>>());
            // Each worker stops at the first item past the end it is given.
            assert!(asked.load(Ordering::Relaxed) <= 37 + threads);
        }
    }
}
