//! Lists of token ids for Python, filled with pointers to ints that live as long as
//! the process: no new object, and no reference count touched, per id.
//!
//! Why: making an `int` per id (`PyLong_FromUnsignedLong`, and freeing it with the
//! list) took ~37 ns an id, 70% of a per-document `encode` of en-small with GPT-2
//! (`benchmarks/peers_compare.py`). A table of each encoder's ints, with a new
//! reference per id, still left list filling at a third of a warm per-document
//! `encode` of en-small with OLMo 2 (perf): two thirds of it waiting to add to the
//! int's reference count, a line the table's load had to find first. Now id `i`'s
//! int is at a fixed place in the chunk of 4,096 ints that holds it, and is
//! *immortal* as CPython 3.12 defines it (3.11 has no such notion: its count starts
//! at 2^62, which the list's decrements never bring to zero), so a list gets the
//! pointer alone.
//!
//! A chunk is made, whole, the first time one of its ids is listed: 4,096 ints of 32
//! bytes (128 KB), copied from the ints CPython makes, kept for the process's life,
//! and shared by every encoder (a vocabulary of 200,019 ids, o200k's, is 49 chunks:
//! 6.3 MB at most). This reads CPython 3.11-3.13's object layout (64-bit, with the
//! GIL, 30-bit digits, as the interpreter being built for and the first chunk say).
//! Elsewhere every id gets a new `int`: 3.14 tags the interpreter stack's references
//! by a flag in the count's word and reads them apart from the count, which copies
//! would have to follow; PyPy, GraalPy, the limited API and free-threaded builds lay
//! objects out otherwise.

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyList;

/// Ids below this have a kept int: every id a vocabulary may have.
const KEPT_IDS: usize = crate::ids::MAX_IDS + 1;

/// `ids` as a Python list of ints, or `MemoryError` where the list cannot be made.
/// PyO3's own conversion panics when `PyList_New` fails, and with memory gone the
/// panic's message then aborts the process.
pub(super) fn id_list<'py>(py: Python<'py>, ids: &[u32]) -> PyResult<Bound<'py, PyList>> {
    let len = ffi::Py_ssize_t::try_from(ids.len())
        .map_err(|_| pyo3::exceptions::PyMemoryError::new_err("too many token ids for a list"))?;
    // SAFETY: plain CPython calls with the GIL held; every pointer is checked before
    // use, each item is a reference the list may own (see `kept::int_of`), and a list
    // whose items are not all set yet is freed safely (its free function skips NULL
    // items).
    unsafe {
        let list = Bound::from_owned_ptr_or_err(py, ffi::PyList_New(len))?;
        for (i, &id) in ids.iter().enumerate() {
            let item = kept::int_of(py, id);
            if item.is_null() {
                return Err(PyErr::fetch(py));
            }
            ffi::PyList_SET_ITEM(list.as_ptr(), i as ffi::Py_ssize_t, item);
        }
        // A list of ints can be in no reference cycle, so the cyclic collector need
        // never visit it: tracked, every collection walked each id of every list kept
        // (~25% of per-document encoding of the ml corpus into kept lists, perf). Like
        // a tuple of ints, which CPython untracks itself; a list later made part of a
        // cycle is freed once the cycle is broken by hand.
        ffi::PyObject_GC_UnTrack(list.as_ptr().cast());
        Ok(list.cast_into_unchecked())
    }
}

/// A new reference to a new `int` of `id`, or NULL with a Python error set.
fn new_int(id: u32) -> *mut ffi::PyObject {
    // SAFETY: a plain CPython call; callers hold the GIL.
    unsafe { ffi::PyLong_FromUnsignedLong(std::ffi::c_ulong::from(id)) }
}

#[cfg(kept_ints)]
mod kept {
    use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

    use pyo3::ffi;
    use pyo3::Python;

    use crate::py::ints::{new_int, KEPT_IDS};

    /// Ints per chunk, as a shift.
    const CHUNK_BITS: u32 = 12;
    const CHUNK: usize = 1 << CHUNK_BITS;

    /// The room of one int: an id is one 30-bit digit after the object's header (24
    /// bytes, then 4), as each chunk's making checks.
    #[repr(C, align(32))]
    struct Room([u8; 32]);

    /// The reference count of a kept int: CPython's own for an immortal object on 3.12
    /// and 3.13 (increments and decrements leave it as it is), and on 3.11 a count
    /// that the decrements of 4.6e18 freed list items would not bring to zero.
    #[cfg(not(Py_3_12))]
    const IMMORTAL: isize = 1 << 62;
    #[cfg(Py_3_12)]
    const IMMORTAL: isize = u32::MAX as isize;

    /// Set once an int did not fit a room (a build with other digits, say): no chunk
    /// is made again, and every id gets a new `int`.
    static UNFIT: AtomicBool = AtomicBool::new(false);

    /// The chunks made, by chunk number (null: not made yet, or could not be).
    static CHUNKS: [AtomicPtr<Room>; KEPT_IDS >> CHUNK_BITS] =
        [const { AtomicPtr::new(std::ptr::null_mut()) }; KEPT_IDS >> CHUNK_BITS];

    /// A reference the list may own to the int of `id`: the kept int's pointer (its
    /// count is not raised: it is immortal), or a new int's; NULL with a Python
    /// error set where neither can be made.
    #[inline(always)]
    pub(super) fn int_of(py: Python<'_>, id: u32) -> *mut ffi::PyObject {
        let id = id as usize;
        let Some(slot) = CHUNKS.get(id >> CHUNK_BITS) else {
            return new_int(id as u32);
        };
        let mut chunk = slot.load(Ordering::Acquire);
        if chunk.is_null() {
            if UNFIT.load(Ordering::Relaxed) {
                return new_int(id as u32);
            }
            chunk = make(py, id >> CHUNK_BITS);
            if chunk.is_null() {
                return new_int(id as u32);
            }
        }
        // SAFETY: a made chunk holds `CHUNK` rooms and is never freed.
        unsafe { chunk.add(id & (CHUNK - 1)).cast() }
    }

    /// Makes chunk `c` and records it; null where it cannot be made (no memory, or an
    /// int that does not fit its room), with no Python error left set.
    #[cold]
    #[inline(never)]
    fn make(_py: Python<'_>, c: usize) -> *mut Room {
        let mut rooms: Vec<Room> = Vec::new();
        if rooms.try_reserve_exact(CHUNK).is_err() {
            return std::ptr::null_mut();
        }
        for k in 0..CHUNK {
            let id = (c << CHUNK_BITS | k) as u32;
            let made = new_int(id);
            if made.is_null() {
                // SAFETY: the GIL is held (`_py`); the error is dropped, as the caller
                // makes the int the other way.
                unsafe { ffi::PyErr_Clear() };
                return std::ptr::null_mut();
            }
            let mut room = Room([0; 32]);
            // SAFETY: `made` is a live int (the GIL is held), whose type gives its
            // size. With 30-bit digits (4 bytes an item) an id below 2^30 is the header
            // and one digit, and those bytes are copied into the room where they fit;
            // the reference is released either way.
            let fits = unsafe {
                let ty = ffi::Py_TYPE(made);
                let size = (*ty).tp_basicsize + (*ty).tp_itemsize;
                let fits = (*ty).tp_itemsize == 4
                    && usize::try_from(size).is_ok_and(|s| s <= room.0.len());
                if fits {
                    let n = size as usize;
                    std::ptr::copy_nonoverlapping(made.cast::<u8>(), room.0.as_mut_ptr(), n);
                }
                ffi::Py_DECREF(made);
                fits
            };
            if !fits {
                UNFIT.store(true, Ordering::Relaxed);
                return std::ptr::null_mut();
            }
            // The count is the header's first word in every build this module is for.
            room.0[..8].copy_from_slice(&IMMORTAL.to_ne_bytes());
            rooms.push(room);
        }
        let chunk = Box::into_raw(rooms.into_boxed_slice()).cast::<Room>();
        // Only a thread holding the GIL makes a chunk, so no other has made this one
        // meanwhile; Release publishes its ints to `int_of`'s Acquire.
        CHUNKS[c].store(chunk, Ordering::Release);
        chunk
    }
}

#[cfg(not(kept_ints))]
mod kept {
    use pyo3::ffi;
    use pyo3::Python;

    /// A new int of `id`: this interpreter's object layout is not read here.
    #[inline(always)]
    pub(super) fn int_of(_py: Python<'_>, id: u32) -> *mut ffi::PyObject {
        crate::py::ints::new_int(id)
    }
}

/// `list` itself, untracked by the cyclic collector as the id lists are, where it is a
/// plain list (a subclass's instance may hold more in its `__dict__`) and each of its
/// items is an `int` (else as it is): the masks and token types that transformers'
/// fast tokenizers read, a list of each per text, and ids with a template's around
/// them. Tracked, each collection walked every item of those kept: with them
/// untracked, a patched tokenizer's call over en-small took ~0.3 s where it took
/// ~0.45 s (cProfile).
#[pyfunction]
fn _untracked(list: Bound<'_, PyList>) -> Bound<'_, PyList> {
    // SAFETY: reads of a list's items with the GIL held; the list cannot change while
    // this runs, and untracking an object the collector does not track does nothing.
    unsafe {
        if ffi::PyList_CheckExact(list.as_ptr()) == 0 {
            return list;
        }
        let n = ffi::PyList_GET_SIZE(list.as_ptr());
        for i in 0..n {
            if ffi::PyLong_CheckExact(ffi::PyList_GET_ITEM(list.as_ptr(), i)) == 0 {
                return list;
            }
        }
        ffi::PyObject_GC_UnTrack(list.as_ptr().cast());
    }
    list
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_untracked, m)?)
}
