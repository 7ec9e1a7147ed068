//! The `StreamEncoder` behind `Tokenizer.encode_iterable`: text fed in pieces, the ids
//! that became final given back.

use pyo3::prelude::*;
use pyo3::types::PyList;

use super::ints::id_list;
use crate::encode::StreamEncoder;

/// Incremental encoder: `feed` text, get the ids that became final; `finish` at the end.
#[pyclass(name = "StreamEncoder", module = "bpekit._core")]
pub struct PyStream {
    pub(crate) inner: StreamEncoder,
}

/// Buffered bytes from which a stream's call releases the GIL. Below it the call is
/// a few microseconds of work, and releasing and taking back the GIL would cost a
/// good part of that for each small piece of an iterable.
const STREAM_DETACH_FROM: usize = 1 << 16;

#[pymethods]
impl PyStream {
    fn feed<'py>(&mut self, py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyList>> {
        let inner = &mut self.inner;
        if inner.pending() + text.len() < STREAM_DETACH_FROM {
            return id_list(py, inner.feed(text)?);
        }
        py.detach(|| inner.feed(text).map(|_| ()))?;
        id_list(py, inner.ids())
    }

    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let inner = &mut self.inner;
        if inner.pending() < STREAM_DETACH_FROM {
            return id_list(py, inner.finish()?);
        }
        py.detach(|| inner.finish().map(|_| ()))?;
        id_list(py, inner.ids())
    }

    /// Bytes buffered and not yet encoded.
    #[getter]
    fn pending(&self) -> usize {
        self.inner.pending()
    }
}
