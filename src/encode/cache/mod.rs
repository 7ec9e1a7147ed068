//! Piece caches: what a thread has merged, so that each distinct piece is merged once.
//!
//! - `line`: the 64-byte lines of the short cache and how they are read and written
//!   while other threads may be doing the same (the only inline assembly).
//! - `store`: the lines and spilled ids of one short cache, shareable.
//! - `short`: [`ShortCache`], pieces of up to 15 bytes -> ids, one line per lookup.
//! - `long`: [`LongCache`], the pieces the short cache cannot hold, bounded.

mod line;
mod long;
mod short;
mod store;

pub(crate) use line::{CachedIds, SHORT_IDS};
pub(crate) use long::{hash as long_hash, LongCache};
pub(crate) use short::{Lines, ShortCache};
