//! How a file or dataset encode runs, and how a dataset is laid out.

use std::sync::Arc;

use super::shard::ShardFormat;
use crate::corpus::{BadRecords, SpecialPolicy, Utf8Policy};

/// How a file encode runs; the output never depends on these (except `dtype_bytes`).
#[derive(Clone, Copy, Debug)]
pub struct FileOptions {
    /// Worker threads (0: all cores).
    pub num_threads: usize,
    pub utf8: Utf8Policy,
    /// 2 (uint16) or 4 (uint32).
    pub dtype_bytes: usize,
    /// Target chunk size in bytes (0: picked from the input size and thread count).
    pub chunk_size: usize,
    /// An id written after each input file, empty ones included (an end-of-text token
    /// that marks where one file's document ends and the next begins).
    pub after_each_file: Option<u32>,
    /// Special tokens in documents, bad records.
    pub special_in_text: Option<SpecialPolicy>,
    pub bad_records: BadRecords,
    /// Ids around each record's document (a JSON line, a row, an item).
    pub record_marks: Marks,
    /// Ids around each text file (one document for these).
    pub file_marks: Marks,
    /// The text the piece caches are sized for, where more than the input's own
    /// (0: the input's). A unit of a distributed encode gives the text its worker is
    /// likely to encode over the whole run, so that the worker's cache keeps the
    /// pieces of every unit it gets rather than of one.
    pub table_bytes: u64,
}

/// Ids written before (`bos`) and after (`eos`) each document of a kind.
#[derive(Clone, Copy, Debug, Default)]
pub struct Marks {
    pub bos: Option<u32>,
    pub eos: Option<u32>,
}

impl Default for FileOptions {
    fn default() -> Self {
        Self {
            num_threads: 0,
            utf8: Utf8Policy::Strict,
            dtype_bytes: 4,
            chunk_size: 0,
            after_each_file: None,
            special_in_text: None,
            bad_records: BadRecords::Error,
            record_marks: Marks::default(),
            file_marks: Marks::default(),
            table_bytes: 0,
        }
    }
}

/// How a dataset is laid out.
#[derive(Clone, Debug)]
pub struct DatasetOptions {
    pub format: ShardFormat,
    /// The tokenizer's name, which the datatrove format's metadata records.
    pub tokenizer: Arc<str>,
    pub shard_tokens: u64,
    /// The share of documents that go to `val/`, in `[0, 1)`.
    pub val_fraction: f64,
    pub seed: u64,
}

/// The splits a layout has: `train`, and `val` when `val_fraction > 0`.
pub fn split_names(layout: &DatasetOptions) -> &'static [&'static str] {
    match layout.val_fraction > 0.0 {
        true => &["train", "val"],
        false => &["train"],
    }
}
