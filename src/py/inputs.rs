//! The `inputs` of count and encode jobs, from Python: `("text", path)`,
//! `("jsonl", path, text_field)`, `("stream", name, format, text_field, reader, size)`,
//! `("str", name, iterator)` and `("arrow", name, iterator)` (see
//! `python/bpekit/sources.py`, which makes them).
//!
//! Feeds pull from their Python iterator on the thread that called the job (see
//! [`PyFeed`]), holding the GIL only while they pull: a batch of `str` items is copied
//! (its UTF-8), an Arrow batch's text buffer is borrowed through the buffer protocol,
//! not copied. A stream's reader (an object in a store) is read the same way, a few
//! MiB a call ([`PyReader`]), and its bytes go to the core's streamed-file reader, so
//! a streamed object is read, decompressed and reported exactly as a local file.

use std::io::Read;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;

use numpy::PyReadonlyArray1;
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyIterator, PyString, PyTuple};

use super::text::text_of;
use crate::corpus::{
    file_ranges as file_ranges_of, Compression, DocBatch, Feed, FieldPath, Format, Input, Raised,
    SpecialPolicy, StatsSummary, Stopped,
};
use crate::encode::Text;
use crate::error::{Error, Result};
use crate::pretokenize::Pretokenizer;
use crate::specials::SpecialMatcher;

/// `inputs` as the core's inputs.
pub fn inputs_of(inputs: &Bound<'_, PyAny>) -> PyResult<Vec<Input>> {
    let mut out = Vec::new();
    for (k, item) in inputs.try_iter()?.enumerate() {
        let item = item?;
        let tuple = item
            .cast::<PyTuple>()
            .map_err(|_| PyTypeError::new_err(format!("inputs[{k}] is not a tuple")))?;
        let kind: String = tuple.get_item(0)?.extract()?;
        let input = match kind.as_str() {
            "text" => Input::File {
                path: tuple.get_item(1)?.extract::<PathBuf>()?,
                format: Format::Text,
                range: range_of(tuple, 2, k)?,
            },
            "jsonl" => Input::File {
                path: tuple.get_item(1)?.extract::<PathBuf>()?,
                format: Format::Jsonl(FieldPath::parse(&tuple.get_item(2)?.extract::<String>()?)?),
                range: range_of(tuple, 3, k)?,
            },
            "stream" => {
                let format = match tuple.get_item(2)?.extract::<String>()?.as_str() {
                    "text" => Format::Text,
                    "jsonl" => {
                        Format::Jsonl(FieldPath::parse(&tuple.get_item(3)?.extract::<String>()?)?)
                    }
                    other => {
                        return Err(PyValueError::new_err(format!(
                            "inputs[{k}]: a stream is \"text\" or \"jsonl\", not {other:?}"
                        )))
                    }
                };
                Input::Stream {
                    name: tuple.get_item(1)?.extract()?,
                    format,
                    reader: Box::new(PyReader::new(tuple.get_item(4)?.unbind())),
                    size: tuple.get_item(5)?.extract()?,
                }
            }
            "str" | "arrow" => {
                let name: String = tuple.get_item(1)?.extract()?;
                let iter = PyIterator::from_object(&tuple.get_item(2)?)?.unbind();
                let feed: Box<dyn Feed> = match kind.as_str() {
                    "str" => Box::new(PyFeed::new(StrFeed { iter, next_item: 0 })),
                    _ => Box::new(PyFeed::new(ArrowFeed { iter })),
                };
                Input::Feed { name, feed }
            }
            other => {
                return Err(PyValueError::new_err(format!(
                    "inputs[{k}]: unknown kind {other:?}"
                )))
            }
        };
        out.push(input);
    }
    Ok(out)
}

/// The optional byte range `(start, end)` at `tuple[at]` of a file input: only a
/// plain file's range can be read (a compressed file is read whole).
fn range_of(tuple: &Bound<'_, PyTuple>, at: usize, k: usize) -> PyResult<Option<Range<u64>>> {
    if tuple.len() <= at {
        return Ok(None);
    }
    let Some((start, end)) = tuple.get_item(at)?.extract::<Option<(u64, u64)>>()? else {
        return Ok(None);
    };
    let path: PathBuf = tuple.get_item(1)?.extract()?;
    let compressed = Compression::of(&path) != Compression::None;
    if start > end || compressed {
        let why = match compressed {
            true => "a compressed file is read whole",
            false => "it ends before it starts",
        };
        return Err(PyValueError::new_err(format!(
            "inputs[{k}]: {}: cannot read the bytes {start}..{end}: {why}",
            path.display()
        )));
    }
    Ok(Some(start..end))
}

/// What a job read, as the dict the Python API reports.
pub fn stats_dict<'py>(py: Python<'py>, stats: &StatsSummary) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("documents", stats.documents)?;
    d.set_item("skipped", stats.skipped)?;
    d.set_item("skipped_examples", stats.examples.clone())?;
    d.set_item("bytes", stats.bytes)?;
    Ok(d)
}

/// A Python exception raised while pulling, carried through the core unchanged.
fn raised(e: PyErr) -> Error {
    Error::Feed(Box::new(e))
}

/// A feed whose batches are pulled from a Python iterator on the thread that made it,
/// the thread that calls the job ([`crate::progress::on_thread`]), not on the worker
/// that asks: Python runs signal handlers on its main thread only, so a generator
/// pulled there stops at Ctrl-C wherever it waits (`time.sleep`, `queue.get()`), as a
/// plain `for` loop over it would. Pulled on a worker, it held Ctrl-C back until it
/// yielded, or forever.
struct PyFeed<P> {
    pull: Arc<Mutex<P>>,
    caller: ThreadId,
}

/// A source of batches that runs Python code ([`PyFeed`]).
trait Pull: Send + 'static {
    fn pull(&mut self) -> Result<Option<DocBatch>>;
}

impl<P: Pull> PyFeed<P> {
    fn new(pull: P) -> Self {
        Self {
            pull: Arc::new(Mutex::new(pull)),
            caller: std::thread::current().id(),
        }
    }
}

impl<P: Pull> Feed for PyFeed<P> {
    fn next_batch(&mut self) -> Result<Option<DocBatch>> {
        let pull = Arc::clone(&self.pull);
        crate::progress::on_thread(self.caller, move || {
            let mut pull = pull
                .lock()
                .map_err(|_| Error::internal("a feed of documents panicked"))?;
            pull.pull()
        })?
    }
}

/// The bytes of a Python object with a `read(n) -> bytes` method, read on the thread
/// that called the job, as a [`PyFeed`] is: a read that waits on the network stops at
/// Ctrl-C there. Its exceptions pass through unchanged ([`Raised`]).
struct PyReader {
    reader: Arc<Mutex<Py<PyAny>>>,
    caller: ThreadId,
    buf: Vec<u8>,
    at: usize,
}

/// Bytes asked of a stream's reader at a time: few calls into Python (each a hop to
/// the calling thread), little memory.
const STREAM_READ_BYTES: usize = 4 << 20;

impl PyReader {
    fn new(reader: Py<PyAny>) -> Self {
        Self {
            reader: Arc::new(Mutex::new(reader)),
            caller: std::thread::current().id(),
            buf: Vec::new(),
            at: 0,
        }
    }
}

impl Read for PyReader {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.at >= self.buf.len() {
            let reader = Arc::clone(&self.reader);
            let pulled = crate::progress::on_thread(self.caller, move || {
                Python::attach(|py| -> PyResult<Vec<u8>> {
                    let reader = reader
                        .lock()
                        .map_err(|_| PyValueError::new_err("a stream's reader panicked"))?;
                    let got = reader.bind(py).call_method1("read", (STREAM_READ_BYTES,))?;
                    let bytes = got
                        .cast::<PyBytes>()
                        .map_err(|_| PyTypeError::new_err("a stream's read() must return bytes"))?;
                    Ok(bytes.as_bytes().to_vec())
                })
            });
            self.buf = match pulled {
                Ok(Ok(bytes)) => bytes,
                Ok(Err(e)) => return Err(std::io::Error::other(Raised(Box::new(e)))),
                Err(_) => return Err(std::io::Error::other(Stopped)),
            };
            self.at = 0;
        }
        let n = out.len().min(self.buf.len() - self.at);
        out[..n].copy_from_slice(&self.buf[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// Documents pulled from an iterator of `str`.
struct StrFeed {
    iter: Py<PyIterator>,
    next_item: u64,
}

/// A batch of `str` items holds about this much text: enough that the GIL is taken
/// and the batch handed over rarely, little enough that the workers start at once.
const STR_BATCH_BYTES: usize = 1 << 20;
const STR_BATCH_ITEMS: usize = 4096;

impl Pull for StrFeed {
    fn pull(&mut self) -> Result<Option<DocBatch>> {
        Python::attach(|py| {
            let iter = self.iter.bind(py);
            let mut data: Vec<u8> = Vec::new();
            let mut offsets = vec![0];
            let mut bad = Vec::new();
            let first_row = self.next_item;
            let mut items = 0;
            while data.len() < STR_BATCH_BYTES && items < STR_BATCH_ITEMS {
                let Some(item) = iter.clone().next() else {
                    break;
                };
                let item = item.map_err(raised)?;
                items += 1;
                let row = self.next_item;
                self.next_item += 1;
                let Ok(s) = item.cast::<PyString>() else {
                    let t = item
                        .get_type()
                        .name()
                        .map(|n| n.to_string())
                        .unwrap_or_default();
                    bad.push((row, format!("not a str but {t}")));
                    continue;
                };
                match text_of(s).map_err(raised)? {
                    Text::Utf8(t) => data.extend_from_slice(t.as_bytes()),
                    // Not the str's cached UTF-8 (which would stay with it, doubling
                    // the memory of a list of documents): a bytes object, dropped here.
                    Text::Wide(_) => match s.encode_utf8() {
                        Ok(b) => data.extend_from_slice(b.as_bytes()),
                        Err(_) => {
                            bad.push((row, "not valid text (it holds a lone surrogate)".into()));
                            continue;
                        }
                    },
                }
                offsets.push(data.len());
            }
            if items == 0 {
                return Ok(None);
            }
            Ok(Some(DocBatch {
                data: Box::new(data),
                offsets,
                row_group: None,
                first_row,
                unit: "item",
                bad,
            }))
        })
    }
}

/// A batch as Python hands it over: `(data, offsets, row_group, first_row, bad)`.
type ArrowBatch<'py> = (
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
    Option<u64>,
    u64,
    Vec<(u64, String)>,
);

/// Batches of an Arrow string column: `(data, offsets, row_group, first_row)`, and
/// optionally the rows without text: `[(row, why), ...]`.
struct ArrowFeed {
    iter: Py<PyIterator>,
}

/// An Arrow buffer, borrowed for as long as this lives.
struct Borrowed(PyBuffer<u8>);

impl AsRef<[u8]> for Borrowed {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: the buffer was checked C-contiguous when made; it stays valid and
        // unchanged while held (Arrow buffers are immutable).
        unsafe { std::slice::from_raw_parts(self.0.buf_ptr() as *const u8, self.0.len_bytes()) }
    }
}

impl Pull for ArrowFeed {
    fn pull(&mut self) -> Result<Option<DocBatch>> {
        Python::attach(|py| {
            let Some(item) = self.iter.bind(py).clone().next() else {
                return Ok(None);
            };
            let item = item.map_err(raised)?;
            let batch = (|| -> PyResult<DocBatch> {
                // A fifth element, where there is one, lists the rows that hold no
                // text (nulls skipped under bad_records="skip"), counted here as every
                // other bad record is.
                let (data, offsets, row_group, first_row, bad): ArrowBatch<'_> = match item.len()? {
                    4 => {
                        let (d, o, g, r) = item.extract()?;
                        (d, o, g, r, Vec::new())
                    }
                    _ => item.extract()?,
                };
                let buffer = PyBuffer::<u8>::get(&data)?;
                if !buffer.is_c_contiguous() {
                    return Err(PyValueError::new_err(
                        "an Arrow text buffer is not contiguous",
                    ));
                }
                let offsets: Vec<usize> = match offsets.extract::<PyReadonlyArray1<'_, i64>>() {
                    Ok(a) => a.as_slice()?.iter().map(|&o| o.max(0) as usize).collect(),
                    Err(_) => {
                        let a = offsets.extract::<PyReadonlyArray1<'_, i32>>()?;
                        a.as_slice()?.iter().map(|&o| o.max(0) as usize).collect()
                    }
                };
                Ok(DocBatch {
                    data: Box::new(Borrowed(buffer)),
                    offsets,
                    row_group,
                    first_row,
                    unit: "row",
                    bad,
                })
            })()
            .map_err(raised)?;
            Ok(Some(batch))
        })
    }
}

/// The byte ranges of about `target` bytes that a plain file is cut into for the
/// units of a distributed job: `format` is `"text"` (cut at safe cuts of `pattern`
/// and, unless `special_in_text` is `"text"`, before `special_tokens`) or `"jsonl"`
/// (cut after newlines). Returns `[(start, end), ...]` covering the file.
#[pyfunction]
#[pyo3(signature = (path, format, target, special_tokens, pattern = "gpt2", special_in_text = None))]
fn file_ranges(
    py: Python<'_>,
    path: PathBuf,
    format: &str,
    target: usize,
    special_tokens: Vec<String>,
    pattern: &str,
    special_in_text: Option<&str>,
) -> PyResult<Vec<(u64, u64)>> {
    let lines = match format {
        "text" => false,
        "jsonl" => true,
        other => {
            return Err(PyValueError::new_err(format!(
                "format must be \"text\" or \"jsonl\", not {other:?}"
            )))
        }
    };
    let policy = special_in_text.map(SpecialPolicy::parse).transpose()?;
    let cut_at = match (lines, policy) {
        (true, _) | (false, Some(SpecialPolicy::Text)) => Vec::new(),
        _ => special_tokens,
    };
    let specials = SpecialMatcher::new(&cut_at)?;
    let kind = Pretokenizer::new(pattern)?.kind();
    let ranges = py.detach(|| file_ranges_of(&path, lines, &specials, target.max(1), kind))?;
    Ok(ranges.into_iter().map(|r| (r.start, r.end)).collect())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(file_ranges, m)?)
}
