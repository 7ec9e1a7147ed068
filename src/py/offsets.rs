//! Offsets for Python: each id's `(start, end)` in characters, as a list of tuples or
//! an `(n, 2)` array.
//!
//! Why the list is made by hand: a token's start is most often the previous token's
//! end, so that `int` is shared rather than made again (one new `int` and one tuple a
//! token instead of two and one), and the tuples are untracked by the cyclic garbage
//! collector, as CPython itself untracks tuples of ints when it first meets them.

use numpy::{IntoPyArray, PyArray2};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::encode::{Span, Trim};

/// `trim` as the bindings take it: `(add_prefix_space, index of the text's first id)`.
pub(super) fn trim_of(trim: Option<(bool, usize)>) -> Option<Trim> {
    trim.map(|(prefix_space, first_index)| Trim {
        prefix_space,
        first_index,
    })
}

/// `spans` as a list of `(start, end)` tuples, or `MemoryError`.
pub(super) fn offsets_list<'py>(py: Python<'py>, spans: &[Span]) -> PyResult<Bound<'py, PyList>> {
    let len = ffi::Py_ssize_t::try_from(spans.len())
        .map_err(|_| pyo3::exceptions::PyMemoryError::new_err("too many offsets for a list"))?;
    // SAFETY: plain CPython calls with the GIL held; every pointer is checked before
    // use, and each new reference moves into its tuple, each tuple into the list. The
    // shared end `int` is borrowed from a tuple the list holds, so it lives while it
    // is given out again. A list or tuple freed with NULL items skips them.
    unsafe {
        let list = Bound::from_owned_ptr_or_err(py, ffi::PyList_New(len))?;
        let mut last: (usize, *mut ffi::PyObject) = (0, std::ptr::null_mut());
        for (i, &[start, end]) in spans.iter().enumerate() {
            let tuple = ffi::PyTuple_New(2);
            if tuple.is_null() {
                return Err(PyErr::fetch(py));
            }
            ffi::PyList_SET_ITEM(list.as_ptr(), i as ffi::Py_ssize_t, tuple);
            let first = if !last.1.is_null() && last.0 == start {
                ffi::Py_INCREF(last.1);
                last.1
            } else {
                ffi::PyLong_FromSize_t(start)
            };
            if first.is_null() {
                return Err(PyErr::fetch(py));
            }
            ffi::PyTuple_SET_ITEM(tuple, 0, first);
            let second = if end == start {
                ffi::Py_INCREF(first);
                first
            } else {
                ffi::PyLong_FromSize_t(end)
            };
            if second.is_null() {
                return Err(PyErr::fetch(py));
            }
            ffi::PyTuple_SET_ITEM(tuple, 1, second);
            // A tuple of ints holds no cycle: untracked, the collector's passes
            // (one per 700 new tuples) find nothing of these to traverse.
            ffi::PyObject_GC_UnTrack(tuple.cast());
            last = (end, second);
        }
        Ok(list.cast_into_unchecked())
    }
}

/// `spans` as an `(n, 2)` array of `uint64` (`usize`, the same on the 64-bit
/// platforms built for), over the vector itself: no copy, and one array object (a flat
/// array reshaped was two, ~1 us each: a tenth of a 2 KB document's offsets).
pub(super) fn offsets_array(
    py: Python<'_>,
    spans: Vec<Span>,
) -> PyResult<Bound<'_, PyArray2<usize>>> {
    let n = spans.len();
    let array = numpy::ndarray::Array2::from_shape_vec((n, 2), spans.into_flattened())
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
    Ok(array.into_pyarray(py))
}
