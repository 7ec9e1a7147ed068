//! Drivers for text an encoder is not given whole: a stream of pieces of text
//! (`encode_iterable`) and text stored as code points (a Python `str`). Both keep a
//! buffer and encode what lies before its last final cut ([`cut`]), so their ids are
//! exactly those of encoding the whole text.

mod cut;
mod stream;
mod wide;

pub use stream::StreamEncoder;
pub(crate) use wide::encode_wide_into;
#[cfg(test)]
pub(crate) use wide::ROUND;
pub use wide::{encode_wide, Text, Wide};
