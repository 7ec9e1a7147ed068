//! bpekit's core: the hot paths of byte-level BPE.
//!
//! A plain Rust crate: `cargo test` needs no Python. The PyO3 bindings live in
//! [`py`] behind the `python` feature and are the only place Python types appear.
//!
//! Modules in layers, lowest first. A module uses only modules of its own layer or
//! lower ones, and no files use each other, directly or in a ring; `make lint`
//! checks both with `scripts/check_layers.py`, which reads this list.
//!
//! 1. `error`, `ids`, `piecekey`, `hugemem`, `whole_file`, `mapguard`, `progress`, `pool`:
//!    errors, token ids, piece keys, memory, output files that appear whole or not
//!    at all, guarded maps, progress and Ctrl-C, thread pools.
//! 2. `specials`, `pretokenize`: special tokens in text; text -> pieces.
//! 3. `corpus`: inputs (text and JSON-lines files, plain or compressed; feeds of
//!    documents) -> documents, in chunks that cut no piece.
//! 4. `count`: pieces -> counts (`WordCounts`).
//! 5. `train`, `encode`: counts -> vocabulary; text -> ids (layered inside, see
//!    [`encode`]).
//! 6. `dataset`: inputs -> ids written to files: one `.npy`, or a dataset of
//!    shards with document indexes (resumable, hashed, or assembled from units
//!    encoded apart), in parallel, written in order.
//! 7. `py`: the Python bindings.

pub mod corpus;
pub mod count;
pub mod dataset;
pub mod encode;
pub(crate) mod error;
pub(crate) mod hugemem;
pub mod ids;
pub(crate) mod mapguard;
pub mod piecekey;
pub(crate) mod pool;
pub mod pretokenize;
pub mod progress;
pub mod specials;
pub mod train;
pub(crate) mod whole_file;

#[cfg(test)]
mod testutil;

pub use error::{Error, Result};

#[cfg(feature = "python")]
mod py;
