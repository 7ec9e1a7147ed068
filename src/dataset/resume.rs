//! Where a dataset run can go on from: each shard records where the shard after it
//! starts ([`ShardStart`]), a place in the input stream ([`Checkpoint`]) and the
//! document (and its tokens already written) the shard begins with.
//!
//! A resumed run starts reading at the earliest of its splits' next starts
//! ([`from`]) and each split drops what comes before its own start, so every
//! split goes on exactly where its last kept shard ended and the shards come out
//! byte-identical to an uninterrupted run's. What is read again is at most the span
//! of input behind each split's open shard: about `shard_tokens / val_fraction`
//! tokens of input for `val/`, whatever the corpus's size.

use super::fed::Digest;
use crate::corpus::{Start, Tally};

/// The writer's state at the start of an item: what a run started there restores.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Checkpoint {
    /// The item's input and where it starts in it ([`Start`]).
    pub input: usize,
    pub at: u64,
    /// Documents begun before it.
    pub documents: u64,
    /// Whether the last of those is still open (a text file's document goes on).
    pub open: bool,
    /// Whether the input has begun before it (its bos is written).
    pub started: bool,
    /// What was read before it.
    pub read: Tally,
    /// The last document begun before it.
    pub place: Place,
    /// The chain of the digested feeds' batches read up to and through the item
    /// ([`super::fed`]; zero where none was): what a resumed run must come to there.
    pub fed: Digest,
}

/// A document's input, and its number among that input's documents (from 0: a
/// record that holds one, or a text file's text up to a special token).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Place {
    pub input: usize,
    pub document: u64,
}

impl Checkpoint {
    pub(crate) fn start(&self) -> Start {
        Start {
            input: self.input,
            at: self.at,
        }
    }

    /// Whether `self` comes before `other` in the input.
    pub(crate) fn before(&self, other: &Checkpoint) -> bool {
        (self.input, self.at) < (other.input, other.at)
    }
}

/// Where a shard starts: `skip` tokens into document `document`, the first document
/// to begin at or after `from`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShardStart {
    pub from: Checkpoint,
    pub document: u64,
    /// Tokens of `document` in the shards before (the shard continues it).
    pub skip: u64,
}

/// How one split goes on: after `kept` shards, at `next` (the start the last kept
/// shard recorded; `None` when none was kept: from the beginning).
#[derive(Clone, Copy, Debug, Default)]
pub struct SplitResume {
    pub kept: usize,
    pub next: Option<ShardStart>,
}

impl SplitResume {
    /// Where the split's next shard starts (the input's very beginning without one).
    pub(crate) fn start(&self) -> ShardStart {
        self.next.unwrap_or_default()
    }
}

/// Where a run over splits `splits` starts reading: the earliest of their starts.
pub(crate) fn from(splits: &[SplitResume]) -> Checkpoint {
    splits
        .iter()
        .map(|s| s.start().from)
        .reduce(|a, b| if b.before(&a) { b } else { a })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_earliest_start_is_read_from() {
        let at = |input, at| ShardStart {
            from: Checkpoint {
                input,
                at,
                ..Checkpoint::default()
            },
            ..ShardStart::default()
        };
        let split = |next| SplitResume { kept: 1, next };
        let c = from(&[split(Some(at(2, 5))), split(Some(at(1, 900)))]);
        assert_eq!((c.input, c.at), (1, 900));
        let c = from(&[split(Some(at(2, 5))), split(None)]);
        assert_eq!((c.input, c.at), (0, 0));
    }
}
