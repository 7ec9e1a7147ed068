//! Inputs -> token ids written to files: one `.npy` (`bpekit.encode_file`), or a
//! dataset of `train/` (and `val/`) shards with document indexes
//! (`bpekit.encode_dataset`), encoded in parallel and written in input order, in
//! memory independent of the input size; a new file appears whole or not at all
//! (`crate::whole_file`).
//!
//! The layer above `crate::encode`, which it uses only through [`Encoder`] (and
//! `short_lines_for`, to size the workers' caches as the encoder does). Its files,
//! each with one job:
//!
//! - `options`: how a file encode runs ([`FileOptions`]) and how a dataset is laid
//!   out ([`DatasetOptions`]).
//! - `ordered`: a parallel map whose results are taken in order, a bounded number
//!   ahead.
//! - `job`: the workers: items of the inputs -> ids, in parallel, handed in input
//!   order to a `Sink`.
//! - `npy`, `outfile`: the `.npy` header; a token file written through a staging
//!   buffer (direct I/O where the file system takes it).
//! - `one_file`: the `Sink` that writes one `.npy`.
//! - `shard`, `waiting`: a split's shards, cut between documents, with their
//!   document indexes; the ids of a document that may still move to the next shard.
//! - `megatron`, `datatrove`: the index and metadata files those trainers read beside
//!   a shard's ids.
//! - `hasher`: each finished shard's sha256, off the writer's thread.
//! - `resume`, `fed`: where a resumed run goes on; the hash of feeds' documents that
//!   proves it reads what the run it goes on from read.
//! - `writer`: the `Sink` that sends documents to splits and shards.
//! - `run`: a dataset run from start to summary ([`encode_dataset`]).
//! - `units`: parts of the inputs encoded apart (on other machines) into unit files,
//!   and a dataset assembled from them ([`assemble_dataset`]).
//! - `pieces`: a shard's token file written by a worker from pieces of unit files.

#[cfg(doc)]
use crate::encode::Encoder;

mod datatrove;
mod fed;
mod hasher;
mod job;
mod megatron;
mod npy;
mod one_file;
mod options;
mod ordered;
mod outfile;
mod pieces;
mod resume;
mod run;
mod shard;
mod units;
mod waiting;
mod writer;

pub use fed::digest_feeds;
pub use hasher::OnShard;
pub use one_file::{encode_files, encode_inputs};
pub use options::{split_names, DatasetOptions, FileOptions, Marks};
pub use pieces::{write_from_units, Piece};
pub use resume::{Checkpoint, Place, ShardStart, SplitResume};
pub use run::{assemble_dataset, encode_dataset, DatasetRun, DatasetSummary};
pub use shard::{ShardFormat, ShardInfo, SideFile};
pub use units::{encode_unit, Assembly, UnitFile};
