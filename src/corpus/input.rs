//! What a job reads: files of text or of JSON lines (plain, `.gz` or `.zst`), streams
//! of such a file's bytes (an object in a store, read through the bindings), and feeds
//! of documents (Python iterables and Parquet batches, through the bindings).
//! Each record of a record format (a JSON line, a row, an item) is one document.

use std::io::Read;
use std::ops::Range;
use std::path::{Path, PathBuf};

use super::jsonl::FieldPath;
use crate::error::{Error, Result};

/// How a file's bytes are read.
#[derive(Clone, Debug)]
pub enum Format {
    /// Text, split at its special tokens (or not, under `special_in_text`).
    Text,
    /// One JSON object per line; the document is the string at the field path.
    Jsonl(FieldPath),
}

/// Documents a feed hands over at once: the text of `offsets.len() - 1` documents,
/// document `i` being `data[offsets[i]..offsets[i + 1]]`.
pub struct DocBatch {
    pub data: Box<dyn AsRef<[u8]> + Send + Sync>,
    pub offsets: Vec<usize>,
    /// Where the documents are, for messages: the row group, if any, and the row (or
    /// item) number of the first document.
    pub row_group: Option<u64>,
    pub first_row: u64,
    /// What a document is called in messages without a row group: "row", "item".
    pub unit: &'static str,
    /// Records of the batch that hold no document (a row or item number, and why):
    /// reported, or skipped and counted, under `bad_records`.
    pub bad: Vec<(u64, String)>,
}

/// A source of documents that is not a file bpekit opens: the bindings implement it
/// over a Python iterator. Errors it returns (a Python exception) pass through.
pub trait Feed: Send {
    /// The next batch, or `None` at the end.
    fn next_batch(&mut self) -> Result<Option<DocBatch>>;
}

/// One input of a job.
pub enum Input {
    /// A file; `range`, when given, is the byte range of a plain file to read (a unit
    /// of a distributed job, planned at a safe cut or a line start), not the whole.
    File {
        path: PathBuf,
        format: Format,
        range: Option<Range<u64>>,
    },
    /// The bytes of a file that bpekit does not open itself (an object in a store),
    /// read as they come, a block at a time, as a compressed file is; `name` (a URL)
    /// is how messages name it, and its compression comes from its extension. Errors
    /// that `reader` returns wrapped in [`Raised`] pass through unchanged.
    Stream {
        name: String,
        format: Format,
        reader: Box<dyn Read + Send>,
        /// Its size (compressed), for the progress report.
        size: u64,
    },
    Feed {
        name: String,
        feed: Box<dyn Feed>,
    },
}

/// An error of a stream's source (a Python exception), carried through `std::io`
/// reads and decompressors to the caller unchanged ([`Error::Feed`]).
#[derive(Debug)]
pub struct Raised(pub Box<dyn std::error::Error + Send + Sync>);

impl std::fmt::Display for Raised {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Raised {}

/// The error a stream's source raised, if `e` carries one ([`Raised`]), else `e`.
pub(crate) fn raised(e: std::io::Error) -> std::result::Result<Error, std::io::Error> {
    if !e.get_ref().is_some_and(|inner| inner.is::<Raised>()) {
        return Err(e);
    }
    match e.into_inner().map(|inner| inner.downcast::<Raised>()) {
        Some(Ok(r)) => Ok(Error::Feed(r.0)),
        _ => Ok(Error::internal("a stream's error was lost")),
    }
}

impl Input {
    /// The text files `paths`, as inputs.
    pub fn text_files(paths: &[PathBuf]) -> Vec<Input> {
        paths
            .iter()
            .map(|p| Input::File {
                path: p.clone(),
                format: Format::Text,
                range: None,
            })
            .collect()
    }

    /// Whether its documents are text split at special tokens, not records.
    pub(crate) fn is_text(&self) -> bool {
        match self {
            Input::File { format, .. } | Input::Stream { format, .. } => {
                matches!(format, Format::Text)
            }
            Input::Feed { .. } => false,
        }
    }

    /// How messages name the input.
    pub(crate) fn name(&self) -> String {
        match self {
            Input::File { path, .. } => path.display().to_string(),
            Input::Stream { name, .. } => name.clone(),
            Input::Feed { name, .. } => name.clone(),
        }
    }
}

/// How a file is compressed, by its name's last extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Compression {
    None,
    Gzip,
    Zstd,
}

impl Compression {
    pub(crate) fn of(path: &Path) -> Self {
        match path.extension().and_then(|e| e.to_str()) {
            Some("gz") => Compression::Gzip,
            Some("zst") => Compression::Zstd,
            _ => Compression::None,
        }
    }

    /// The file extension, for messages.
    pub(crate) fn suffix(self) -> &'static str {
        match self {
            Compression::None => "",
            Compression::Gzip => ".gz",
            Compression::Zstd => ".zst",
        }
    }
}

/// What to do with a special token's text inside a document (`special_in_text`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpecialPolicy {
    /// The special token (the default for text files, whose separators are in the text).
    Special,
    /// Ordinary text (the default for records: web pages hold `<|endoftext|>`).
    Text,
    /// A bad record (in a text file: an error).
    Error,
}

impl SpecialPolicy {
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "special" => Ok(Self::Special),
            "text" => Ok(Self::Text),
            "error" => Ok(Self::Error),
            other => Err(Error::invalid(format!(
                "special_in_text must be \"special\", \"text\" or \"error\", not {other:?}"
            ))),
        }
    }
}

/// What to do with a record that holds no document (not JSON, no such field, not a
/// string, invalid UTF-8).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BadRecords {
    Error,
    Skip,
}

impl BadRecords {
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "error" => Ok(Self::Error),
            "skip" => Ok(Self::Skip),
            other => Err(Error::invalid(format!(
                "bad_records must be \"error\" or \"skip\", not {other:?}"
            ))),
        }
    }
}
