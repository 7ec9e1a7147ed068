//! Mapped input files that shrink while they are read: an error naming the file,
//! not a SIGBUS that kills the interpreter.
//!
//! Reading a page of a mapping that lies past the end of its file (another process
//! truncated it) raises SIGBUS, whose default action kills the process with no
//! message. Input is read by mmap because copying it with `read` would cost a copy
//! of every byte (counting runs at ~540 MB/s on 2 cores; a copy of 12 GB is seconds
//! more) and the page-cache tricks of `corpus::Source::release_behind`. So each
//! mapping is registered here while it is read, and a SIGBUS handler, for a fault
//! inside a registered mapping, maps fresh zero pages over the rest of it (the
//! faulting read then completes, reading zeros) and marks the mapping as faulted.
//! Readers check that mark between chunks and fail with "changed size while being
//! read"; a shrink that causes no fault (inside the last page) is caught by
//! comparing the file's size at the end. A fault outside every registered mapping
//! goes to the handler that was there before, or to the default action.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;

/// Mappings registered at once at most; beyond that a file is mapped unguarded.
/// (`corpus` opens at most 1,024 files a group; several jobs may run at once.)
const SLOTS: usize = 4096;

struct Slot {
    /// Start address, 0 while the slot is free or being filled.
    start: AtomicUsize,
    /// End address (exclusive), rounded up to a page.
    end: AtomicUsize,
    /// Claimed by a [`Guard`].
    taken: AtomicBool,
    /// A fault was handled inside the mapping.
    faulted: AtomicBool,
}

#[allow(clippy::declare_interior_mutable_const)]
const FREE: Slot = Slot {
    start: AtomicUsize::new(0),
    end: AtomicUsize::new(0),
    taken: AtomicBool::new(false),
    faulted: AtomicBool::new(false),
};

static SLOTS_TABLE: [Slot; SLOTS] = [FREE; SLOTS];

/// The mapping `ptr..ptr + len` registered while it lives.
#[derive(Debug)]
pub(crate) struct Guard {
    slot: usize,
}

impl Guard {
    /// Registers the mapping at `ptr` of `len` bytes (page-aligned, as `mmap` returns
    /// it); `None` where no slot is free or no handler could be installed.
    pub(crate) fn new(ptr: *const u8, len: usize) -> Option<Self> {
        if !install() || len == 0 {
            return None;
        }
        let page = page_size();
        let start = ptr as usize;
        let end = start.checked_add(len)?.checked_next_multiple_of(page)?;
        let slot = SLOTS_TABLE.iter().position(|s| {
            s.taken
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        })?;
        let s = &SLOTS_TABLE[slot];
        s.faulted.store(false, Ordering::Relaxed);
        s.end.store(end, Ordering::Relaxed);
        // Published last: the handler reads `start` first.
        s.start.store(start, Ordering::Release);
        Some(Self { slot })
    }

    /// Whether a read past the file's end was turned into zeros in this mapping.
    pub(crate) fn faulted(&self) -> bool {
        SLOTS_TABLE[self.slot].faulted.load(Ordering::Acquire)
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let s = &SLOTS_TABLE[self.slot];
        s.start.store(0, Ordering::Release);
        s.taken.store(false, Ordering::Release);
    }
}

fn page_size() -> usize {
    static PAGE: OnceLock<usize> = OnceLock::new();
    *PAGE.get_or_init(|| {
        #[cfg(unix)]
        // SAFETY: sysconf has no preconditions.
        let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        #[cfg(not(unix))]
        let n = 4096;
        usize::try_from(n).ok().filter(|&n| n > 0).unwrap_or(4096)
    })
}

#[cfg(target_os = "linux")]
mod handler {
    use super::*;
    use std::sync::Mutex;

    /// The action that was in place before this module's, called for faults that
    /// are not ours. Written under [`INSTALL`] before the handler is installed.
    static mut PREVIOUS: Option<libc::sigaction> = None;
    static INSTALL: Mutex<()> = Mutex::new(());

    extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
        // SAFETY: the kernel passes a valid siginfo for an SA_SIGINFO handler.
        let addr = unsafe { (*info).si_addr() } as usize;
        let page = page_size();
        for s in &SLOTS_TABLE {
            let start = s.start.load(Ordering::Acquire);
            if start == 0 || addr < start {
                continue;
            }
            let end = s.end.load(Ordering::Relaxed);
            if addr >= end {
                continue;
            }
            let from = addr / page * page;
            // SAFETY: `from..end` lies inside a mapping registered by its owner, who
            // unregisters it before unmapping; replacing its pages with zero pages
            // changes what the reader sees, never memory anyone else owns. mmap is
            // a plain system call, safe in a signal handler.
            let r = unsafe {
                libc::mmap(
                    from as *mut libc::c_void,
                    end - from,
                    libc::PROT_READ,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                    -1,
                    0,
                )
            };
            if r != libc::MAP_FAILED {
                s.faulted.store(true, Ordering::Release);
                return;
            }
            break;
        }
        // Not ours (or no zero pages could be mapped): what was there before.
        // SAFETY: PREVIOUS was written before this handler was installed.
        let previous = unsafe { *std::ptr::addr_of!(PREVIOUS) };
        match previous {
            Some(p) if p.sa_sigaction != libc::SIG_DFL && p.sa_sigaction != libc::SIG_IGN => {
                if p.sa_flags & libc::SA_SIGINFO != 0 {
                    // SAFETY: the previous handler was installed with SA_SIGINFO.
                    let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                        unsafe { std::mem::transmute(p.sa_sigaction) };
                    f(sig, info, ctx);
                } else {
                    // SAFETY: a plain handler, as installed without SA_SIGINFO.
                    let f: extern "C" fn(libc::c_int) =
                        unsafe { std::mem::transmute(p.sa_sigaction) };
                    f(sig);
                }
            }
            _ => {
                // The default action: returning re-runs the faulting read, which
                // faults again and now kills the process as it would have.
                // SAFETY: resetting a signal's action is async-signal-safe.
                unsafe { libc::signal(sig, libc::SIG_DFL) };
            }
        }
    }

    /// Installs the handler unless it is the current one (another library, such as
    /// Python's faulthandler, may have put its own in since); true if it is in place.
    pub(crate) fn install() -> bool {
        let _lock = INSTALL.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: plain sigaction calls with valid, zero-initialised structs.
        unsafe {
            let mut current: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut current) != 0 {
                return false;
            }
            let ours = on_sigbus as *const () as libc::sighandler_t;
            if current.sa_sigaction == ours {
                return true;
            }
            *std::ptr::addr_of_mut!(PREVIOUS) = Some(current);
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = ours;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_NODEFER;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut()) == 0
        }
    }
}

#[cfg(target_os = "linux")]
use handler::install;

#[cfg(not(target_os = "linux"))]
fn install() -> bool {
    false
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_read_past_a_truncated_end_reads_zeros_and_is_marked() {
        let path = std::env::temp_dir().join(format!("bpekit-mapguard-{}", std::process::id()));
        let page = page_size();
        std::fs::write(&path, vec![b'a'; page * 4]).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        // SAFETY: the test truncates the file on purpose; the guard handles it.
        let map = unsafe { memmap2::Mmap::map(&file) }.unwrap();
        let guard = Guard::new(map.as_ptr(), map.len()).unwrap();
        assert_eq!(map[page * 3], b'a');
        assert!(!guard.faulted());
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(page as u64)
            .unwrap();
        // Past the new end: a SIGBUS without the guard.
        let tail: Vec<u8> = map[page * 2..].to_vec();
        assert!(tail.iter().all(|&b| b == 0));
        assert!(guard.faulted());
        assert_eq!(map[0], b'a');
        drop(guard);
        drop(map);
        std::fs::remove_file(&path).unwrap();
    }
}
