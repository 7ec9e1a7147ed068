//! Core errors -> Python exceptions, keeping the core's message (what and where) and
//! adding what a Python caller can do about it, in the Python API's words.

use pyo3::exceptions::{
    PyFileNotFoundError, PyIsADirectoryError, PyKeyError, PyKeyboardInterrupt, PyMemoryError,
    PyOSError, PyOverflowError, PyPermissionError, PyRuntimeError, PyValueError,
};
use pyo3::PyErr;

use crate::error::Error;

impl From<Error> for PyErr {
    fn from(e: Error) -> PyErr {
        let msg = e.to_string();
        match e {
            Error::Feed(inner) => match inner.downcast::<PyErr>() {
                Ok(raised) => *raised,
                Err(other) => PyRuntimeError::new_err(other.to_string()),
            },
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
            Error::Internal(_) => PyRuntimeError::new_err(msg),
            Error::DisallowedSpecial { token } => PyValueError::new_err(disallowed_message(&token)),
            Error::InvalidUtf8 { .. } => PyValueError::new_err(format!(
                "{msg}; pass errors=\"replace\" or errors=\"ignore\" to decode it anyway"
            )),
            // The core's message ends with what to do (bad_records="skip", text_field=).
            Error::BadRecord(_) => PyValueError::new_err(msg),
            Error::InvalidArgument(_) | Error::Format { .. } | Error::Regex(_) => {
                PyValueError::new_err(msg)
            }
        }
    }
}

/// tiktoken's error for a disallowed special token found in the text, word for word
/// (the token quoted as Python's `repr` quotes it).
fn disallowed_message(token: &str) -> String {
    let token = python_repr(token);
    format!(
        "Encountered text corresponding to disallowed special token {token}.\n\
         If you want this text to be encoded as a special token, pass it to `allowed_special`, \
         e.g. `allowed_special={{{token}, ...}}`.\n\
         If you want this text to be encoded as normal text, disable the check for this token \
         by passing `disallowed_special=(enc.special_tokens_set - {{{token}}})`.\n\
         To disable this check for all special tokens, pass `disallowed_special=()`.\n"
    )
}

/// `repr(s)` as Python writes it for a printable string: single quotes, or double
/// quotes when it holds a single quote and no double one; backslashes, the quote
/// and control characters escaped.
fn python_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_quoted_as_python_quotes_them() {
        assert_eq!(python_repr("<|endoftext|>"), "'<|endoftext|>'");
        assert_eq!(python_repr("it's"), "\"it's\"");
        assert_eq!(python_repr("'\""), "'\\'\"'");
        assert_eq!(python_repr("a\\b\n\u{1}"), "'a\\\\b\\n\\x01'");
    }
}
