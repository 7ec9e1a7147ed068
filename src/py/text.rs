//! A Python `str`'s text for the encoder, without CPython's cached UTF-8 copy.
//!
//! ASCII storage is UTF-8 already, and a `str` whose UTF-8 an earlier call cached
//! gives that; any other is read as its code points and transcoded a round at a time
//! by the encoder ([`crate::encode::Wide`], which says why).

use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::encode::{Text, Wide};

/// The text of `s`, borrowed for as long as `s` is: a `str` never changes its storage.
pub fn text_of<'a>(s: &'a Bound<'_, PyString>) -> PyResult<Text<'a>> {
    // The storage layout is read as CPython 3.11-3.13 defines it (the interpreter
    // being built for, through pyo3's cfgs); elsewhere the cached UTF-8 is used.
    #[cfg(not(any(Py_LIMITED_API, PyPy, GraalPy, Py_3_14)))]
    // SAFETY: `s` is a live `str` (the type guarantees it) that the caller keeps alive
    // for `'a`; its storage is never modified. A compact string's data, length and
    // kind are as the accessors give them, and its UTF-8, once cached, stays until
    // the string is freed.
    unsafe {
        use pyo3::ffi;
        let op = s.as_ptr();
        if ffi::PyUnicode_IS_COMPACT(op) != 0 {
            let len = ffi::PyUnicode_GET_LENGTH(op) as usize;
            let data = ffi::PyUnicode_DATA(op);
            if ffi::PyUnicode_IS_ASCII(op) != 0 {
                let bytes = std::slice::from_raw_parts(data as *const u8, len);
                return Ok(Text::Utf8(std::str::from_utf8_unchecked(bytes)));
            }
            let compact = &*(op as *const ffi::PyCompactUnicodeObject);
            if !compact.utf8.is_null() {
                let n = compact.utf8_length as usize;
                let bytes = std::slice::from_raw_parts(compact.utf8 as *const u8, n);
                return Ok(Text::Utf8(std::str::from_utf8_unchecked(bytes)));
            }
            return Ok(Text::Wide(match ffi::PyUnicode_KIND(op) {
                ffi::PyUnicode_1BYTE_KIND => {
                    Wide::Latin1(std::slice::from_raw_parts(data as *const u8, len))
                }
                ffi::PyUnicode_2BYTE_KIND => {
                    Wide::Ucs2(std::slice::from_raw_parts(data as *const u16, len))
                }
                _ => Wide::Ucs4(std::slice::from_raw_parts(data as *const u32, len)),
            }));
        }
    }
    Ok(Text::Utf8(s.to_str()?))
}
