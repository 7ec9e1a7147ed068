//! A dataset's shards and resume points as Python dicts (the manifest's entries), and
//! back; the report of each finished shard to a Python callback.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::corpus::Tally;
use crate::encode::{Checkpoint, OnShard, Place, ShardInfo, ShardStart, SplitResume};

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
    Ok(d)
}

fn start_of(d: &Bound<'_, PyDict>) -> PyResult<ShardStart> {
    fn get<'py, T: FromPyObjectOwned<'py>>(d: &Bound<'py, PyDict>, key: &str) -> PyResult<T> {
        match d.get_item(key)? {
            Some(v) => v.extract().map_err(Into::into),
            None => Err(pyo3::exceptions::PyValueError::new_err(format!(
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
