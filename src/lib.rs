//! bpekit's core: the hot paths of byte-level BPE.
//!
//! A plain Rust crate: `cargo test` needs no Python. The PyO3 bindings live in
//! [`py`] behind the `python` feature and are the only place Python types appear.

pub mod atomic;
pub mod corpus;
pub mod count;
pub mod encode;
pub mod error;
pub mod hugemem;
pub mod ids;
pub mod mapguard;
pub mod piecekey;
pub mod pool;
pub mod pretokenize;
pub mod progress;
pub mod specials;
pub mod train;

#[cfg(test)]
mod testutil;

pub use error::{Error, Result};

#[cfg(feature = "python")]
mod py;
