//! Drivers for text an encoder is not given whole: an iterable of pieces of text
//! (`encode_iterable`, in `iterable`) and text stored as code points (a Python `str`,
//! in `wide`). Both keep a buffer and encode its final prefix ([`final_prefix`]), so
//! their ids are exactly those of encoding the whole text.

mod final_prefix;
mod iterable;
mod wide;

pub use iterable::StreamEncoder;
pub(crate) use wide::encode_wide_into;
#[cfg(test)]
pub(crate) use wide::ROUND;
pub use wide::{encode_wide, Text, Wide};
