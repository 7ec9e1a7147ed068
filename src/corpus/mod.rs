//! Inputs: files of text or JSON lines (mapped, or decompressed as they are read) and
//! feeds of documents, read as documents in chunks that no pre-token and no special
//! token crosses, decoded as UTF-8 under the caller's policy.
//!
//! - `input`: what a job reads ([`Input`]: a file and its [`Format`], a stream of a
//!   file's bytes, or a [`Feed`])
//!   and the policies for special tokens in text and bad records.
//! - `pipe`: an input opened by what it is (a file; a pipe, read as it comes; a
//!   folder, socket or device, refused).
//! - `source`: one plain file's bytes, mapped, released behind its readers and
//!   checked for shrinking under them.
//! - `blocks`: one compressed file, pipe or stream, read (and decompressed) a block at
//!   a time.
//! - `groups`: many plain files, opened a bounded group at a time.
//! - `safe_cut`: where text may be cut, each part encoding and counting as in the
//!   whole: forward from a place (chunks), or backward from a buffer's end.
//! - `chunks`: a group's bytes cut into chunks for the workers, at safe cuts or, for
//!   JSON lines, after newlines.
//! - `items`: the inputs planned into runs, and the items workers take from them.
//! - `jsonl`: one JSON line's text field.
//! - `records`: an item's documents, under the policies, with the job's [`Stats`].
//! - `utf8`: a chunk's bytes decoded as UTF-8 under the caller's [`Utf8Policy`].

mod blocks;
mod chunks;
mod groups;
mod input;
mod items;
mod jsonl;
mod pipe;
mod records;
mod safe_cut;
mod source;
mod utf8;

#[cfg(test)]
pub(crate) use chunks::chunk_ranges;
pub(crate) use chunks::{chunk_size, worker_count};
pub use chunks::{file_ranges, Chunks};
pub(crate) use groups::each_group;
#[cfg(feature = "python")]
pub(crate) use input::Compression;
pub use input::{BadRecords, DocBatch, Feed, Format, Input, Raised, SpecialPolicy};
pub(crate) use items::{
    plan, Body, InputInfo, Items, MappedItems, SequentialItems, Start, Stretch,
};
pub use jsonl::FieldPath;
#[cfg(feature = "python")]
pub(crate) use pipe::Stopped;
pub(crate) use records::{Doc, Reader};
pub use records::{ReadOptions, Stats, StatsSummary, Tally};
pub(crate) use safe_cut::last_cut;
pub use source::Source;
pub use utf8::Utf8Policy;
