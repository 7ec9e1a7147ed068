//! The documents of feeds (Python iterables, Hugging Face datasets), which a dataset
//! run cannot tell apart by a name, a size and a time as it tells files, hashed as
//! they are read, so that a resumed run proves it reads the documents that the run it
//! goes on from read.
//!
//! Every batch pulled from a digested feed, whether passed over by a resumed run or
//! encoded, goes into one chain over all of them, in input order:
//! `chain = sha256(chain, input, batch number, sha256 of the batch's documents)`.
//! Each shard's start records the chain through the item it starts in
//! ([`super::resume::Checkpoint::fed`]); a resumed run must come to the same value
//! at each split's start before it writes anything past it ([`super::writer`]). The
//! batches are hashed under the reader's lock, in order: sha256 runs at ~1.8 GB/s,
//! far above what the encoders take in.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use sha2::{Digest as _, Sha256};

use crate::corpus::{DocBatch, Feed, Input};
use crate::error::Result;
use crate::progress::Progress;

/// A sha256.
pub type Digest = [u8; 32];

/// The chain over the batches read so far, and the value after each batch that the
/// writer has not yet taken.
#[derive(Default)]
pub(crate) struct FedLog {
    state: Mutex<LogState>,
}

#[derive(Default)]
struct LogState {
    chain: Digest,
    /// `(input, batch number, chain after it)`, in the order read.
    after: VecDeque<(usize, u64, Digest)>,
}

impl FedLog {
    fn record(&self, input: usize, at: u64, batch: &DocBatch) {
        let digest = batch_digest(batch);
        // A poisoned lock (a panic elsewhere) ends the run anyway; the chain goes on.
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let mut h = Sha256::new();
        h.update(state.chain);
        h.update((input as u64).to_le_bytes());
        h.update(at.to_le_bytes());
        h.update(digest);
        state.chain = h.finalize().into();
        let chain = state.chain;
        state.after.push_back((input, at, chain));
    }

    /// Takes the values of the batches read before `(input, at)` (and of the one at
    /// it, where `through`): the chain after the last of them, where any was read.
    pub(super) fn take_until(&self, input: usize, at: u64, through: bool) -> Option<Digest> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let mut last = None;
        while let Some(&(i, a, chain)) = state.after.front() {
            if (i, a) > (input, at) || (!through && (i, a) == (input, at)) {
                break;
            }
            state.after.pop_front();
            last = Some(chain);
        }
        last
    }

    /// Takes every value: the chain through all that was read.
    pub(super) fn take_all(&self) -> Option<Digest> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let last = state.after.back().map(|&(_, _, chain)| chain);
        state.after.clear();
        last
    }

    /// The chain through all that was read (zero when nothing was).
    pub(super) fn chain(&self) -> Digest {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).chain
    }
}

/// The sha256 of a batch's documents: how many, their lengths, their bytes, and the
/// records that held none (by their place in the batch).
fn batch_digest(batch: &DocBatch) -> Digest {
    let data = (*batch.data).as_ref();
    let first = batch.offsets.first().copied().unwrap_or(0);
    let last = batch.offsets.last().copied().unwrap_or(first);
    let mut h = Sha256::new();
    let mut head = Vec::with_capacity(8 * (batch.offsets.len() + 2 * batch.bad.len() + 2));
    head.extend_from_slice(&(batch.offsets.len() as u64).to_le_bytes());
    for &o in &batch.offsets {
        head.extend_from_slice(&(o.wrapping_sub(first) as u64).to_le_bytes());
    }
    head.extend_from_slice(&(batch.bad.len() as u64).to_le_bytes());
    for (row, why) in &batch.bad {
        head.extend_from_slice(&row.wrapping_sub(batch.first_row).to_le_bytes());
        head.extend_from_slice(&(why.len() as u64).to_le_bytes());
        head.extend_from_slice(why.as_bytes());
    }
    h.update(&head);
    // Offsets past the data are the reader's to refuse; here they hash what is there.
    h.update(data.get(first..last).unwrap_or(data));
    h.finalize().into()
}

/// A feed whose batches go into `log` as they are pulled.
pub(crate) struct DigestFeed {
    inner: Box<dyn Feed>,
    input: usize,
    taken: u64,
    log: Arc<FedLog>,
}

impl DigestFeed {
    pub(crate) fn new(inner: Box<dyn Feed>, input: usize, log: Arc<FedLog>) -> Self {
        Self {
            inner,
            input,
            taken: 0,
            log,
        }
    }
}

impl Feed for DigestFeed {
    fn next_batch(&mut self) -> Result<Option<DocBatch>> {
        let batch = self.inner.next_batch()?;
        if let Some(b) = &batch {
            self.log.record(self.input, self.taken, b);
            self.taken += 1;
        }
        Ok(batch)
    }
}

/// The log of the digested feeds, and their names by input number.
pub(super) struct Fed {
    pub(super) log: Arc<FedLog>,
    pub(super) names: Vec<(usize, String)>,
}

/// `inputs` with the feeds of `digest` hashed as they are read into a log, and the
/// log (none where no feed is digested): the feeds' names too, for messages.
pub(super) fn digested(inputs: Vec<Input>, digest: &[usize]) -> (Vec<Input>, Option<Fed>) {
    let feeds: Vec<(usize, String)> = inputs
        .iter()
        .enumerate()
        .filter_map(|(i, input)| match input {
            Input::Feed { name, .. } if digest.contains(&i) => Some((i, name.clone())),
            _ => None,
        })
        .collect();
    if feeds.is_empty() {
        return (inputs, None);
    }
    let log = Arc::new(FedLog::default());
    let inputs = inputs
        .into_iter()
        .enumerate()
        .map(|(i, input)| match input {
            Input::Feed { name, feed } if digest.contains(&i) => Input::Feed {
                name,
                feed: Box::new(DigestFeed::new(feed, i, log.clone())),
            },
            other => other,
        })
        .collect();
    (inputs, Some(Fed { log, names: feeds }))
}

/// Reads the feeds of `inputs` numbered in `digest` to their end, for the chain that
/// [`super::encode_dataset`] would come to over them (`None` where none is digested): how a
/// finished dataset tells whether it was written from these documents.
pub fn digest_feeds(
    inputs: Vec<Input>,
    digest: &[usize],
    progress: &Progress,
) -> Result<Option<Digest>> {
    let (inputs, fed) = digested(inputs, digest);
    let Some(fed) = fed else {
        return Ok(None);
    };
    for input in inputs {
        if let Input::Feed { mut feed, .. } = input {
            while feed.next_batch()?.is_some() {
                progress.check()?;
            }
        }
    }
    Ok(Some(fed.log.chain()))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Docs(Vec<Vec<&'static str>>);

    impl Feed for Docs {
        fn next_batch(&mut self) -> Result<Option<DocBatch>> {
            if self.0.is_empty() {
                return Ok(None);
            }
            let docs = self.0.remove(0);
            let mut data = Vec::new();
            let mut offsets = vec![0];
            for d in docs {
                data.extend_from_slice(d.as_bytes());
                offsets.push(data.len());
            }
            Ok(Some(DocBatch {
                data: Box::new(data),
                offsets,
                row_group: None,
                first_row: 0,
                unit: "item",
                bad: Vec::new(),
            }))
        }
    }

    fn chain_of(batches: Vec<Vec<&'static str>>) -> Digest {
        let log = Arc::new(FedLog::default());
        let mut feed = DigestFeed::new(Box::new(Docs(batches)), 0, log.clone());
        while feed.next_batch().unwrap().is_some() {}
        log.chain()
    }

    #[test]
    fn the_chain_tells_documents_and_where_they_end() {
        let one = chain_of(vec![vec!["ab", "c"], vec!["d"]]);
        assert_eq!(one, chain_of(vec![vec!["ab", "c"], vec!["d"]]));
        assert_ne!(one, chain_of(vec![vec!["a", "bc"], vec!["d"]]));
        assert_ne!(one, chain_of(vec![vec!["ab", "c"], vec!["d"], vec![]]));
        assert_ne!(one, chain_of(vec![vec!["ab", "c", "d"]]));
    }

    #[test]
    fn values_are_taken_before_and_through_a_batch() {
        let log = Arc::new(FedLog::default());
        let mut feed = DigestFeed::new(Box::new(Docs(vec![vec!["a"]; 4])), 2, log.clone());
        for _ in 0..4 {
            feed.next_batch().unwrap();
        }
        let before = log.take_until(2, 2, false);
        let through = log.take_until(2, 2, true);
        assert!(before.is_some() && through.is_some() && before != through);
        assert_eq!(log.take_until(2, 2, true), None);
        assert_eq!(log.take_all(), Some(log.chain()));
    }
}
