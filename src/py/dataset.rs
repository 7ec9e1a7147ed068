//! A file or dataset encode's options (`bpekit.dataset.job.Job`, read attribute by
//! attribute) as the core's; a dataset's shards and resume points as Python dicts (the
//! manifest's entries), and back; the report of each finished shard to a Python
//! callback; a distributed dataset's shard file written from pieces of unit files.

use std::collections::HashMap;
use std::path::PathBuf;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::options::{PyReadOptions, PyRunOptions};
use crate::corpus::Tally;
use crate::dataset::{
    write_from_units, Checkpoint, DatasetOptions, DatasetRun, FileOptions, Marks, OnShard, Piece,
    Place, ShardFormat, ShardInfo, ShardStart, SplitResume,
};

/// `bpekit.dataset.options.Layout`, its `dtype` resolved for the vocabulary.
#[derive(FromPyObject)]
struct PyLayout {
    shard_tokens: u64,
    shard_format: String,
    val_fraction: f64,
    seed: u64,
    dtype: Option<String>,
    checksums: bool,
}

/// `bpekit.dataset.job.Framing`: the ids written around documents and after files.
#[derive(FromPyObject)]
struct PyFraming {
    record_bos: Option<u32>,
    record_eos: Option<u32>,
    file_bos: Option<u32>,
    file_eos: Option<u32>,
    after_each_file: Option<u32>,
}

/// `bpekit.dataset.job.Job`: a file or dataset encode's options, checked in Python and
/// resolved there against the tokenizer and the inputs; `digest`: the inputs (feeds)
/// whose documents a dataset run hashes.
#[derive(FromPyObject)]
pub(crate) struct PyJob {
    read: PyReadOptions,
    run: PyRunOptions,
    layout: PyLayout,
    framing: PyFraming,
    digest: Vec<usize>,
    tokenizer_name: String,
}

impl PyJob {
    /// The options of encoding inputs into a `.npy` or a dataset's shards.
    pub(crate) fn file_options(&self) -> PyResult<FileOptions> {
        let read = self.read.read()?;
        let f = &self.framing;
        Ok(FileOptions {
            num_threads: self.run.num_threads.unwrap_or(0),
            utf8: read.utf8,
            dtype_bytes: self.dtype_bytes()?,
            chunk_size: self.run.chunk_size,
            after_each_file: f.after_each_file,
            special_in_text: read.special_in_text,
            bad_records: read.bad_records,
            record_marks: Marks {
                bos: f.record_bos,
                eos: f.record_eos,
            },
            file_marks: Marks {
                bos: f.file_bos,
                eos: f.file_eos,
            },
            table_bytes: 0,
        })
    }

    /// The options of encoding a unit of a distributed encode: the records' marks
    /// only; the files' go around them when the units are assembled.
    pub(crate) fn unit_options(&self) -> PyResult<FileOptions> {
        Ok(FileOptions {
            after_each_file: None,
            file_marks: Marks::default(),
            ..self.file_options()?
        })
    }

    /// The options of assembling a dataset from unit files, which hold the records'
    /// ids already: the files' marks only.
    pub(crate) fn assembly_options(&self) -> PyResult<FileOptions> {
        let f = &self.framing;
        Ok(FileOptions {
            dtype_bytes: self.dtype_bytes()?,
            after_each_file: f.after_each_file,
            file_marks: Marks {
                bos: f.file_bos,
                eos: f.file_eos,
            },
            ..FileOptions::default()
        })
    }

    pub(crate) fn layout(&self) -> PyResult<DatasetOptions> {
        let l = &self.layout;
        Ok(DatasetOptions {
            format: ShardFormat::parse(&l.shard_format)?,
            tokenizer: self.tokenizer_name.as_str().into(),
            shard_tokens: l.shard_tokens,
            val_fraction: l.val_fraction,
            seed: l.seed,
        })
    }

    /// A dataset run of this job: going on after `resume`, telling `on_shard`.
    pub(crate) fn dataset_run(
        &self,
        resume: Option<Vec<SplitResume>>,
        on_shard: Option<OnShard>,
    ) -> DatasetRun {
        DatasetRun {
            resume,
            on_shard,
            skip_checksums: !self.layout.checksums,
            digest: self.digest.clone(),
        }
    }

    fn dtype_bytes(&self) -> PyResult<usize> {
        match self.layout.dtype.as_deref() {
            Some("uint16") => Ok(2),
            Some("uint32") => Ok(4),
            other => Err(PyValueError::new_err(format!(
                "the layout's dtype must be resolved to \"uint16\" or \"uint32\", not {other:?}"
            ))),
        }
    }
}

/// A shard as the manifest records it.
pub fn shard_dict<'py>(py: Python<'py>, shard: &ShardInfo) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("file", &shard.file)?;
    d.set_item("index", &shard.index)?;
    d.set_item("tokens", shard.tokens)?;
    d.set_item("documents", shard.documents)?;
    d.set_item("continues", shard.continues)?;
    d.set_item("first_document", shard.first_document)?;
    d.set_item("inputs", shard.inputs.clone())?;
    let sources = pyo3::types::PyList::empty(py);
    for &(input, first, end) in &shard.ranges {
        let r = PyDict::new(py);
        r.set_item("input", input)?;
        r.set_item("documents", vec![first, end])?;
        sources.append(r)?;
    }
    d.set_item("sources", sources)?;
    d.set_item("size", shard.size)?;
    // None where the run hashed nothing.
    let hex = |h: &String| (!h.is_empty()).then(|| h.clone());
    d.set_item("sha256", hex(&shard.sha256))?;
    d.set_item("index_sha256", hex(&shard.index_sha256))?;
    // The files a trainer reads beside the ids, where the format has any.
    if !shard.side.is_empty() {
        let side = pyo3::types::PyList::empty(py);
        for f in &shard.side {
            let e = PyDict::new(py);
            e.set_item("file", &f.file)?;
            e.set_item("size", f.size)?;
            e.set_item("sha256", hex(&f.sha256))?;
            side.append(e)?;
        }
        d.set_item("trainer_files", side)?;
    }
    match &shard.next {
        Some(next) => d.set_item("next", start_dict(py, next)?)?,
        None => d.set_item("next", py.None())?,
    }
    Ok(d)
}

/// Where a shard starts, as a flat dict of ints and bools.
fn start_dict<'py>(py: Python<'py>, s: &ShardStart) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let c = &s.from;
    d.set_item("input", c.input)?;
    d.set_item("at", c.at)?;
    d.set_item("documents_before", c.documents)?;
    d.set_item("open", c.open)?;
    d.set_item("started", c.started)?;
    d.set_item("records_before", c.read.documents)?;
    d.set_item("bytes_before", c.read.bytes)?;
    d.set_item("skipped_before", c.read.skipped)?;
    d.set_item("last_input", c.place.input)?;
    d.set_item("last_input_document", c.place.document)?;
    d.set_item("document", s.document)?;
    d.set_item("skip", s.skip)?;
    // None where no feed was digested ([`crate::dataset::digest_feeds`]).
    let fed = (c.fed != [0u8; 32]).then(|| hex(&c.fed));
    d.set_item("fed_sha256", fed)?;
    Ok(d)
}

/// Lower-case hex of a sha256.
pub fn hex(d: &[u8; 32]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// A sha256 from its hex (`None`: zero, nothing digested).
fn digest_of(hex: Option<String>) -> PyResult<[u8; 32]> {
    let Some(hex) = hex else {
        return Ok([0; 32]);
    };
    let mut out = [0u8; 32];
    let ok = hex.len() == 64
        && hex.is_ascii()
        && out.iter_mut().enumerate().all(|(k, byte)| {
            u8::from_str_radix(&hex[2 * k..2 * k + 2], 16)
                .map(|b| *byte = b)
                .is_ok()
        });
    match ok {
        true => Ok(out),
        false => Err(PyValueError::new_err(format!(
            "a shard's \"next\": \"fed_sha256\" is {hex:?}, not 64 hex digits"
        ))),
    }
}

fn start_of(d: &Bound<'_, PyDict>) -> PyResult<ShardStart> {
    // A value of the wrong type or out of range (a negative or huge count) is a
    // ValueError naming it, never a bare OverflowError.
    fn get<'py, T: FromPyObjectOwned<'py>>(d: &Bound<'py, PyDict>, key: &str) -> PyResult<T> {
        match d.get_item(key)? {
            Some(v) => v.extract().map_err(|_| {
                PyValueError::new_err(format!(
                    "a shard's \"next\": {key:?} is {}, out of range or of the wrong type",
                    v.repr().map_or_else(|_| "?".into(), |r| r.to_string())
                ))
            }),
            None => Err(PyValueError::new_err(format!(
                "a shard's \"next\" lacks {key:?}"
            ))),
        }
    }
    Ok(ShardStart {
        from: Checkpoint {
            input: get(d, "input")?,
            at: get(d, "at")?,
            documents: get(d, "documents_before")?,
            open: get(d, "open")?,
            started: get(d, "started")?,
            read: Tally {
                documents: get(d, "records_before")?,
                bytes: get(d, "bytes_before")?,
                skipped: get(d, "skipped_before")?,
            },
            place: Place {
                input: get(d, "last_input")?,
                document: get(d, "last_input_document")?,
            },
            fed: digest_of(match d.get_item("fed_sha256")? {
                Some(v) if !v.is_none() => Some(get(d, "fed_sha256")?),
                _ => None,
            })?,
        },
        document: get(d, "document")?,
        skip: get(d, "skip")?,
    })
}

/// `[(kept, next or None), ...]`, a split each, as `encode_dataset` takes it.
pub fn resume_of(
    list: Option<Vec<(usize, Option<Bound<'_, PyDict>>)>>,
) -> PyResult<Option<Vec<SplitResume>>> {
    let Some(list) = list else {
        return Ok(None);
    };
    let mut out = Vec::with_capacity(list.len());
    for (kept, next) in list {
        let next = next.as_ref().map(start_of).transpose()?;
        out.push(SplitResume { kept, next });
    }
    Ok(Some(out))
}

/// Calls `callback(split, shard)` for each finished shard, from the hasher's thread.
pub fn report_to(callback: Option<Py<PyAny>>) -> Option<OnShard> {
    let callback = callback?;
    Some(Box::new(move |shard: &ShardInfo| {
        Python::attach(|py| -> PyResult<()> {
            let d = shard_dict(py, shard)?;
            callback.call1(py, (shard.split, d))?;
            Ok(())
        })
        .map_err(|e| std::io::Error::other(format!("recording {}: {e}", shard.file)))
    }))
}

/// The sha256 chain over the documents of the feeds of `inputs` numbered in `digest`,
/// read to their end, as `Encoder.encode_dataset` comes to it (`None` where none is
/// digested): how a finished dataset tells whether it was written from them.
#[pyfunction]
#[pyo3(signature = (inputs, digest, progress = None))]
fn feeds_sha256(
    py: Python<'_>,
    inputs: &Bound<'_, PyAny>,
    digest: Vec<usize>,
    progress: Option<Py<PyAny>>,
) -> PyResult<Option<String>> {
    let inputs = super::inputs::inputs_of(inputs)?;
    let chain = super::progress::run_with_progress(py, progress, move |p| {
        crate::dataset::digest_feeds(inputs, &digest, p)
    })?;
    Ok(chain.as_ref().map(hex))
}

/// Writes a distributed dataset's shard file `path`: `header`, then each of `pieces`,
/// `(unit, byte offset, ids)` of the unit files `units` (path by unit) or `(-1, id,
/// 1)` for a mark, at `width` bytes an id. Returns its size and, with `hash`, its
/// sha256 (hex). The file appears whole or not at all.
#[pyfunction]
fn write_shard_file(
    py: Python<'_>,
    path: PathBuf,
    header: Vec<u8>,
    pieces: Vec<(i64, u64, u64)>,
    units: HashMap<i64, PathBuf>,
    width: usize,
    hash: bool,
) -> PyResult<(u64, Option<String>)> {
    if width != 2 && width != 4 {
        return Err(PyValueError::new_err(format!(
            "width {width}: ids are 2 or 4 bytes"
        )));
    }
    let mut planned = Vec::with_capacity(pieces.len());
    for (unit, offset, ids) in pieces {
        planned.push(match unit {
            -1 => Piece::Mark(u32::try_from(offset).map_err(|_| {
                PyValueError::new_err(format!("mark id {offset} is not a token id"))
            })?),
            ..0 => {
                return Err(PyValueError::new_err(format!(
                    "unit {unit}: -1 marks a mark"
                )))
            }
            _ => Piece::Ids { unit, offset, ids },
        });
    }
    let (size, sha) =
        py.detach(|| write_from_units(&path, &header, &planned, &units, width, hash))?;
    Ok((size, sha.as_ref().map(hex)))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(feeds_sha256, m)?)?;
    m.add_function(wrap_pyfunction!(write_shard_file, m)?)
}
