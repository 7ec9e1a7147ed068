//! Training bindings: `count_pretokens`, `train_from_counts`, and `WordCounts`.

use std::path::PathBuf;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};

use super::inputs::{inputs_of, stats_dict};
use super::options::{PyReadOptions, PyRunOptions};
use super::progress::{check_room, run_with_progress};
use crate::count::{self, CountOptions, CountsSum, Partitions, WordCounts};
use crate::pretokenize::Pretokenizer;
use crate::specials::SpecialMatcher;
use crate::train;

/// `counts` as `(word, count)` pairs; a bad item is named by its index and value
/// (PyO3's own message, "Can't extract `str` to `Vec`", named neither).
fn word_count_pairs(counts: &Bound<'_, PyAny>) -> PyResult<Vec<(Vec<u8>, u64)>> {
    let mut pairs = Vec::new();
    for (k, item) in counts.try_iter()?.enumerate() {
        let item = item?;
        let shown = item.repr().map(|r| r.to_string()).unwrap_or_default();
        let bad = |what: String| PyTypeError::new_err(format!("counts[{k}] is {shown}: {what}"));
        let (word, count): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item
            .extract()
            .map_err(|_| bad("not a pair (word, count)".into()))?;
        let word = word.cast::<PyBytes>().map_err(|_| {
            let t = word
                .get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default();
            bad(format!("a word must be bytes, not {t}"))
        })?;
        let count: u64 = count
            .extract()
            .map_err(|_| bad("a count must be an int from 0 to 2**64-1".into()))?;
        pairs.push((word.as_bytes().to_vec(), count));
    }
    Ok(pairs)
}

/// What `WordCounts.__reduce__` gives pickle: `_from_bytes` and its arguments.
type Reduced<'py> = (Bound<'py, PyAny>, (Bound<'py, PyBytes>, Option<Py<PyDict>>));

/// How often each pre-token occurs; see `bpekit.WordCounts`.
#[pyclass(name = "WordCounts", module = "bpekit._core")]
pub struct PyWordCounts {
    pub inner: WordCounts,
    /// What the run that counted them read (`count_pretokens`'s stats, to which the
    /// Python API adds its own keys), or None for counts made, loaded or added.
    stats: Option<Py<PyDict>>,
}

impl PyWordCounts {
    fn of(inner: WordCounts) -> Self {
        Self { inner, stats: None }
    }
}

#[pymethods]
impl PyWordCounts {
    #[new]
    #[pyo3(signature = (counts = None, pattern = "gpt2"))]
    fn new(counts: Option<&Bound<'_, PyAny>>, pattern: &str) -> PyResult<Self> {
        let pattern = Pretokenizer::new(pattern)?.pattern().to_owned();
        let pairs = match counts {
            Some(c) => word_count_pairs(c)?,
            None => Vec::new(),
        };
        Ok(Self::of(WordCounts::from_pairs(pairs, &pattern)?))
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    fn __contains__(&self, word: &[u8]) -> bool {
        self.inner.get(word) > 0
    }

    fn __getitem__(&self, word: &[u8]) -> u64 {
        self.inner.get(word)
    }

    fn __eq__(&self, other: &Self) -> bool {
        self.inner == other.inner
    }

    fn __repr__(&self) -> String {
        format!(
            "WordCounts({} words, {} occurrences)",
            self.inner.len(),
            self.inner.total()
        )
    }

    /// Number of pre-token occurrences counted.
    #[getter]
    fn total(&self) -> u64 {
        self.inner.total()
    }

    #[getter]
    fn pattern(&self) -> &str {
        &self.inner.pattern
    }

    #[getter]
    fn special_tokens(&self) -> Vec<String> {
        self.inner.special_tokens.clone()
    }

    /// What the run that counted these read: `documents`, `skipped`,
    /// `skipped_examples`, `bytes` and the keys the API adds (`files`, ...); None for
    /// counts made, loaded, added or updated, which no one run read.
    #[getter]
    fn stats(&self, py: Python<'_>) -> Option<Py<PyDict>> {
        self.stats.as_ref().map(|s| s.clone_ref(py))
    }

    #[setter]
    fn set_stats(&mut self, stats: Option<Bound<'_, PyDict>>) {
        self.stats = stats.map(Bound::unbind);
    }

    #[pyo3(signature = (n = 10))]
    /// As `collections.Counter.most_common`: a negative `n` gives nothing.
    fn most_common<'py>(&self, py: Python<'py>, n: i64) -> Vec<(Bound<'py, PyBytes>, u64)> {
        self.inner
            .most_common(usize::try_from(n).unwrap_or(0))
            .into_iter()
            .map(|(w, c)| (PyBytes::new(py, w), c))
            .collect()
    }

    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (w, c) in self.inner.iter() {
            d.set_item(PyBytes::new(py, w), c)?;
        }
        Ok(d)
    }

    /// Adds `other`'s counts in place (counts of shards); the stats of one run no
    /// longer describe them.
    fn update(&mut self, py: Python<'_>, other: &Self) -> PyResult<()> {
        let (inner, other) = (&mut self.inner, &other.inner);
        py.detach(|| inner.add(other))?;
        self.stats = None;
        Ok(())
    }

    fn __add__(&self, other: &Self) -> PyResult<Self> {
        let mut sum = self.inner.clone();
        sum.add(&other.inner)?;
        Ok(Self::of(sum))
    }

    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        py.detach(|| self.inner.save(&path))?;
        Ok(())
    }

    #[staticmethod]
    fn load(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        Ok(Self::of(py.detach(|| WordCounts::load(&path))?))
    }

    /// Pickled as the bytes of a saved file, so that counts travel between processes
    /// (a process pool's, Ray's) as `save` writes them, with their stats.
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Reduced<'py>> {
        let from_bytes = py.get_type::<Self>().getattr("_from_bytes")?;
        let bytes = py.detach(|| self.inner.to_bytes());
        Ok((from_bytes, (PyBytes::new(py, &bytes), self.stats(py))))
    }

    #[staticmethod]
    #[pyo3(signature = (data, stats = None))]
    fn _from_bytes(
        py: Python<'_>,
        data: &[u8],
        stats: Option<Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let inner = py.detach(|| WordCounts::from_bytes(data, "<pickled WordCounts>"))?;
        Ok(Self {
            inner,
            stats: stats.map(Bound::unbind),
        })
    }

    /// The bytes pickling sends (a saved file's, words unsorted).
    fn _to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let bytes = py.detach(|| self.inner.to_bytes());
        PyBytes::new(py, &bytes)
    }

    /// `_to_bytes`'s bytes of each of `parts` partitions of the counts (see
    /// `count::partition`): what a worker of a distributed count hands on, so that
    /// many workers add the partitions up apart.
    fn _partition_bytes<'py>(
        &self,
        py: Python<'py>,
        parts: usize,
    ) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let split = py.detach(|| self.inner.partition_bytes(parts))?;
        Ok(split.iter().map(|b| PyBytes::new(py, b)).collect())
    }

    /// The counts whose `parts` partitions' sums `blobs` yields, as `(partition,
    /// bytes)` in any order: appended, never looked up (they share no word), one
    /// partition's bytes at a time.
    #[staticmethod]
    fn _from_partitions(py: Python<'_>, parts: usize, blobs: &Bound<'_, PyAny>) -> PyResult<Self> {
        let mut whole = Partitions::new(parts)?;
        for item in blobs.try_iter()? {
            let (part, data): (usize, Bound<'_, PyBytes>) = item?.extract()?;
            let data = data.as_bytes();
            py.detach(|| whole.add(part, data))?;
        }
        Ok(Self::of(py.detach(|| whole.finish())?))
    }
}

/// The sum of `WordCounts._to_bytes`' bytes, added one file's bytes at a time: a
/// distributed count's reducer (see `count::CountsSum`).
#[pyclass(name = "CountsSum", module = "bpekit._core")]
#[derive(Default)]
pub struct PyCountsSum {
    inner: CountsSum,
}

#[pymethods]
impl PyCountsSum {
    #[new]
    fn new() -> Self {
        Self::default()
    }

    /// Adds the counts of `data`, read in place; an error (bytes that are not counts,
    /// cut short, another pattern, a total past 2**64-1) names `name` and changes
    /// nothing.
    #[pyo3(signature = (data, name = "<counts of a unit>"))]
    fn add_bytes(&mut self, py: Python<'_>, data: &[u8], name: &str) -> PyResult<()> {
        let inner = &mut self.inner;
        py.detach(|| inner.add_bytes(data, name))?;
        Ok(())
    }

    /// The sum as `WordCounts._to_bytes` writes counts (words unsorted).
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let inner = &self.inner;
        let bytes = py.detach(|| inner.to_bytes())?;
        Ok(PyBytes::new(py, &bytes))
    }
}

/// The counts of the inputs, their `stats` set to what was read; see
/// `bpekit.count_pretokens`. `read` and `run` are `bpekit.options`' objects.
#[pyfunction]
#[pyo3(signature = (inputs, special_tokens, read, run, pattern = "gpt2", progress = None))]
fn count_pretokens(
    py: Python<'_>,
    inputs: &Bound<'_, PyAny>,
    special_tokens: Vec<String>,
    read: PyReadOptions,
    run: PyRunOptions,
    pattern: &str,
    progress: Option<Py<PyAny>>,
) -> PyResult<PyWordCounts> {
    check_room()?;
    let specials = SpecialMatcher::new(&special_tokens)?;
    let pretokenizer = Pretokenizer::new(pattern)?;
    let read = read.read()?;
    let options = CountOptions {
        num_threads: run
            .num_threads
            .unwrap_or_else(crate::pool::default_threads)
            .max(1),
        chunk_size: run.chunk_size,
        utf8: read.utf8,
    };
    let inputs = inputs_of(inputs)?;
    let (inner, stats) = run_with_progress(py, progress, |p| {
        count::count_inputs(inputs, &specials, &pretokenizer, options, read, p)
    })?;
    Ok(PyWordCounts {
        inner,
        stats: Some(stats_dict(py, &stats)?.unbind()),
    })
}

/// Returns `(vocab: dict[int, bytes], merges: list[tuple[bytes, bytes]])`.
#[pyfunction]
#[pyo3(signature = (counts, vocab_size, special_tokens, progress = None, num_threads = None))]
fn train_from_counts<'py>(
    py: Python<'py>,
    counts: &PyWordCounts,
    vocab_size: usize,
    special_tokens: Vec<String>,
    progress: Option<Py<PyAny>>,
    num_threads: Option<usize>,
) -> PyResult<Bound<'py, PyTuple>> {
    let threads = num_threads.unwrap_or(0);
    let trained = run_with_progress(py, progress, |p| {
        train::train(&counts.inner, vocab_size, &special_tokens, threads, p)
    })?;
    let vocab = PyDict::new(py);
    for (id, bytes) in trained.vocab.iter().enumerate() {
        vocab.set_item(id, PyBytes::new(py, bytes))?;
    }
    let merges = PyList::empty(py);
    for (a, b) in trained.merge_bytes() {
        merges.append((PyBytes::new(py, a), PyBytes::new(py, b)))?;
    }
    PyTuple::new(py, [vocab.into_any(), merges.into_any()])
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyWordCounts>()?;
    m.add_class::<PyCountsSum>()?;
    m.add_function(wrap_pyfunction!(count_pretokens, m)?)?;
    m.add_function(wrap_pyfunction!(train_from_counts, m)?)?;
    Ok(())
}
