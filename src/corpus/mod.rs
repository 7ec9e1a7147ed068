//! Input files: mapped into memory (or decompressed, for `.gz`), cut into chunks
//! that no pre-token and no special token crosses, and decoded as UTF-8 under the
//! caller's policy.
//!
//! - `source`: one file's bytes (mapped, or spooled by `spool` for pipes and `.gz`),
//!   released behind its readers and checked for shrinking under them.
//! - `groups`: many files, opened a bounded group at a time.
//! - `chunks`: a group's bytes cut into chunks for the workers, at safe cuts (`cuts`).
//! - `utf8`: a chunk's bytes decoded as UTF-8 under the caller's [`Utf8Policy`].

mod chunks;
mod cuts;
mod groups;
mod source;
mod spool;
mod utf8;

#[cfg(test)]
pub(crate) use chunks::chunk_ranges;
pub use chunks::Chunks;
pub(crate) use chunks::{chunk_size, worker_count};
pub(crate) use cuts::last_cut;
pub(crate) use groups::{check_intact, size_on_disk, Groups};
pub use source::Source;
pub(crate) use utf8::decode;
pub use utf8::Utf8Policy;
