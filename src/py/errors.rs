//! Core errors -> Python exceptions, keeping the core's message (what and where).

use pyo3::exceptions::{
    PyFileNotFoundError, PyIsADirectoryError, PyKeyError, PyKeyboardInterrupt, PyMemoryError,
    PyOSError, PyOverflowError, PyPermissionError, PyValueError,
};
use pyo3::PyErr;

use crate::error::Error;

impl From<Error> for PyErr {
    fn from(e: Error) -> PyErr {
        let msg = e.to_string();
        match e {
            // ENOMEM from a map or a read (a memory limit): a MemoryError, like any.
            Error::Io { source, .. }
                if source.raw_os_error() == Some(libc::ENOMEM)
                    || source.kind() == std::io::ErrorKind::OutOfMemory =>
            {
                PyMemoryError::new_err(msg)
            }
            Error::Io { source, .. } => match source.kind() {
                std::io::ErrorKind::NotFound => PyFileNotFoundError::new_err(msg),
                std::io::ErrorKind::PermissionDenied => PyPermissionError::new_err(msg),
                std::io::ErrorKind::IsADirectory => PyIsADirectoryError::new_err(msg),
                _ => PyOSError::new_err(msg),
            },
            Error::UnknownTokenId { .. } => PyKeyError::new_err(msg),
            Error::Cancelled => PyKeyboardInterrupt::new_err(msg),
            Error::OutOfMemory { .. } => PyMemoryError::new_err(msg),
            Error::Overflow(_) => PyOverflowError::new_err(msg),
            Error::InvalidUtf8 { .. }
            | Error::InvalidArgument(_)
            | Error::Format { .. }
            | Error::Regex(_) => PyValueError::new_err(msg),
        }
    }
}
