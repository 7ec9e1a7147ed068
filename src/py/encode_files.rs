//! The file and dataset jobs of the `Encoder` class: inputs into one `.npy`, into a
//! dataset folder, into the unit file of a distributed encode, and unit files into a
//! dataset folder. Each takes a `bpekit.dataset.job.Job` ([`PyJob`]), converted once,
//! and runs with the GIL released.

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyIterator, PyList};

use super::dataset::{hex, report_to, resume_of, shard_dict, PyJob};
use super::inputs::{inputs_of, stats_dict};
use super::progress::{check_room, run_with_progress};
use crate::dataset::{
    assemble_dataset as assemble, encode_dataset as encode_shards, encode_inputs,
    encode_unit as encode_unit_file, Assembly, DatasetSummary, FileOptions, UnitFile,
};
use crate::encode::Encoder;

/// The tokens written, the text bytes read (decompressed) and what was read.
type Written<'py> = (u64, u64, Bound<'py, PyDict>);

/// A unit file written: its tokens, text bytes read, stats, CRC-32, and skeleton (a
/// tuple per item: input, at, documents, read, skipped, offset, ids, cuts as
/// little-endian `u64` bytes).
pub(crate) type UnitDone<'py> = (u64, u64, Bound<'py, PyDict>, u32, Bound<'py, PyList>);

/// `[(kept, next or None), ...]`, a split each: where a dataset run goes on.
pub(crate) type ResumeArg<'py> = Option<Vec<(usize, Option<Bound<'py, PyDict>>)>>;

/// `Encoder.encode_files`: the documents of `inputs` into the `.npy` `output`.
pub(crate) fn encode_files<'py>(
    encoder: &Arc<Encoder>,
    inputs: &Bound<'py, PyAny>,
    output: PathBuf,
    job: PyJob,
    progress: Option<Py<PyAny>>,
) -> PyResult<Written<'py>> {
    check_room()?;
    let py = inputs.py();
    let options = job.file_options()?;
    let inputs = inputs_of(inputs)?;
    let encoder = encoder.clone();
    let (n, stats) = run_with_progress(py, progress, move |p| {
        encode_inputs(&encoder, inputs, &output, options, p)
    })?;
    Ok((n, stats.bytes, stats_dict(py, &stats)?))
}

/// `Encoder.encode_dataset`: the documents of `inputs` into the shards of the dataset
/// folder `out_dir`, going on after `resume`'s shards, telling `on_shard` of each.
pub(crate) fn encode_dataset<'py>(
    encoder: &Arc<Encoder>,
    inputs: &Bound<'py, PyAny>,
    out_dir: PathBuf,
    job: PyJob,
    resume: ResumeArg<'py>,
    on_shard: Option<Py<PyAny>>,
    progress: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    check_room()?;
    let py = inputs.py();
    let options = job.file_options()?;
    let layout = job.layout()?;
    let run = job.dataset_run(resume_of(resume)?, report_to(on_shard));
    let inputs = inputs_of(inputs)?;
    let encoder = encoder.clone();
    let summary = run_with_progress(py, progress, move |p| {
        encode_shards(&encoder, inputs, &out_dir, options, layout, p, run)
    })?;
    summary_dict(py, &summary)
}

/// `Encoder.encode_unit`: the documents of `inputs` (a unit of a distributed encode)
/// into the unit file `output`.
pub(crate) fn encode_unit<'py>(
    encoder: &Arc<Encoder>,
    inputs: &Bound<'py, PyAny>,
    output: PathBuf,
    job: PyJob,
    progress: Option<Py<PyAny>>,
    table_bytes: u64,
) -> PyResult<UnitDone<'py>> {
    check_room()?;
    let py = inputs.py();
    let options = FileOptions {
        table_bytes,
        ..job.unit_options()?
    };
    let inputs = inputs_of(inputs)?;
    let encoder = encoder.clone();
    let done = run_with_progress(py, progress, move |p| {
        encode_unit_file(&encoder, inputs, &output, options, p)
    })?;
    let items = PyList::empty(py);
    for item in &done.items {
        let cuts = PyBytes::new_with(py, item.cuts.len() * 8, |buf| {
            for (d, c) in buf.chunks_exact_mut(8).zip(&item.cuts) {
                d.copy_from_slice(&c.to_le_bytes());
            }
            Ok(())
        })?;
        let at = (item.input, item.at, item.documents, item.read, item.skipped);
        items.append((at.0, at.1, at.2, at.3, at.4, item.offset, item.ids, cuts))?;
    }
    let stats = stats_dict(py, &done.stats)?;
    Ok((done.tokens, done.stats.bytes, stats, done.crc32, items))
}

/// The unit files an assembly replays (`bpekit.distributed.dataset.UnitFiles`):
/// `units`, an iterable of `(path, first input)` in input order, each given once its
/// file is ready (`next` may wait); `is_text`, whether each input is a text file;
/// `size`, the unit files' bytes, for progress (0: not known).
#[derive(FromPyObject)]
pub(crate) struct PyAssembly {
    units: Py<PyAny>,
    is_text: Vec<bool>,
    size: u64,
}

/// `Encoder.assemble_dataset`: the dataset folder `out_dir` from unit files, as
/// `encode_dataset` writes it from the inputs they were encoded from.
pub(crate) fn assemble_dataset<'py>(
    py: Python<'py>,
    encoder: &Arc<Encoder>,
    assembly: PyAssembly,
    out_dir: PathBuf,
    job: PyJob,
    on_shard: Option<Py<PyAny>>,
    progress: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    check_room()?;
    let options = job.assembly_options()?;
    let layout = job.layout()?;
    let assembly = Assembly {
        units: Box::new(PyUnits(assembly.units.bind(py).try_iter()?.unbind())),
        is_text: assembly.is_text,
        size: assembly.size,
    };
    let mut run = job.dataset_run(None, report_to(on_shard));
    // The units' documents were hashed, where at all, by whoever encoded them.
    run.digest.clear();
    let encoder = encoder.clone();
    let summary = run_with_progress(py, progress, move |p| {
        assemble(&encoder, assembly, &out_dir, options, layout, p, run)
    })?;
    summary_dict(py, &summary)
}

/// The unit files of an assembly, from a Python iterable of `(path, first input)`;
/// what it raises is passed through.
struct PyUnits(Py<PyIterator>);

impl Iterator for PyUnits {
    type Item = crate::error::Result<UnitFile>;

    fn next(&mut self) -> Option<Self::Item> {
        Python::attach(|py| {
            let item = self.0.bind(py).clone().next()?;
            let unit = item
                .and_then(|u| u.extract::<(PathBuf, usize)>())
                .map(|(path, first_input)| UnitFile { path, first_input })
                .map_err(|e| crate::error::Error::Feed(Box::new(e)));
            Some(unit)
        })
    }
}

/// A dataset run's summary: its shards (with their splits), documents and stats.
fn summary_dict<'py>(py: Python<'py>, summary: &DatasetSummary) -> PyResult<Bound<'py, PyDict>> {
    let shards = PyList::empty(py);
    for shard in &summary.shards {
        let d = shard_dict(py, shard)?;
        d.set_item("split", shard.split)?;
        shards.append(d)?;
    }
    let out = PyDict::new(py);
    out.set_item("shards", shards)?;
    out.set_item("documents", summary.documents)?;
    out.set_item("stats", stats_dict(py, &summary.stats)?)?;
    out.set_item("fed_sha256", summary.fed.as_ref().map(hex))?;
    Ok(out)
}
