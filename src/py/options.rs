//! The typed options of `bpekit.options` (`ReadOptions`, `RunOptions`), read from the
//! Python objects' attributes once, as the core's own option structs. The Python side
//! checks them when it makes them; the core parses the names again so a hand-made
//! object cannot pass an unknown one.

use pyo3::prelude::*;

use crate::corpus::{BadRecords, ReadOptions, SpecialPolicy, Utf8Policy};

/// `bpekit.options.ReadOptions`: the fields the core reads (`format` and `text_field`
/// are resolved into sources in Python).
#[derive(FromPyObject)]
pub(crate) struct PyReadOptions {
    special_in_text: Option<String>,
    bad_records: String,
    errors: String,
}

impl PyReadOptions {
    pub(crate) fn utf8(&self) -> PyResult<Utf8Policy> {
        Ok(Utf8Policy::parse(&self.errors)?)
    }

    pub(crate) fn read(&self) -> PyResult<ReadOptions> {
        Ok(ReadOptions {
            utf8: self.utf8()?,
            special_in_text: self
                .special_in_text
                .as_deref()
                .map(SpecialPolicy::parse)
                .transpose()?,
            bad_records: BadRecords::parse(&self.bad_records)?,
        })
    }
}

/// `bpekit.options.RunOptions`: the fields the core reads (`progress` is a callback
/// made in Python; `resume` is the dataset writer's).
#[derive(FromPyObject)]
pub(crate) struct PyRunOptions {
    pub(crate) num_threads: Option<usize>,
    pub(crate) chunk_size: usize,
}
