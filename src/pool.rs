//! The thread pools that parallel work runs on, safe to use again in a forked child.
//!
//! Why not rayon's global pool: a process forked after a pool's threads started
//! (`multiprocessing` with the fork start method, `os.fork()`, a PyTorch `DataLoader`
//! worker, `datasets.map(num_proc=...)`) has the pool's memory but none of its
//! threads, so the first job sent to it waits forever. rayon's global pool cannot be
//! replaced once made; these pools are kept per process instead: a registry records
//! the process id it was made in, and a call from another process (a forked child)
//! starts a new registry, with new threads as they are asked for. The old registry is
//! leaked on purpose: its threads do not exist in the child, and dropping a pool
//! would signal them through locks that a parent thread may have held at the fork.
//! Looking the pool up costs a `getpid` and a lock (~0.1 us), once per parallel job.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};

/// A thread pool and its thread count.
type SizedPool = (usize, Arc<rayon::ThreadPool>);

/// The pools of one process.
struct Registry {
    pid: u32,
    pools: Mutex<Vec<SizedPool>>,
}

static REGISTRY: AtomicPtr<Registry> = AtomicPtr::new(std::ptr::null_mut());

/// This process's registry, made on first use (and again in a forked child).
fn registry() -> &'static Registry {
    let pid = std::process::id();
    let current = REGISTRY.load(Ordering::Acquire);
    // SAFETY: a non-null pointer in REGISTRY came from `Box::into_raw` below and is
    // never freed (registries are leaked), so it is valid for 'static.
    if let Some(r) = unsafe { current.as_ref() } {
        if r.pid == pid {
            return r;
        }
    }
    let fresh = Box::into_raw(Box::new(Registry {
        pid,
        pools: Mutex::new(Vec::new()),
    }));
    match REGISTRY.compare_exchange(current, fresh, Ordering::AcqRel, Ordering::Acquire) {
        // SAFETY: `fresh` was just made by `Box::into_raw` and is never freed.
        Ok(_) => unsafe { &*fresh },
        Err(winner) => {
            // Another thread of this process installed one first: use it.
            // SAFETY: `fresh` was never shared; `winner` is a leaked registry.
            unsafe {
                drop(Box::from_raw(fresh));
                &*winner
            }
        }
    }
}

/// The thread count of work that asks for "all cores": `RAYON_NUM_THREADS` when it is
/// a positive number (the command line sets it for `--threads`), else the cores this
/// process may run on.
pub(crate) fn default_threads() -> usize {
    std::env::var("RAYON_NUM_THREADS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(cores)
}

/// The cores this process may run on, as `std::thread::available_parallelism` finds
/// them (its CPU affinity, capped by a cgroup's CPU quota), remembered while the
/// affinity's count of CPUs stays the same.
///
/// Why: the standard library reads the cgroup's files at every call (~15 system
/// calls, ~60 us on the 2-core VM), which doubled the time of an `encode_batch` of 8
/// short texts on the default threads (112 against 56 us a call); the affinity alone
/// is one system call (~1 us). A cgroup quota changed while the process runs is not
/// seen until the affinity changes too.
fn cores() -> usize {
    let found = || std::thread::available_parallelism().map_or(1, |n| n.get());
    #[cfg(target_os = "linux")]
    {
        use std::sync::atomic::AtomicU64;
        /// `affinity CPUs << 32 | cores` of the last look; 0 before the first.
        static LAST: AtomicU64 = AtomicU64::new(0);
        if let Some(cpus) = affinity_cpus() {
            let last = LAST.load(Ordering::Relaxed);
            if last != 0 && last >> 32 == cpus {
                return (last & u64::from(u32::MAX)) as usize;
            }
            let n = found().min(u32::MAX as usize);
            LAST.store(cpus << 32 | n as u64, Ordering::Relaxed);
            return n;
        }
    }
    found()
}

/// The number of CPUs in this process's affinity mask, or `None` where it cannot be
/// read (more CPUs than a `cpu_set_t` holds).
#[cfg(target_os = "linux")]
fn affinity_cpus() -> Option<u64> {
    // SAFETY: a zeroed `cpu_set_t` is an empty set; `sched_getaffinity` writes at
    // most the size it is given into it, and `CPU_COUNT` only reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return None;
        }
        u64::try_from(libc::CPU_COUNT(&set)).ok().filter(|&n| n > 0)
    }
}

/// The error for a thread that could not be started: its stack could not be mapped
/// (a memory limit) or the process may start no more threads.
pub(crate) fn no_thread() -> Error {
    // Rust's default stack for spawned threads.
    Error::out_of_memory::<u8>("a new thread's stack", 2 << 20)
}

/// Runs `work` on `threads` threads: `threads - 1` started here and the calling
/// thread. Where a thread cannot be started (a memory or thread limit), fewer run,
/// down to the calling thread alone: for work that takes its items from a shared
/// counter, where that only makes it slower. A panic in `work`, on any of the
/// threads, is an [`Error::Internal`] once all have ended.
pub(crate) fn on_threads<F: Fn() + Sync>(threads: usize, work: F) -> Result<()> {
    std::thread::scope(|s| {
        let started: Vec<_> = (1..threads)
            .map_while(|_| std::thread::Builder::new().spawn_scoped(s, &work).ok())
            .collect();
        let mut outcome = std::panic::catch_unwind(AssertUnwindSafe(&work))
            .map_err(|payload| Error::from_panic(payload.as_ref()));
        for handle in started {
            // Joined here, so that the scope does not raise the panic again.
            if let (Err(payload), Ok(())) = (handle.join(), &outcome) {
                outcome = Err(Error::from_panic(payload.as_ref()));
            }
        }
        outcome
    })
}

/// The process's pool of `num_threads` threads, started on first use.
fn pool_of(num_threads: usize) -> Result<Arc<rayon::ThreadPool>> {
    // A poisoned lock only means a thread panicked while looking a pool up; the list
    // itself is always whole.
    let mut pools = registry().pools.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, p)) = pools.iter().find(|(n, _)| *n == num_threads) {
        return Ok(p.clone());
    }
    // Starting threads makes small allocations that abort where they fail
    // ([`crate::hugemem::headroom`]).
    if !crate::hugemem::probe(crate::hugemem::headroom(num_threads)) {
        return Err(no_thread());
    }
    let p = rayon::ThreadPoolBuilder::new()
        .num_threads(num_threads)
        .build()
        .map_err(|_| no_thread())?;
    let p = Arc::new(p);
    pools.push((num_threads, p.clone()));
    Ok(p)
}

/// Runs `work` on a pool of `num_threads` threads (0: [`default_threads`]), inside
/// which rayon's parallel iterators run. Pools are kept per thread count, so calling
/// `encode_batch` in a loop starts no threads. A panic in `work` (on any of the
/// pool's threads) is an [`Error::Internal`].
pub(crate) fn run_in_pool<T: Send>(
    num_threads: usize,
    work: impl FnOnce() -> T + Send,
) -> Result<T> {
    let num_threads = match num_threads {
        0 => default_threads(),
        n => n,
    };
    let pool = pool_of(num_threads)?;
    std::panic::catch_unwind(AssertUnwindSafe(|| pool.install(work)))
        .map_err(|payload| Error::from_panic(payload.as_ref()))
}

/// Runs `work` on the calling thread with a scope whose spawned jobs run on a pool of
/// `helpers` threads: for work the calling thread shares with the pool's threads
/// instead of waiting for them. Returns once `work` and every job it spawned have
/// ended; a panic in any of them is an [`Error::Internal`].
#[cfg(any(feature = "python", test))]
pub(crate) fn in_place_scope<'scope, T>(
    helpers: usize,
    work: impl FnOnce(&rayon::Scope<'scope>) -> T,
) -> Result<T> {
    let pool = pool_of(helpers.max(1))?;
    std::panic::catch_unwind(AssertUnwindSafe(|| pool.in_place_scope(work)))
        .map_err(|payload| Error::from_panic(payload.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rayon::prelude::*;

    #[test]
    fn runs_on_the_asked_threads_and_reuses_pools() {
        let n = run_in_pool(3, rayon::current_num_threads).unwrap();
        assert_eq!(n, 3);
        let sum: u64 = run_in_pool(2, || (0..1000u64).into_par_iter().sum()).unwrap();
        assert_eq!(sum, 499_500);
        let a = registry().pools.lock().unwrap().len();
        run_in_pool(3, || ()).unwrap();
        assert_eq!(registry().pools.lock().unwrap().len(), a);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn cores_follow_the_affinity_as_the_standard_library_does() {
        let std_cores = || std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(cores(), std_cores());
        assert_eq!(cores(), std_cores(), "remembered");
        // On a thread of its own (the affinity is a thread's): one CPU, then all again.
        std::thread::spawn(move || {
            // SAFETY: a zeroed set is empty; the calls read and write only `set`.
            unsafe {
                let mut all: libc::cpu_set_t = std::mem::zeroed();
                let size = std::mem::size_of::<libc::cpu_set_t>();
                assert_eq!(libc::sched_getaffinity(0, size, &mut all), 0);
                let first = (0..libc::CPU_SETSIZE as usize)
                    .find(|&c| libc::CPU_ISSET(c, &all))
                    .unwrap();
                let mut one: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(first, &mut one);
                assert_eq!(libc::sched_setaffinity(0, size, &one), 0);
                assert_eq!(cores(), 1);
                assert_eq!(libc::sched_setaffinity(0, size, &all), 0);
                assert_eq!(cores(), std_cores());
            }
        })
        .join()
        .unwrap();
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_forked_child_gets_new_threads() {
        run_in_pool(2, || (0..64u32).into_par_iter().sum::<u32>()).unwrap();
        // SAFETY: the child only runs Rust code of this crate and leaves with _exit.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            let ok = matches!(
                run_in_pool(2, || (0..64u32).into_par_iter().sum::<u32>()),
                Ok(2016)
            );
            // SAFETY: ends the child without running the parent's destructors.
            unsafe { libc::_exit(if ok { 0 } else { 1 }) };
        }
        let mut status = 0;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            // SAFETY: waits for the child made above.
            let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
            if r == pid {
                break;
            }
            if std::time::Instant::now() > deadline {
                // SAFETY: kills the hung child made above.
                unsafe { libc::kill(pid, libc::SIGKILL) };
                panic!("the forked child hung in its first parallel job");
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    }

    #[test]
    fn a_panicking_worker_is_an_internal_error() {
        let calls = std::sync::atomic::AtomicUsize::new(0);
        let outcome = on_threads(3, || {
            if calls.fetch_add(1, Ordering::Relaxed) == 1 {
                panic!("worker {}", 1);
            }
        });
        assert!(
            matches!(&outcome, Err(Error::Internal(m)) if m == "a worker thread panicked: worker 1"),
            "{outcome:?}"
        );
        assert_eq!(calls.load(Ordering::Relaxed), 3);
        assert!(on_threads(2, || ()).is_ok());
        let outcome = run_in_pool(2, || -> u32 { panic!("in the pool") });
        assert!(
            matches!(&outcome, Err(Error::Internal(m)) if m.ends_with("in the pool")),
            "{outcome:?}"
        );
        // The pool still works.
        assert_eq!(run_in_pool(2, || 7).unwrap(), 7);
    }
}
