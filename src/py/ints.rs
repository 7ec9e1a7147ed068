//! Lists of token ids for Python: each encoder keeps the Python `int` of each id it has
//! put in a list, so that a list is filled with new references to them (a pointer
//! store and a reference count), not new objects.
//!
//! Why: making an `int` per id (`PyLong_FromUnsignedLong`, and freeing it with the
//! list) took ~37 ns an id, 70% of a per-document `encode` of en-small with GPT-2
//! (`benchmarks/peers_compare.py`); a reference to a kept `int` takes a few. The ints
//! are made the first time an id is listed and kept for the encoder's life: an encoder
//! used only for arrays makes none, and one used for lists holds the ints of the ids
//! its texts use (32 bytes each) in a table of 16 bytes a slot (o200k: 200,019 slots,
//! 3.2 MB, made on the first list).

use std::sync::OnceLock;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyList;

/// Ids past this get a new `int` each time instead of a slot (a vocabulary this large
/// is unusual; the table would take 16 bytes an id of it up front).
const MAX_SLOTS: usize = 1 << 22;

/// The kept `int`s of an encoder's ids, by id; made with the first list.
#[derive(Default)]
pub(super) struct IdInts {
    slots: OnceLock<Box<[OnceLock<Py<PyAny>>]>>,
    /// Ids below this have a slot (the encoder's id limit, up to [`MAX_SLOTS`]).
    limit: usize,
}

impl IdInts {
    /// A table for the ids below `id_limit`.
    pub(super) fn new(id_limit: usize) -> Self {
        Self {
            slots: OnceLock::new(),
            limit: id_limit.min(MAX_SLOTS),
        }
    }

    /// The slots, made on first use; none where they cannot be allocated (every id then
    /// gets a new `int`, as without a table).
    fn slots(&self) -> &[OnceLock<Py<PyAny>>] {
        self.slots.get_or_init(|| {
            let mut v = Vec::new();
            if v.try_reserve_exact(self.limit).is_err() {
                return Box::default();
            }
            v.resize_with(self.limit, OnceLock::new);
            v.into_boxed_slice()
        })
    }

    /// A new reference to the `int` of `id`, or NULL with a Python error set.
    #[inline]
    fn int_of(py: Python<'_>, slots: &[OnceLock<Py<PyAny>>], id: u32) -> *mut ffi::PyObject {
        let Some(slot) = slots.get(id as usize) else {
            // SAFETY: a plain CPython call with the GIL held.
            return unsafe { ffi::PyLong_FromUnsignedLong(std::ffi::c_ulong::from(id)) };
        };
        if let Some(int) = slot.get() {
            return int.clone_ref(py).into_ptr();
        }
        // SAFETY: a plain CPython call with the GIL held; NULL is passed on.
        let made = unsafe { ffi::PyLong_FromUnsignedLong(std::ffi::c_ulong::from(id)) };
        if made.is_null() {
            return made;
        }
        // SAFETY: `made` is a new, non-NULL reference, which the `Py` takes over.
        let int: Py<PyAny> = unsafe { Bound::from_owned_ptr(py, made) }.unbind();
        // Another thread may have set it meanwhile (free-threaded Python): either int
        // is the same number.
        let int = match slot.set(int) {
            Ok(()) => slot.get(),
            Err(_) => slot.get(),
        };
        int.map_or(std::ptr::null_mut(), |i| i.clone_ref(py).into_ptr())
    }

    /// `ids` as a Python list of the kept ints ([`id_list`]).
    pub(super) fn list<'py>(&self, py: Python<'py>, ids: &[u32]) -> PyResult<Bound<'py, PyList>> {
        fill_list(py, ids, self.slots())
    }
}

/// `ids` as a Python list of new ints, for lists made without an encoder's table.
pub(super) fn id_list<'py>(py: Python<'py>, ids: &[u32]) -> PyResult<Bound<'py, PyList>> {
    fill_list(py, ids, &[])
}

/// `ids` as a Python list, each id's int from `slots` where it has one, or
/// `MemoryError` where the list cannot be made. PyO3's own conversion panics when
/// `PyList_New` fails, and with memory gone the panic's message then aborts the
/// process.
fn fill_list<'py>(
    py: Python<'py>,
    ids: &[u32],
    slots: &[OnceLock<Py<PyAny>>],
) -> PyResult<Bound<'py, PyList>> {
    let len = ffi::Py_ssize_t::try_from(ids.len())
        .map_err(|_| pyo3::exceptions::PyMemoryError::new_err("too many token ids for a list"))?;
    // SAFETY: plain CPython calls with the GIL held; every pointer is checked before
    // use, each item's new reference moves into the list, and a list whose items are
    // not all set yet is freed safely (its free function skips NULL items).
    unsafe {
        let list = Bound::from_owned_ptr_or_err(py, ffi::PyList_New(len))?;
        for (i, &id) in ids.iter().enumerate() {
            let item = IdInts::int_of(py, slots, id);
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
