//! An ordered parallel map with bounded lookahead: `threads` workers take items in
//! order from a shared counter, and the calling thread consumes results strictly in
//! item order as they complete. The item count need not be known up front: an item
//! past the end says so, and the map ends there. A worker waits when it runs more than `max_ahead`
//! items ahead of the consumer, so memory stays bounded; unlike processing fixed
//! windows with a barrier, a slow item never leaves the other workers idle.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};

use crate::error::{Error, Result};

struct State<T> {
    done: BTreeMap<usize, Result<T>>,
    consumed: usize,
    stop: bool,
    /// No item at or after this exists (found by a worker).
    end: usize,
}

/// Runs `work(i, &mut scratch)` for `i in 0..n` on `threads` workers (each with its own
/// `init()` scratch) and feeds the results to `sink(i, value)` in order on this thread.
/// `work` returns `None` for an item past the end: no later item is asked for, and the
/// map ends after the items before it. The first error (from `work` or `sink`) stops
/// everything and is returned.
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
    });
    let changed = Condvar::new();
    let poisoned = || Error::invalid("a worker thread panicked");
    let max_ahead = max_ahead.max(1);
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| {
                let mut scratch = init();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        return;
                    }
                    {
                        let Ok(mut g) = state.lock() else { return };
                        while !g.stop && i < g.end && i >= g.consumed + max_ahead {
                            g = match changed.wait(g) {
                                Ok(g) => g,
                                Err(_) => return,
                            };
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
                    changed.notify_all();
                }
            });
        }
        let stop = |e: Error| {
            if let Ok(mut g) = state.lock() {
                g.stop = true;
            }
            changed.notify_all();
            Err(e)
        };
        for i in 0..n {
            let r = {
                let mut g = match state.lock() {
                    Ok(g) => g,
                    Err(_) => return stop(poisoned()),
                };
                loop {
                    if let Some(r) = g.done.remove(&i) {
                        break r;
                    }
                    if i >= g.end {
                        return Ok(());
                    }
                    g = match changed.wait(g) {
                        Ok(g) => g,
                        Err(_) => return stop(poisoned()),
                    };
                }
            };
            if let Err(e) = r.and_then(|v| sink(i, v)) {
                return stop(e);
            }
            if let Ok(mut g) = state.lock() {
                g.consumed = i + 1;
            }
            changed.notify_all();
        }
        Ok(())
    })
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
