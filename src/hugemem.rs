//! Large zeroed tables, optionally in huge pages.
//!
//! The counter's piece table is tens of MB read at random, one line per piece, and
//! filled from scratch for each text: with 4 KiB pages nearly every lookup of a rare
//! piece also misses the TLB, and filling the table faults once per 4 KiB. Memory
//! that is 2 MiB aligned and advised before its first write gets huge pages where
//! the kernel allows them (a `Vec` or `Box<[T]>` can neither over-align nor advise
//! in time). The encoder's short table is in huge pages too (`encode/short.rs`); its
//! output buffers are not (`encode::encoder::output_buffer`).

use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::ptr::NonNull;

/// A huge page on x86-64: 2 MiB.
pub(crate) const HUGE_PAGE: usize = 2 << 20;

/// Types for which all-zero bytes are a valid value.
///
/// # Safety
/// Implementors guarantee that a value whose bytes are all zero is valid.
pub unsafe trait Zeroable: Copy {}

// SAFETY: integers and tuples of them are valid as zeros (padding included).
unsafe impl Zeroable for (u128, u64) {}
// SAFETY: any bit pattern is a valid `u64`.
unsafe impl Zeroable for u64 {}

/// Asks the kernel to back the whole 2 MiB pages inside `ptr..ptr + len` with huge
/// pages. Only a hint; where huge pages are off, nothing changes. Call it before the
/// memory is first written.
fn advise_huge_pages(ptr: *mut u8, len: usize) {
    #[cfg(target_os = "linux")]
    {
        let start = (ptr as usize).next_multiple_of(HUGE_PAGE);
        let end = (ptr as usize + len) / HUGE_PAGE * HUGE_PAGE;
        if end > start {
            // SAFETY: the range lies inside memory the caller owns; madvise with
            // MADV_HUGEPAGE changes no contents.
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (ptr, len);
}

/// Whether `bytes` more memory could be had now: maps that much address space
/// (untouched, so no page is made) and unmaps it again.
///
/// For work that makes many small allocations sized by its input, which cannot
/// each be made fallible (building a vocabulary of 200K tokens; Python's objects
/// turned into Rust ones). Under a memory limit (`RLIMIT_AS`, strict overcommit) such
/// work then fails here, as an error, instead of aborting the process partway.
pub(crate) fn probe(bytes: usize) -> bool {
    match map_anonymous(bytes) {
        Some(p) => {
            // SAFETY: `p..p + bytes` is the mapping just made, untouched and unshared.
            #[cfg(unix)]
            unsafe {
                libc::munmap(p as *mut libc::c_void, bytes)
            };
            true
        }
        None => bytes == 0 || !cfg!(unix),
    }
}

/// Address space a threaded job needs before it holds anything of its input: its
/// threads' stacks (2 MiB each), their first tables and buffers, and the small
/// allocations that cannot each fail softly (a thread's local storage, a result
/// list). Under a memory limit with less room than this (`RLIMIT_AS` a few MB above
/// what the process holds), those small allocations failed at random places and
/// aborted the process ("memory allocation of 13 bytes failed"; glibc's "failed to
/// register TLS destructor"), depending on what free room the heap happened to have.
pub(crate) fn headroom(threads: usize) -> usize {
    (16 << 20) + threads.max(1).saturating_mul(4 << 20)
}

/// A fresh private, anonymous, read-write mapping of `len` bytes (its address), or
/// `None` where it cannot be had (or on platforms without `mmap`).
fn map_anonymous(len: usize) -> Option<usize> {
    #[cfg(unix)]
    {
        if len == 0 {
            return None;
        }
        // SAFETY: a new anonymous private mapping; no existing memory is affected.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        (p != libc::MAP_FAILED).then_some(p as usize)
    }
    #[cfg(not(unix))]
    {
        let _ = len;
        None
    }
}

/// `n` zeroed `u32`s from the allocator (fresh pages, untouched until used), or
/// `None` where they cannot be had.
pub(crate) fn try_zeroed_u32s(n: usize) -> Option<Box<[u32]>> {
    if n == 0 {
        return Some(Box::new([]));
    }
    let layout = Layout::array::<u32>(n).ok()?;
    // SAFETY: the layout's size is non-zero.
    let raw = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<u32>();
    if raw.is_null() {
        return None;
    }
    // SAFETY: `raw` holds `n` zeroed `u32`s allocated with the global allocator in
    // the layout a `Box<[u32]>` of `n` items uses.
    Some(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(raw, n)) })
}

/// The smallest page size, which `mmap` lengths are rounded up to.
const PAGE: usize = 4096;

/// Faults in `len` bytes at `addr` for writing, in one system call; false where the
/// kernel cannot (before Linux 5.14, or not Linux). The caller owns the range.
pub(crate) fn populate_write(addr: usize, len: usize) -> bool {
    #[cfg(target_os = "linux")]
    {
        const MADV_POPULATE_WRITE: libc::c_int = 23;
        // SAFETY: the range lies inside memory the caller owns; populating changes no
        // contents.
        unsafe { libc::madvise(addr as *mut libc::c_void, len, MADV_POPULATE_WRITE) == 0 }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (addr, len);
        false
    }
}

/// `size` bytes of fresh zero pages, 2 MiB aligned (`None` where `mmap` is missing or
/// fails: the caller falls back to the allocator). Free with [`unmap`].
fn map_zeroed(size: usize) -> Option<NonNull<u8>> {
    #[cfg(unix)]
    {
        let len = size.next_multiple_of(PAGE);
        // Over-map by a huge page, then trim to an aligned start.
        let span = len.checked_add(HUGE_PAGE)?;
        let base = map_anonymous(span)?;
        let start = base.next_multiple_of(HUGE_PAGE);
        // SAFETY: both ranges lie inside the mapping just made and outside `start..start
        // + len`, which is kept.
        unsafe {
            if start > base {
                libc::munmap(base as *mut libc::c_void, start - base);
            }
            let tail = base + span - (start + len);
            if tail > 0 {
                libc::munmap((start + len) as *mut libc::c_void, tail);
            }
        }
        NonNull::new(start as *mut u8)
    }
    #[cfg(not(unix))]
    {
        let _ = size;
        None
    }
}

/// Unmaps what [`map_zeroed`] returned for `size`.
fn unmap(ptr: NonNull<u8>, size: usize) {
    #[cfg(unix)]
    // SAFETY: `ptr..ptr + size` (rounded up to pages) is exactly one mapping made by
    // `map_zeroed`, and its owner is gone.
    unsafe {
        libc::munmap(ptr.as_ptr().cast(), size.next_multiple_of(PAGE));
    }
    #[cfg(not(unix))]
    let _ = (ptr, size);
}

/// An empty `Vec` with room for `capacity` values, its whole 2 MiB pages advised
/// into huge pages: for large arrays filled once, where faulting in 4 KiB pages cost
/// more than the filling (counting's word arrays: one fault per ~500 words).
pub(crate) fn huge_vec<T>(capacity: usize) -> Vec<T> {
    let v: Vec<T> = Vec::with_capacity(capacity);
    advise_huge_pages(
        v.as_ptr().cast_mut().cast(),
        v.capacity() * std::mem::size_of::<T>(),
    );
    v
}

/// A fixed-length, zero-initialised buffer of `T`: 64-byte aligned, and 2 MiB
/// aligned and advised into huge pages once it is that large.
pub(crate) struct ZeroedBuf<T: Zeroable> {
    ptr: NonNull<T>,
    len: usize,
    /// Mapped by [`map_zeroed`] (unmapped on drop) rather than from the allocator.
    mapped: bool,
}

// SAFETY: `ZeroedBuf` owns its allocation exclusively, like a `Box<[T]>`.
unsafe impl<T: Zeroable + Send> Send for ZeroedBuf<T> {}
// SAFETY: through `&ZeroedBuf` its own methods only read. A short-cache store also
// writes lines through `as_ptr` while shared, which its `line` module makes sound:
// writers claim a slot atomically and publish it with one store, and no shared
// table is read through `as_slice`.
unsafe impl<T: Zeroable + Sync> Sync for ZeroedBuf<T> {}

impl<T: Zeroable> ZeroedBuf<T> {
    fn layout(len: usize) -> Layout {
        let size = Self::bytes(len);
        let align = if size >= HUGE_PAGE { HUGE_PAGE } else { 64 };
        let align = align.max(std::mem::align_of::<T>());
        Layout::from_size_align(size, align)
            .unwrap_or_else(|_| handle_alloc_error(Layout::new::<T>()))
    }

    fn bytes(len: usize) -> usize {
        len.max(1) * std::mem::size_of::<T>().max(1)
    }

    /// `len` zeroed values, in huge pages where the kernel allows: fewer, larger page
    /// faults and fewer TLB misses for tables read at random (counting: 385 -> 430
    /// MB/s on en-small; the encoder's short table on en: ~360 -> ~380).
    ///
    /// Buffers of a huge page or more are mapped fresh, so their pages are zeroed once,
    /// by the kernel, when first touched. The allocator's zeroed memory is zeroed twice
    /// (the kernel's fault, then a memset that touches every page at once): made that
    /// way, the encoder's 32 MB short table took 10-85 ms, on one thread, before a
    /// 2-thread encode of the 116 MB English corpus could start.
    pub(crate) fn huge(len: usize) -> Self {
        Self::try_huge(len).unwrap_or_else(|| handle_alloc_error(Layout::new::<T>()))
    }

    /// [`ZeroedBuf::huge`], or `None` where the memory cannot be had (a memory limit,
    /// or a size past the address space): for sizes that come from the input.
    pub(crate) fn try_huge(len: usize) -> Option<Self> {
        let size = len.max(1).checked_mul(std::mem::size_of::<T>().max(1))?;
        if size > isize::MAX as usize / 2 {
            return None;
        }
        if size >= HUGE_PAGE {
            if let Some(raw) = map_zeroed(size) {
                // Before the first write, so the pages are huge from the first fault.
                advise_huge_pages(raw.as_ptr(), size);
                return Some(Self {
                    ptr: raw.cast(),
                    len,
                    mapped: true,
                });
            }
        }
        let layout = Self::layout(len);
        // SAFETY: the layout's size is non-zero.
        let raw = unsafe { alloc(layout) };
        let ptr = NonNull::new(raw.cast::<T>())?;
        advise_huge_pages(raw, layout.size());
        // SAFETY: `raw` points to `layout.size()` writable bytes, and all zeros is a
        // valid `T` (`Zeroable`).
        unsafe { std::ptr::write_bytes(raw, 0, layout.size()) };
        Some(Self {
            ptr,
            len,
            mapped: false,
        })
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub(crate) fn as_ptr(&self) -> *const T {
        self.ptr.as_ptr()
    }

    #[inline]
    pub(crate) fn as_slice(&self) -> &[T] {
        // SAFETY: `ptr` holds `len` initialised values for the life of `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// How many [`Self::populate_block`] calls fault in the whole buffer: its 2 MiB
    /// blocks where it was mapped fresh, else 0 (the allocator's memory was zeroed by
    /// a memset, so it is in already).
    pub(crate) fn blocks(&self) -> usize {
        match self.mapped {
            true => Self::bytes(self.len).div_ceil(HUGE_PAGE),
            false => 0,
        }
    }

    /// Faults in block `i` (of [`Self::blocks`]) for writing; false where the kernel
    /// cannot, or `i` is out of range.
    pub(crate) fn populate_block(&self, i: usize) -> bool {
        let size = Self::bytes(self.len).next_multiple_of(PAGE);
        let from = i.saturating_mul(HUGE_PAGE);
        if !self.mapped || from >= size {
            return false;
        }
        populate_write(
            self.ptr.as_ptr() as usize + from,
            HUGE_PAGE.min(size - from),
        )
    }

    #[inline]
    pub(crate) fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: as above, and `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Zeroable> Drop for ZeroedBuf<T> {
    fn drop(&mut self) {
        if self.mapped {
            unmap(self.ptr.cast(), Self::bytes(self.len));
        } else {
            // SAFETY: allocated in `huge` with this layout.
            unsafe { dealloc(self.ptr.as_ptr().cast(), Self::layout(self.len)) };
        }
    }
}

impl<T: Zeroable> std::fmt::Debug for ZeroedBuf<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ZeroedBuf({})", self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeroed_and_aligned() {
        for len in [1, 3, 1 << 17, 3 << 16, (5 << 20) / 32 + 1] {
            let mut b = ZeroedBuf::<(u128, u64)>::huge(len);
            assert_eq!(b.len(), len);
            assert!(b.as_slice().iter().all(|&(k, v)| k == 0 && v == 0));
            assert_eq!(b.as_ptr() as usize % 64, 0);
            if len * 32 >= HUGE_PAGE {
                assert_eq!(b.as_ptr() as usize % HUGE_PAGE, 0);
            }
            b.as_mut_slice()[len - 1] = (7, 8);
            assert_eq!(b.as_slice()[len - 1], (7, 8));
        }
    }

    #[test]
    fn populating_blocks_keeps_contents() {
        let len = (5 << 20) / 32 + 1;
        let mut b = ZeroedBuf::<(u128, u64)>::huge(len);
        b.as_mut_slice()[len - 1] = (7, 8);
        assert_eq!(b.blocks(), 3);
        if cfg!(target_os = "linux") {
            // A kernel without MADV_POPULATE_WRITE (before 5.14) answers false.
            let populated: Vec<bool> = (0..3).map(|i| b.populate_block(i)).collect();
            assert!(populated.iter().all(|&p| p == populated[0]));
        }
        assert!(!b.populate_block(3));
        assert!(b.as_slice()[..len - 1]
            .iter()
            .all(|&(k, v)| k == 0 && v == 0));
        assert_eq!(b.as_slice()[len - 1], (7, 8));
        // Memory from the allocator (under a huge page) has no blocks to populate.
        let small = ZeroedBuf::<u64>::huge(10);
        assert_eq!(small.blocks(), 0);
        assert!(!small.populate_block(0));
    }
}
