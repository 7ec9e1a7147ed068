//! Encoding: text -> token ids, in layers, lowest first. Each layer uses only layers
//! before it in this list, and no files use each other, directly or in a ring;
//! `make lint` checks both with `scripts/check_layers.py`, which reads this list.
//!
//! 1. `vocab`: the vocabulary. [`Bpe`] (token bytes, the pair table
//!    `(left, right) -> (rank, new id)`, whole-token lookup), the merge of one piece
//!    by rank, recovering merges from ranks, `.tiktoken` and GPT-2 rank files.
//! 2. `cache`: piece caches. The short cache (pieces of up to 15 bytes -> ids, one
//!    cache line per lookup, shareable lock-free between threads on x86_64: the only
//!    inline assembly) and the long cache (any other piece up to 1 KiB).
//! 3. `engine`: the hot loop. A [`Workspace`](engine::Workspace) per thread (caches,
//!    merge buffers), the pool of workspaces and the table threads share, and the
//!    [`Engine`](engine::Engine): pieces keyed and prefetched a batch ahead, looked
//!    up, and merged on a miss.
//! 4. `hf`: the front of a tokenizer loaded from HF `tokenizer.json`: added tokens,
//!    normalizers and the prefix space, around the engine.
//! 5. `encoder`: [`Encoder`], the whole type in one file: vocabulary + pre-tokenizer
//!    + special tokens (+ an HF front); encode one text, decode.
//! 6. `text`: drivers that feed an encoder text it does not hold whole: iterables
//!    of text (`encode_iterable`) and code-point text (a Python `str`), both
//!    emitting a buffer's final prefix, the part no later text can change.
//! 7. `parallel`: many texts across threads, on the process's pools (`crate::pool`):
//!    all ids at the end, or each text's in order as soon as it is done.
//!
//! Writing what is encoded to files (one `.npy`, or a dataset of shards) is the
//! layer above, `crate::dataset`.
//!
//! Below all of them: `crate::ids` (NONE, MAX_IDS, pair packing), `crate::piecekey`
//! (piece keys and their hash), `crate::pretokenize`, `crate::specials`,
//! `crate::corpus` (inputs and safe cuts), `crate::pool`.

pub(crate) mod cache;
pub(crate) mod encoder;
pub(crate) mod engine;
pub(crate) mod hf;
pub(crate) mod parallel;
pub(crate) mod text;
pub(crate) mod vocab;

pub use crate::specials::Specials;
pub use encoder::{CharWords, Encoder};
/// For `crate::dataset`, which sizes its workers' short caches as `Encoder` does.
pub(crate) use engine::short_lines_for;
#[cfg(feature = "python")]
pub(crate) use engine::Span;
pub use engine::Trim;
pub use hf::{normalize, AddedToken, DecodeStep, FrontSpec, Metaspace, NormSpec, Prepend};
pub use parallel::encode_batch;
#[cfg(feature = "python")]
pub(crate) use parallel::{
    encode_texts_flat, encode_texts_in_order, encode_texts_with_offsets, Flat,
};
pub use text::{encode_wide, StreamEncoder, Text, Wide};
pub use vocab::{byte_token_text, merge_piece, Bpe, CharSpec, RankFormat, Scratch};
