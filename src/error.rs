//! One error type for the core. Every variant says what went wrong and where;
//! `py` maps them to ValueError / KeyError / OSError / OverflowError /
//! KeyboardInterrupt / MemoryError / RuntimeError, and words the ones whose text is a
//! Python API's (a disallowed special token, an encoding argument).

use std::fmt;
use std::path::PathBuf;

#[derive(Debug)]
pub enum Error {
    /// A file could not be opened, read or written.
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Input bytes are not UTF-8 and the caller asked for strict decoding. (`py` adds
    /// how to decode it anyway, in the words of the Python API.)
    InvalidUtf8 { path: PathBuf, offset: u64 },
    /// A token id that the vocabulary does not hold.
    UnknownTokenId { id: u32 },
    /// A bad argument (vocab size, special tokens, pattern, ...).
    InvalidArgument(String),
    /// A malformed input file (counts file, vocab, ranks).
    Format {
        path: PathBuf,
        line: usize,
        message: String,
    },
    /// A count past what a u64 holds (adding word counts whose total would).
    Overflow(String),
    /// The regex engine gave up (e.g. backtracking limit) on some input.
    Regex(String),
    /// The caller asked to stop (Ctrl-C).
    Cancelled,
    /// An allocation whose size comes from the input failed (a memory limit, or
    /// too little memory): what was being made, and its size in bytes.
    OutOfMemory { what: &'static str, bytes: usize },
    /// The text holds a special token the caller did not allow (`py` words it as
    /// tiktoken does).
    DisallowedSpecial { token: String },
    /// A record of a corpus that holds no document (not JSON, no such field, invalid
    /// UTF-8, a special token under `special_in_text="error"`): where, and why.
    BadRecord(String),
    /// An error a feed of documents raised (a Python exception), passed through.
    Feed(Box<dyn std::error::Error + Send + Sync>),
    /// A failure inside bpekit, not in its input: a worker thread panicked, a lock
    /// was poisoned. A bug to report.
    Internal(String),
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Error::InvalidArgument(message.into())
    }
    pub(crate) fn internal(message: impl Into<String>) -> Self {
        Error::Internal(message.into())
    }
    /// The error for a worker thread that panicked with `payload` (what
    /// `JoinHandle::join` or `catch_unwind` gives): a bug, not bad input.
    pub(crate) fn from_panic(payload: &(dyn std::any::Any + Send)) -> Self {
        let message = match (
            payload.downcast_ref::<&str>(),
            payload.downcast_ref::<String>(),
        ) {
            (Some(s), _) => s,
            (_, Some(s)) => s.as_str(),
            _ => "no message",
        };
        Error::Internal(format!("a worker thread panicked: {message}"))
    }
    /// An allocation of `count` items of `T` for `what` failed.
    pub(crate) fn out_of_memory<T>(what: &'static str, count: usize) -> Self {
        Error::OutOfMemory {
            what,
            bytes: count.saturating_mul(std::mem::size_of::<T>()),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { path, source } => write!(f, "{}: {}", path.display(), source),
            Error::InvalidUtf8 { path, offset } => write!(
                f,
                "{}: invalid UTF-8 at byte offset {offset}",
                path.display()
            ),
            Error::UnknownTokenId { id } => write!(f, "token id {id} is not in the vocabulary"),
            Error::InvalidArgument(m) | Error::Overflow(m) | Error::BadRecord(m) => f.write_str(m),
            Error::Format {
                path,
                line,
                message,
            } => {
                write!(f, "{}:{line}: {message}", path.display())
            }
            Error::Regex(m) => write!(f, "pre-tokenizer regex failed: {m}"),
            Error::Cancelled => f.write_str("interrupted"),
            Error::DisallowedSpecial { token } => {
                write!(f, "the text holds the disallowed special token {token:?}")
            }
            Error::Internal(m) => write!(f, "internal error (a bug in bpekit): {m}"),
            Error::Feed(e) => write!(f, "{e}"),
            Error::OutOfMemory { what, bytes } => write!(
                f,
                "out of memory: could not allocate {:.1} MB for {what}",
                *bytes as f64 / 1e6
            ),
        }
    }
}

impl std::error::Error for Error {}
