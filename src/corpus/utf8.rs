//! Decoding input bytes as UTF-8 under the caller's policy.

use std::borrow::Cow;
use std::ops::Range;

use super::source::Source;
use crate::error::{Error, Result};

/// What to do with bytes that are not UTF-8.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Utf8Policy {
    /// Fail, naming the file and byte offset.
    Strict,
    /// Replace each maximal invalid subsequence with U+FFFD, as Python's `errors="replace"`.
    Replace,
    /// Drop invalid bytes, as Python's `errors="ignore"`.
    Ignore,
}

impl Utf8Policy {
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "strict" => Ok(Self::Strict),
            "replace" => Ok(Self::Replace),
            "ignore" => Ok(Self::Ignore),
            other => Err(Error::invalid(format!(
                "errors must be \"strict\", \"replace\" or \"ignore\", not {other:?}"
            ))),
        }
    }
}

/// Decodes one chunk of `source` that starts at byte `offset` of the file.
pub(crate) fn decode<'a>(
    source: &'a Source,
    range: Range<usize>,
    policy: Utf8Policy,
) -> Result<Cow<'a, str>> {
    let bytes = &source.bytes()[range.clone()];
    // The common case, valid text, checked at ~2x the speed of `std` (4% of a 1-thread
    // count of en-small went to validation); `std` then says where an error is.
    let valid = simdutf8::basic::from_utf8(bytes);
    // Validation read every byte: a file truncated since (or before) is seen here,
    // before the zeros read in its place are used.
    if source.faulted() {
        source.check_intact()?;
    }
    if let Ok(s) = valid {
        return Ok(Cow::Borrowed(s));
    }
    match std::str::from_utf8(bytes) {
        Ok(s) => Ok(Cow::Borrowed(s)),
        Err(e) => match policy {
            Utf8Policy::Strict => Err(Error::InvalidUtf8 {
                path: source.path.clone(),
                offset: (range.start + e.valid_up_to()) as u64,
            }),
            Utf8Policy::Replace => Ok(Cow::Owned(String::from_utf8_lossy(bytes).into_owned())),
            Utf8Policy::Ignore => Ok(Cow::Owned(decode_ignoring_errors(bytes))),
        },
    }
}

pub(super) fn decode_ignoring_errors(mut bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    loop {
        match std::str::from_utf8(bytes) {
            Ok(s) => {
                out.push_str(s);
                return out;
            }
            Err(e) => {
                let (good, rest) = bytes.split_at(e.valid_up_to());
                // SAFETY-free: `good` was just validated.
                out.push_str(std::str::from_utf8(good).unwrap_or_default());
                let skip = e.error_len().unwrap_or(rest.len());
                bytes = &rest[skip..];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ignore_and_replace_match_python() {
        let s = Source::from_bytes("t", b"a\xffb\xe2\x82c".to_vec());
        assert_eq!(decode(&s, 0..6, Utf8Policy::Ignore).unwrap(), "abc");
        assert_eq!(
            decode(&s, 0..6, Utf8Policy::Replace).unwrap(),
            "a\u{fffd}b\u{fffd}c"
        );
        match decode(&s, 0..6, Utf8Policy::Strict) {
            Err(Error::InvalidUtf8 { offset, .. }) => assert_eq!(offset, 1),
            other => panic!("{other:?}"),
        }
    }
}
