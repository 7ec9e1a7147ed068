//! Encoding: ranks, byte-pair merge of one piece, piece cache, batch and file encoding.
//!
//! - [`table`]: the vocabulary and the pair table `(left, right) -> (rank, new id)`,
//!   built from a CS336 merges list or from tiktoken ranks.
//! - [`longparts`]: the long tokens that begin or end a token (for `table`).
//! - [`merge`]: the byte-pair merge of one piece (a scan for short pieces, a heap
//!   over a linked list for long ones).
//! - [`short`]: every short piece seen -> its ids, one cache line per lookup.
//! - [`cache`]: a bounded cache of the other pieces that never allocates on a hit.
//! - [`batched`]: the inner loop: pieces keyed, prefetched, looked up and emitted.
//! - [`prefault`]: faults a fresh output buffer in ahead of the writes.
//! - [`rankfile`]: parsing `.tiktoken` rank files for `get_encoding`.
//! - [`encoder`]: special tokens + pre-tokenizer + merge: text -> ids, batches, decode.
//! - [`stream`]: `encode_iterable`, emitting only ids that no later text can change.
//! - [`wide`]: text stored as code points (a Python `str`), transcoded a round at a time.
//! - [`file`] and [`npy`]: files -> one `.npy` of token ids, in parallel, in bounded memory.

pub mod batched;
pub mod cache;
pub mod encoder;
pub mod file;
mod longparts;
pub mod merge;
pub mod npy;
pub mod ordered;
pub mod outfile;
pub mod pairs;
pub mod prefault;
pub mod rankfile;
pub mod short;
pub mod shortids;

pub mod stream;
pub mod table;
pub mod wide;

pub use crate::specials::Specials;
pub use encoder::Encoder;
pub use table::Bpe;
