//! Encoding bindings: the `Encoder` class (text <-> ids, batches; its file and dataset
//! jobs are in [`super::encode_files`]) and the `StreamEncoder` behind
//! `Tokenizer.encode_iterable`.

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use numpy::{IntoPyArray, PyArray1};
use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};

use super::dataset::PyJob;
use super::encode_files::{self, PyAssembly, ResumeArg};
use super::ints::id_list;
use super::iterable::PyStream;
use super::load::{
    char_words, front_spec, hf_normalize, pre_steps, room_to_load, vocab_and_merges, CharArgs,
    HfFrontArgs,
};
use super::offsets::{offsets_array, offsets_list, trim_of};
use super::progress::interruptible;
use super::text::text_of;
use crate::encode::StreamEncoder;
use crate::encode::Text;
use crate::encode::{encode_texts_flat, encode_texts_in_order, encode_wide, Encoder, Flat};
use crate::encode::{encode_texts_with_offsets, Span};
use crate::pretokenize::Kind;
use crate::specials::Specials;

/// Every text's ids in one array, and where each text's ids start.
type IdsAndOffsets<'py> = (Bound<'py, PyArray1<u32>>, Bound<'py, PyArray1<u64>>);

/// A text's ids and each one's `(start, end)` in characters.
type IdsAndSpans<'py> = (Bound<'py, PyList>, Bound<'py, PyList>);

/// The same as arrays: the ids, and an `(n, 2)` array of offsets.
type IdsAndArray<'py> = (
    Bound<'py, PyArray1<u32>>,
    Bound<'py, numpy::PyArray2<usize>>,
);

/// A byte-level BPE encoder; see `bpekit.Tokenizer` for the Python API.
#[pyclass(name = "Encoder", module = "bpekit._core", frozen)]
pub struct PyEncoder {
    inner: Arc<Encoder>,
    /// The last `str` encoded from its code points, if it was at most
    /// [`REMEMBERED_WIDE`] bytes.
    last_wide: Mutex<Option<Py<PyString>>>,
}

/// The largest `str` storage (code points times their width) [`PyEncoder::seen_again`]
/// keeps alive to know it again: 16 MiB, held until the next such call. A larger text
/// is transcoded at every call, which costs ~7% of its encode.
const REMEMBERED_WIDE: usize = 16 << 20;

/// `items` as a Python list, or `MemoryError` where it cannot be made (see
/// [`id_list`]).
fn object_list<'py, T>(py: Python<'py>, items: Vec<Bound<'py, T>>) -> PyResult<Bound<'py, PyList>> {
    let len = pyo3::ffi::Py_ssize_t::try_from(items.len())
        .map_err(|_| pyo3::exceptions::PyMemoryError::new_err("too many items for a list"))?;
    // SAFETY: plain CPython calls with the GIL held; each item's reference moves into
    // the list, and a list whose items are not all set yet is freed safely.
    unsafe {
        let list = Bound::from_owned_ptr_or_err(py, pyo3::ffi::PyList_New(len))?;
        for (i, item) in items.into_iter().enumerate() {
            pyo3::ffi::PyList_SET_ITEM(list.as_ptr(), i as pyo3::ffi::Py_ssize_t, item.into_ptr());
        }
        Ok(list.cast_into_unchecked())
    }
}

fn to_ids(ids: Vec<i64>) -> PyResult<Vec<u32>> {
    ids.into_iter()
        .map(|i| {
            u32::try_from(i)
                .map_err(|_| PyKeyError::new_err(format!("token id {i} is not in the vocabulary")))
        })
        .collect()
}

impl PyEncoder {
    fn new(inner: Encoder) -> Self {
        Self {
            inner: Arc::new(inner),
            last_wide: Mutex::new(None),
        }
    }

    /// Whether `text` (read as code points, `wide`) is the `str` the last such call
    /// read; remembers it either way, if it is small enough to keep.
    ///
    /// Why: transcoding costs every call (~40 ms for 116 MB stored as UCS-4), while
    /// the UTF-8 CPython makes on request (~160 ms) stays with the `str`. A `str`
    /// encoded a second time is likely encoded again, so then CPython is asked.
    ///
    /// Why a reference and not the address: a new `str` read in place of a freed one
    /// often gets its address and length (a file read again, the next record of a
    /// fixed size), and was then taken for it: CPython made its UTF-8 at every such
    /// call, ~50% more time (2 MB of TinyStories, gpt2: 15 ms, against 10 ms
    /// transcoded). Held, the last `str` cannot be freed, so its address is its own.
    fn seen_again(&self, text: &Bound<'_, PyString>, wide: &crate::encode::Wide<'_>) -> bool {
        let Ok(mut last) = self.last_wide.lock() else {
            return false;
        };
        if last.as_ref().is_some_and(|l| l.as_ptr() == text.as_ptr()) {
            return true;
        }
        let bytes = match wide {
            crate::encode::Wide::Latin1(s) => s.len(),
            crate::encode::Wide::Ucs2(s) => 2 * s.len(),
            crate::encode::Wide::Ucs4(s) => 4 * s.len(),
        };
        // The last one is let go either way (its reference dropped with the GIL held).
        *last = (bytes <= REMEMBERED_WIDE).then(|| text.clone().unbind());
        false
    }

    /// `encode` of UTF-8 text, with the GIL released.
    fn encode_utf8(
        &self,
        py: Python<'_>,
        utf8: &str,
        allowed: &Specials,
        disallowed: &Option<Specials>,
    ) -> PyResult<Vec<u32>> {
        interruptible(py, utf8.len(), || {
            check(disallowed, utf8)?;
            self.inner.encode(utf8, allowed)
        })
    }

    /// `encode`'s ids, for the methods that return them in other forms.
    fn encode_ids(
        &self,
        py: Python<'_>,
        text: &Bound<'_, PyString>,
        allowed: Option<Vec<String>>,
        disallowed: Vec<String>,
    ) -> PyResult<Vec<u32>> {
        let allowed = self.allowed(allowed)?;
        let disallowed = self.disallowed(disallowed)?;
        let encode_utf8 = |utf8: &str| self.encode_utf8(py, utf8, &allowed, &disallowed);
        let wide = match text_of(text)? {
            Text::Utf8(utf8) => return encode_utf8(utf8),
            Text::Wide(wide) if self.seen_again(text, &wide) => return encode_utf8(text.to_str()?),
            Text::Wide(wide) => wide,
        };
        let encoded = interruptible(py, wide.len(), || {
            encode_wide(&self.inner, wide, &allowed, disallowed.as_ref())
        })?;
        match encoded {
            Some(ids) => Ok(ids),
            // A code point without UTF-8 (a lone surrogate): CPython's conversion
            // raises its own error for it.
            None => encode_utf8(text.to_str()?),
        }
    }

    /// `encode_with_offsets`' ids and character spans, with the GIL released. A text
    /// with lone surrogates raises CPython's `UnicodeEncodeError`.
    fn spans_of(
        &self,
        py: Python<'_>,
        text: &Bound<'_, PyString>,
        allowed: Option<Vec<String>>,
        disallowed: Vec<String>,
        trim: Option<(bool, usize)>,
    ) -> PyResult<(Vec<u32>, Vec<Span>)> {
        let allowed = self.allowed(allowed)?;
        let disallowed = self.disallowed(disallowed)?;
        let utf8 = text.to_str()?;
        interruptible(py, utf8.len(), || {
            check(&disallowed, utf8)?;
            self.inner
                .encode_with_offsets(utf8, &allowed, trim_of(trim))
        })
    }

    /// `None`: all special tokens of the encoder; a list: those among them.
    fn allowed(&self, names: Option<Vec<String>>) -> PyResult<Cow<'_, Specials>> {
        Ok(match names {
            None => Cow::Borrowed(self.inner.specials()),
            Some(n) if n.is_empty() => Cow::Owned(Specials::default()),
            Some(n) => Cow::Owned(self.inner.subset(&n)?),
        })
    }

    fn disallowed(&self, names: Vec<String>) -> PyResult<Option<Specials>> {
        if names.is_empty() {
            return Ok(None);
        }
        Ok(Some(self.inner.subset(&names)?))
    }
}

fn check(disallowed: &Option<Specials>, text: &str) -> crate::Result<()> {
    disallowed.as_ref().map_or(Ok(()), |d| d.refuse_in(text))
}

#[pymethods]
impl PyEncoder {
    /// From a CS336 vocab and merges; special tokens not in the vocab are appended.
    #[staticmethod]
    #[pyo3(signature = (vocab, merges, special_tokens, pattern = "gpt2"))]
    fn from_merges(
        py: Python<'_>,
        vocab: &Bound<'_, PyAny>,
        merges: &Bound<'_, PyAny>,
        special_tokens: Vec<String>,
        pattern: &str,
    ) -> PyResult<Self> {
        room_to_load(vocab.len()? + merges.len()? + special_tokens.len())?;
        let (vocab, merges) = vocab_and_merges(vocab, merges)?;
        let inner = py.detach(|| Encoder::from_merges(vocab, &merges, special_tokens, pattern))?;
        Ok(Self::new(inner))
    }

    /// From an HF `tokenizer.json`, as `bpekit.formats.hf` reads it: the BPE model
    /// (vocab, merges as bytes, `ignore_merges`), the pre-tokenizer steps
    /// `(kind, pattern, flag, behavior, invert)` (kind "split" with flag = the pattern
    /// is a string, "digits" with flag = individual digits, "bytelevel" with flag =
    /// use_regex), and the front `(normalizers, added tokens, prefix_space, decode)`:
    /// normalizers `(kind, pattern, literal, content)`, added tokens `(content, id,
    /// special, single_word, lstrip, rstrip, normalized)`, and the bytes an added
    /// token's id decodes to.
    ///
    /// `chars`: a SentencePiece-style model (`load::CharArgs`): its vocab and merges
    /// are the UTF-8 of the tokens' texts, and an added token's id decodes to its text.
    #[staticmethod]
    #[pyo3(signature = (vocab, merges, ignore_merges, steps, front, chars = None))]
    fn from_hf(
        py: Python<'_>,
        vocab: &Bound<'_, PyAny>,
        merges: &Bound<'_, PyAny>,
        ignore_merges: bool,
        steps: Vec<(String, String, bool, String, bool)>,
        front: HfFrontArgs,
        chars: Option<CharArgs>,
    ) -> PyResult<Self> {
        room_to_load(vocab.len()? + merges.len()?)?;
        let (vocab, merges) = vocab_and_merges(vocab, merges)?;
        let steps = pre_steps(steps)?;
        let (mut spec, decode) = front_spec(front)?;
        let words = match chars {
            None => None,
            Some(args) => {
                let (words, metaspace, decoder) = char_words(args)?;
                spec.metaspace = metaspace;
                spec.decoder = Some(decoder);
                Some(words)
            }
        };
        let inner = py.detach(|| {
            Encoder::from_hf(vocab, &merges, ignore_merges, &steps, spec, &decode, words)
        })?;
        Ok(Self::new(inner))
    }

    /// From tiktoken mergeable ranks and `(special token, id)` pairs.
    #[staticmethod]
    #[pyo3(signature = (ranks, special_tokens, pattern))]
    fn from_ranks(
        py: Python<'_>,
        ranks: &Bound<'_, PyAny>,
        special_tokens: Vec<(String, u32)>,
        pattern: &str,
    ) -> PyResult<Self> {
        room_to_load(ranks.len()? + special_tokens.len())?;
        let ranks: Vec<(PyBackedBytes, u32)> = ranks.extract()?;
        let ranks: Vec<(Vec<u8>, u32)> = ranks.into_iter().map(|(b, r)| (b.to_vec(), r)).collect();
        let inner = py.detach(|| Encoder::from_ranks(ranks, special_tokens, pattern))?;
        Ok(Self::new(inner))
    }

    /// From the bytes of a rank file (`name` for errors), parsed here: `format` is
    /// `"tiktoken"` (a `.tiktoken` file) or `"gpt2"` (GPT-2's `vocab.bpe`).
    #[staticmethod]
    #[pyo3(signature = (data, name, format, special_tokens, pattern))]
    fn from_rank_file(
        py: Python<'_>,
        data: PyBackedBytes,
        name: &str,
        format: &str,
        special_tokens: Vec<(String, u32)>,
        pattern: &str,
    ) -> PyResult<Self> {
        use crate::encode::RankFormat as Format;
        let format = match format {
            "tiktoken" => Format::Tiktoken,
            "gpt2" => Format::Gpt2,
            _ => {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "unknown rank file format {format:?}: expected \"tiktoken\" or \"gpt2\""
                )))
            }
        };
        // A rank file has a line per token, of at least a few bytes.
        room_to_load(data.len() / 4 + special_tokens.len())?;
        let inner =
            py.detach(|| Encoder::from_rank_file(format, &data, name, special_tokens, pattern))?;
        Ok(Self::new(inner))
    }

    #[pyo3(signature = (text, allowed = None, disallowed = Vec::new()))]
    fn encode<'py>(
        &self,
        py: Python<'py>,
        text: &Bound<'py, PyString>,
        allowed: Option<Vec<String>>,
        disallowed: Vec<String>,
    ) -> PyResult<Bound<'py, PyList>> {
        id_list(py, &self.encode_ids(py, text, allowed, disallowed)?)
    }

    #[pyo3(signature = (text, allowed = None, disallowed = Vec::new()))]
    fn encode_to_numpy<'py>(
        &self,
        py: Python<'py>,
        text: &Bound<'py, PyString>,
        allowed: Option<Vec<String>>,
        disallowed: Vec<String>,
    ) -> PyResult<Bound<'py, PyArray1<u32>>> {
        let ids = self.encode_ids(py, text, allowed, disallowed)?;
        Ok(ids.into_pyarray(py))
    }

    #[pyo3(signature = (texts, allowed = None, disallowed = Vec::new(), num_threads = None))]
    fn encode_batch<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<Bound<'py, PyString>>,
        allowed: Option<Vec<String>>,
        disallowed: Vec<String>,
        num_threads: Option<usize>,
    ) -> PyResult<Bound<'py, PyList>> {
        let allowed = self.allowed(allowed)?;
        let disallowed = self.disallowed(disallowed)?;
        // Each text is read (and transcoded, if need be) by the thread encoding it.
        let views = texts.iter().map(text_of).collect::<PyResult<Vec<_>>>()?;
        let threads = num_threads.unwrap_or(0);
        // Each text's list is made as soon as its ids are, while the other threads go
        // on encoding: making lists needs the GIL, so only one thread can, and made
        // after the encoding it was a serial tail as long as the encoding itself.
        let mut lists: Vec<Option<Py<PyList>>> = Vec::new();
        lists.try_reserve_exact(texts.len()).map_err(|_| {
            PyErr::from(crate::error::Error::out_of_memory::<usize>(
                "lists",
                texts.len(),
            ))
        })?;
        py.detach(|| {
            encode_texts_in_order(
                &self.inner,
                &views,
                &allowed,
                disallowed.as_ref(),
                threads,
                |ready| {
                    Python::attach(|py| {
                        for (_, ids) in ready {
                            // None: a code point without UTF-8, redone below.
                            lists.push(match ids? {
                                Some(ids) => Some(id_list(py, &ids)?.unbind()),
                                None => None,
                            });
                        }
                        // Ctrl-C stops a batch between two texts.
                        py.check_signals()
                    })
                },
            )
        })?;
        let lists = lists
            .into_iter()
            .zip(&texts)
            .map(|(list, text)| match list {
                Some(list) => Ok(list.into_bound(py)),
                // CPython's conversion raises its own error for such a text.
                None => id_list(
                    py,
                    &self.encode_utf8(py, text.to_str()?, &allowed, &disallowed)?,
                ),
            })
            .collect::<PyResult<Vec<_>>>()?;
        object_list(py, lists)
    }

    /// `encode_batch` as one flat `uint32` array of every text's ids (each followed by
    /// `eos` when given) and the `uint64` offset where each text's ids start, ending
    /// with the total: no Python int is made per token, and the lists are not built
    /// under the GIL, so it scales with threads.
    #[pyo3(signature = (texts, allowed = None, disallowed = Vec::new(), num_threads = None, eos = None))]
    fn encode_batch_to_numpy<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<Bound<'py, PyString>>,
        allowed: Option<Vec<String>>,
        disallowed: Vec<String>,
        num_threads: Option<usize>,
        eos: Option<u32>,
    ) -> PyResult<IdsAndOffsets<'py>> {
        let allowed = self.allowed(allowed)?;
        let disallowed = self.disallowed(disallowed)?;
        let views = texts.iter().map(text_of).collect::<PyResult<Vec<_>>>()?;
        let threads = num_threads.unwrap_or(0);
        let (inner, disallowed) = (&self.inner, disallowed.as_ref());
        match py.detach(|| encode_texts_flat(inner, &views, &allowed, disallowed, threads, eos))? {
            Flat::Done(flat) => Ok((flat.ids.into_pyarray(py), flat.offsets.into_pyarray(py))),
            // A code point without UTF-8: CPython's conversion raises its error.
            Flat::NoUtf8(i) => Err(texts[i].to_str().err().unwrap_or_else(|| {
                crate::error::Error::internal("a text without UTF-8 converted").into()
            })),
        }
    }

    /// The ids of `text` (as `encode`) and each one's `(start, end)` in characters of
    /// `text`; `trim`: `(add_prefix_space, index of the first id)` of a `ByteLevel`
    /// post-processor's `trim_offsets`.
    #[pyo3(signature = (text, allowed = None, disallowed = Vec::new(), trim = None))]
    fn encode_with_offsets<'py>(
        &self,
        py: Python<'py>,
        text: &Bound<'py, PyString>,
        allowed: Option<Vec<String>>,
        disallowed: Vec<String>,
        trim: Option<(bool, usize)>,
    ) -> PyResult<IdsAndSpans<'py>> {
        let (ids, spans) = self.spans_of(py, text, allowed, disallowed, trim)?;
        Ok((id_list(py, &ids)?, offsets_list(py, &spans)?))
    }

    /// `encode_with_offsets` as a `uint32` array of ids and an `(n, 2)` `uint64` array
    /// of offsets.
    #[pyo3(signature = (text, allowed = None, disallowed = Vec::new(), trim = None))]
    fn encode_with_offsets_to_numpy<'py>(
        &self,
        py: Python<'py>,
        text: &Bound<'py, PyString>,
        allowed: Option<Vec<String>>,
        disallowed: Vec<String>,
        trim: Option<(bool, usize)>,
    ) -> PyResult<IdsAndArray<'py>> {
        let (ids, spans) = self.spans_of(py, text, allowed, disallowed, trim)?;
        Ok((ids.into_pyarray(py), offsets_array(py, spans)?))
    }

    /// `encode_with_offsets` of each text, in parallel: a list of `(ids, offsets)`.
    #[pyo3(signature = (texts, allowed = None, disallowed = Vec::new(), num_threads = None, trim = None))]
    fn encode_batch_with_offsets<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<Bound<'py, PyString>>,
        allowed: Option<Vec<String>>,
        disallowed: Vec<String>,
        num_threads: Option<usize>,
        trim: Option<(bool, usize)>,
    ) -> PyResult<Bound<'py, PyList>> {
        let allowed = self.allowed(allowed)?;
        let disallowed = self.disallowed(disallowed)?;
        let utf8 = texts
            .iter()
            .map(|t| t.to_str())
            .collect::<PyResult<Vec<&str>>>()?;
        let threads = num_threads.unwrap_or(0);
        let encoded = py.detach(|| {
            encode_texts_with_offsets(
                &self.inner,
                &utf8,
                &allowed,
                disallowed.as_ref(),
                trim_of(trim),
                threads,
            )
        })?;
        let pairs = encoded
            .iter()
            .map(|(ids, spans)| {
                let pair = (id_list(py, ids)?, offsets_list(py, spans)?);
                pair.into_pyobject(py).map(Bound::into_any)
            })
            .collect::<PyResult<Vec<_>>>()?;
        object_list(py, pairs)
    }

    fn decode_bytes<'py>(
        &self,
        py: Python<'py>,
        ids: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        // The ids' Rust copy, and their bytes (about 4 a token).
        let n = ids.len()?;
        if !crate::hugemem::probe(n.saturating_mul(16)) {
            return Err(crate::Error::out_of_memory::<u64>("decoding token ids", 2 * n).into());
        }
        let ids = to_ids(ids.extract()?)?;
        let bytes = py.detach(|| self.inner.decode_bytes(&ids))?;
        // SAFETY: a plain CPython call with the GIL held, its result checked.
        unsafe {
            let obj = pyo3::ffi::PyBytes_FromStringAndSize(
                bytes.as_ptr().cast(),
                bytes.len() as pyo3::ffi::Py_ssize_t,
            );
            Ok(Bound::from_owned_ptr_or_err(py, obj)?.cast_into_unchecked())
        }
    }

    fn token_bytes<'py>(&self, py: Python<'py>, id: i64) -> PyResult<Bound<'py, PyBytes>> {
        let id = to_ids(vec![id])?[0];
        let bytes = self
            .inner
            .token_bytes(id)
            .ok_or(crate::Error::UnknownTokenId { id })?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// The ids of one piece, not pre-tokenized (see `Encoder::encode_single_piece`).
    #[pyo3(signature = (piece, whole = true))]
    fn encode_single_piece(&self, piece: &[u8], whole: bool) -> PyResult<Vec<u32>> {
        Ok(self.inner.encode_single_piece(piece, whole)?)
    }

    /// The id of an ordinary token's bytes, or None.
    fn token_id(&self, token: &[u8]) -> Option<u32> {
        self.inner.bpe().id_of(token)
    }

    fn vocab<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (id, _) in self.inner.bpe().tokens() {
            if let Some(bytes) = self.inner.token_bytes(id) {
                d.set_item(id, PyBytes::new(py, &bytes))?;
            }
        }
        Ok(d)
    }

    /// `(token, id)` of each special token, in the order given.
    fn special_tokens(&self) -> Vec<(String, u32)> {
        self.inner
            .specials()
            .tokens()
            .map(|(t, i)| (t.to_owned(), i))
            .collect()
    }

    /// The merges list; recovered from the ranks for tiktoken vocabularies.
    fn merges<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let merges = py.detach(|| self.inner.merges())?;
        let out = PyList::empty(py);
        let bpe = self.inner.bpe();
        for (l, r) in merges {
            let left = bpe.token(l).ok_or(crate::Error::UnknownTokenId { id: l })?;
            let right = bpe.token(r).ok_or(crate::Error::UnknownTokenId { id: r })?;
            out.append((PyBytes::new(py, left), PyBytes::new(py, right)))?;
        }
        Ok(out)
    }

    /// `(pre-tokenize seconds, merge seconds, tokens)` of `text`, timed apart (benchmarks).
    fn profile(&self, py: Python<'_>, text: &str) -> PyResult<(f64, f64, usize)> {
        Ok(py.detach(|| self.inner.profile(text))?)
    }

    /// Highest id + 1.
    #[getter]
    fn n_vocab(&self) -> usize {
        self.inner.bpe().id_limit()
    }

    /// True for tiktoken-style ranks (whole-piece lookup), False for vocab + merges.
    #[getter]
    fn is_ranks(&self) -> bool {
        self.inner.bpe().is_ranks()
    }

    /// The sha256 of what this encoder encodes with ([`Encoder::fingerprint`]).
    fn fingerprint(&self) -> PyResult<String> {
        Ok(self.inner.fingerprint()?)
    }

    #[getter]
    fn pattern(&self) -> &str {
        self.inner.pretokenizer().pattern()
    }

    /// Where files may be cut for this encoder, as `file_ranges` takes it: a pattern
    /// whose line cuts hold (a pattern with none where no line cut holds), and the
    /// special tokens a cut may lie before.
    fn cut_rule(&self) -> (&'static str, Vec<String>) {
        let pattern = match self.inner.cut_kind() {
            Kind::Gpt2 => "gpt2",
            Kind::Cl100k => "cl100k",
            Kind::O200k => "o200k",
            // Any pattern on the regex engine: it has no line cuts.
            Kind::Custom => r"(?s:.)",
        };
        let specials = match self.inner.cuts_at_specials() {
            true => self.inner.specials().matcher.tokens().to_vec(),
            false => Vec::new(),
        };
        (pattern, specials)
    }

    #[pyo3(signature = (allowed = None, disallowed = Vec::new()))]
    fn stream(&self, allowed: Option<Vec<String>>, disallowed: Vec<String>) -> PyResult<PyStream> {
        let allowed = self.allowed(allowed)?.into_owned();
        let disallowed = self.disallowed(disallowed)?.unwrap_or_default();
        Ok(PyStream {
            inner: StreamEncoder::new(self.inner.clone(), allowed, disallowed)?,
        })
    }

    /// Encodes the documents of `inputs` (see `inputs.rs`) into one `.npy` with the
    /// options of `job`; returns the number of tokens, of text bytes read
    /// (decompressed), and what was read.
    #[pyo3(signature = (inputs, output, job, progress = None))]
    fn encode_files<'py>(
        &self,
        inputs: &Bound<'py, PyAny>,
        output: PathBuf,
        job: PyJob,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<(u64, u64, Bound<'py, PyDict>)> {
        encode_files::encode_files(&self.inner, inputs, output, job, progress)
    }

    /// Encodes the documents of `inputs` into the dataset folder `out_dir` (shards and
    /// document indexes; the manifest is Python's, told of each shard by
    /// `on_shard(split, shard)`); `resume`: `[(kept, next), ...]` a split each, to go
    /// on from an earlier run. Returns the shards written, the documents, the stats
    /// and the hash of the feeds `job.digest` names (`fed_sha256`).
    #[pyo3(signature = (inputs, out_dir, job, resume = None, on_shard = None, progress = None))]
    fn encode_dataset<'py>(
        &self,
        inputs: &Bound<'py, PyAny>,
        out_dir: PathBuf,
        job: PyJob,
        resume: ResumeArg<'py>,
        on_shard: Option<Py<PyAny>>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let inner = &self.inner;
        encode_files::encode_dataset(inner, inputs, out_dir, job, resume, on_shard, progress)
    }

    /// Encodes the documents of `inputs` (a unit of a distributed dataset encode) into
    /// the unit file `output`, to be replayed by `assemble_dataset`; returns the number
    /// of tokens, of text bytes read, what was read, the file's CRC-32 and its
    /// skeleton (a tuple per item). `table_bytes`: `FileOptions::table_bytes`.
    #[pyo3(signature = (inputs, output, job, progress = None, table_bytes = 0))]
    fn encode_unit<'py>(
        &self,
        inputs: &Bound<'py, PyAny>,
        output: PathBuf,
        job: PyJob,
        progress: Option<Py<PyAny>>,
        table_bytes: u64,
    ) -> PyResult<encode_files::UnitDone<'py>> {
        encode_files::encode_unit(&self.inner, inputs, output, job, progress, table_bytes)
    }

    /// Writes the dataset folder `out_dir` from the unit files of `assembly` as
    /// `encode_dataset` writes it from the inputs they were encoded from.
    #[pyo3(signature = (assembly, out_dir, job, on_shard = None, progress = None))]
    fn assemble_dataset<'py>(
        &self,
        py: Python<'py>,
        assembly: PyAssembly,
        out_dir: PathBuf,
        job: PyJob,
        on_shard: Option<Py<PyAny>>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let inner = &self.inner;
        encode_files::assemble_dataset(py, inner, assembly, out_dir, job, on_shard, progress)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyEncoder>()?;
    m.add_class::<PyStream>()?;
    m.add_function(wrap_pyfunction!(hf_normalize, m)?)?;
    Ok(())
}
