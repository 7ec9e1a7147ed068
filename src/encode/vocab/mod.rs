//! The vocabulary: token bytes and ids, the pair table merging runs on, the merge of
//! one piece, and the rank files vocabularies come in.
//!
//! Inside this layer: `pairs` (the pair table and a thread's cache of it) and
//! `shortids`/`longparts` (lookups used while building), `longtokens` (a filter of
//! the long tokens for whole-piece lookups), `chars` (the first parts
//! of a piece in a vocabulary of characters) and `cuts` (where a piece may be cut
//! into parts that merge apart) come first, then `bpe` (the vocabulary;
//! `bpe::ranks` builds it from tiktoken ranks), then `merge` (which merges with a
//! vocabulary and recovers merges from ranks), then `rankfile` (parsing).

mod bpe;
mod chars;
mod cuts;
mod longparts;
mod longtokens;
mod merge;
mod pairs;
mod rankfile;
mod shortids;

pub use bpe::Bpe;
pub use chars::{byte_token_text, CharSpec};
pub(crate) use merge::recover_merges;
pub use merge::{merge_piece, Scratch};
pub use rankfile::Format as RankFormat;
