//! The dataset writer: each document, in order, to its split (by a hash of its
//! number and the seed) and into that split's shards; on a resumed run, what the
//! shards kept is dropped and the digested feeds' chain checked where each split
//! goes on ([`super::resume`], [`super::fed`]).

use std::path::Path;

use super::fed::{Digest, Fed};
use super::hasher::ShardHasher;
use super::job::{Encoded, Sink};
use super::options::{split_names, DatasetOptions, FileOptions};
use super::resume::{Checkpoint, Place, ShardStart, SplitResume};
use super::shard::{ShardStyle, Shards};
use crate::corpus::Tally;
use crate::encode::Encoder;

pub(super) struct DatasetWriter {
    splits: Vec<Shards>,
    layout: DatasetOptions,
    options: FileOptions,
    pub(super) is_text: Vec<bool>,
    /// The special tokens' ids, sorted: in a text file's ids, each ends a document.
    specials: Vec<u32>,
    /// Documents begun so far (the next one's number).
    pub(super) documents: u64,
    /// The split of the open document.
    current: Option<usize>,
    /// Tokens of the open document still to drop (`u64::MAX`: all of it): they are
    /// in the shards of the run this one goes on from.
    dropping: Option<u64>,
    /// Per split, where its shards go on ([`SplitResume::start`]): what comes before
    /// is dropped.
    from: Vec<ShardStart>,
    /// Inputs before this one are ended; whether it has begun.
    ended: usize,
    started: bool,
    released: Vec<usize>,
    /// Where the item being written starts, and what was read before it.
    item: Checkpoint,
    pub(super) read: Tally,
    /// The last document begun: its input, and its number among that input's.
    place: Place,
    /// The digested feeds ([`super::fed`]), and the chain through the items written.
    pub(super) fed: Option<Fed>,
    pub(super) chain: Digest,
    /// Per split gone on from: where it starts, and the chain the run it goes on from
    /// had come to there; checked once the run passes there, before it writes on.
    checks: Vec<(usize, u64, Digest)>,
    /// Why the run stopped where its documents differ from those the shards kept hold.
    pub(super) mismatch: Option<String>,
}

impl DatasetWriter {
    pub(super) fn new(
        encoder: &Encoder,
        root: &Path,
        is_text: Vec<bool>,
        options: FileOptions,
        layout: DatasetOptions,
        resume: &[SplitResume],
        hasher: &ShardHasher,
    ) -> Self {
        let mut specials: Vec<u32> = encoder.specials().ids.clone();
        specials.sort_unstable();
        let splits = split_names(&layout)
            .iter()
            .zip(resume)
            .map(|(name, r)| {
                Shards::new(
                    root,
                    name,
                    ShardStyle {
                        format: layout.format,
                        tokenizer: layout.tokenizer.clone(),
                    },
                    options.dtype_bytes,
                    layout.shard_tokens,
                    r.kept,
                    hasher.sender(),
                )
            })
            .collect();
        Self {
            splits,
            layout,
            options,
            released: vec![0; is_text.len()],
            is_text,
            specials,
            documents: 0,
            current: None,
            dropping: None,
            from: resume.iter().map(SplitResume::start).collect(),
            ended: 0,
            started: false,
            item: Checkpoint::default(),
            read: Tally::default(),
            place: Place::default(),
            fed: None,
            chain: Digest::default(),
            checks: Vec::new(),
            mismatch: None,
        }
    }

    /// Follows the chain of the digested feeds `fed`, checking it at the start of
    /// each split of `resume` gone on from.
    pub(super) fn follow(&mut self, fed: Option<Fed>, resume: &[SplitResume]) {
        if fed.is_none() {
            return;
        }
        self.fed = fed;
        self.checks = resume
            .iter()
            .filter_map(|r| r.next.map(|n| (n.from.input, n.from.at, n.from.fed)))
            .collect();
    }

    /// Takes the chain up to the item at `(input, at)` (`before`: the items before
    /// it; else through it), and checks every split's start that lies there.
    fn take_fed(&mut self, input: usize, at: u64, before: bool) -> std::io::Result<()> {
        let Some(fed) = &self.fed else {
            return Ok(());
        };
        let taken = match (input, at) {
            (usize::MAX, u64::MAX) => fed.log.take_all(),
            _ => fed.log.take_until(input, at, !before),
        };
        if let Some(chain) = taken {
            self.chain = chain;
        }
        let (chain, due) = (self.chain, (input, at));
        let mut bad = None;
        self.checks.retain(|&(i, a, want)| {
            let here = if before { (i, a) < due } else { (i, a) <= due };
            if here && want != chain {
                bad = Some(i);
            }
            !here
        });
        match bad {
            None => Ok(()),
            Some(i) => {
                let names: Vec<&str> = fed
                    .names
                    .iter()
                    .filter(|(k, _)| *k <= i)
                    .map(|(_, n)| n.as_str())
                    .collect();
                let names = match names.is_empty() {
                    true => fed.names.iter().map(|(_, n)| n.as_str()).collect(),
                    false => names,
                };
                let message = format!(
                    "{}: the documents differ from those the run being resumed read (their \
                     sha256 up to where it stopped does not match); start over with \
                     resume=False (--overwrite)",
                    names.join(", ")
                );
                self.mismatch = Some(message.clone());
                Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    message,
                ))
            }
        }
    }

    /// Takes up the state of checkpoint `c`, where the run starts reading.
    pub(super) fn restore(&mut self, c: &Checkpoint) {
        self.documents = c.documents;
        self.ended = c.input;
        self.started = c.started;
        self.read = c.read;
        self.item = *c;
        self.place = c.place;
        // A document open there began before every split's start: all of it is
        // dropped ([`super::resume`]).
        if c.open && c.documents > 0 {
            self.current = Some(self.split_of(c.documents - 1));
            self.dropping = Some(u64::MAX);
        }
    }

    /// The split of document `n`: `val` for a share `val_fraction` of the documents,
    /// by a hash of `n` and the seed.
    fn split_of(&self, n: u64) -> usize {
        if self.layout.val_fraction <= 0.0 {
            return 0;
        }
        let h = mix(mix(n) ^ self.layout.seed);
        // The top 53 bits as a fraction in [0, 1).
        let unit = (h >> 11) as f64 / (1u64 << 53) as f64;
        usize::from(unit < self.layout.val_fraction)
    }

    /// Opens the next document, of input `input`: its number, split and what of it
    /// to drop (all or its first tokens), being in the shards of the run this one goes
    /// on from.
    fn open(&mut self, input: usize) -> std::io::Result<(u64, usize, Option<u64>)> {
        self.end()?;
        let n = self.documents;
        self.documents += 1;
        if input != self.place.input {
            self.place = Place { input, document: 0 };
        } else if n > 0 {
            self.place.document += 1;
        }
        let split = self.split_of(n);
        self.splits[split].mark = self.item;
        let from = self.from[split];
        let drop = match n.cmp(&from.document) {
            std::cmp::Ordering::Less => Some(u64::MAX),
            std::cmp::Ordering::Equal if from.skip > 0 => Some(from.skip),
            _ => None,
        };
        Ok((n, split, drop))
    }

    fn begin(&mut self, input: usize) -> std::io::Result<()> {
        let (n, split, drop) = self.open(input)?;
        self.current = Some(split);
        self.dropping = drop;
        match drop {
            None => self.splits[split].begin(n, self.place),
            Some(_) => Ok(()),
        }
    }

    /// A whole document, from input `input`.
    fn whole(&mut self, input: usize, ids: &[u32]) -> std::io::Result<()> {
        let (n, split, drop) = self.open(input)?;
        let place = self.place;
        match drop {
            None => self.splits[split].whole(n, place, ids),
            Some(u64::MAX) => Ok(()),
            Some(skip) => {
                let rest = usize::try_from(skip)
                    .ok()
                    .and_then(|s| ids.get(s..))
                    .filter(|rest| !rest.is_empty())
                    .ok_or_else(changed_input)?;
                let shards = &mut self.splits[split];
                shards.go_on_with(n, place, skip);
                shards.push(rest)?;
                shards.end()
            }
        }
    }

    /// Ids of the open document (one is begun if none is open).
    fn push(&mut self, input: usize, mut ids: &[u32]) -> std::io::Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        if self.current.is_none() {
            self.begin(input)?;
        }
        let Some(split) = self.current else {
            return Ok(());
        };
        match self.dropping {
            None => {}
            Some(u64::MAX) => return Ok(()),
            Some(left) if left >= ids.len() as u64 => {
                self.dropping = Some(left - ids.len() as u64);
                return Ok(());
            }
            Some(left) => {
                ids = &ids[left as usize..];
                self.dropping = None;
                let written = self.from[split].skip;
                let place = self.place;
                self.splits[split].go_on_with(self.documents - 1, place, written);
            }
        }
        self.splits[split].push(ids)
    }

    fn end(&mut self) -> std::io::Result<()> {
        let Some(split) = self.current.take() else {
            return Ok(());
        };
        match self.dropping.take() {
            None => self.splits[split].end(),
            Some(u64::MAX) => Ok(()),
            // The document ended before the tokens the earlier run wrote of it.
            Some(_) => Err(changed_input()),
        }
    }

    /// Ends the last document and every split's last shard, once every input is.
    pub(super) fn finish(&mut self, n_inputs: usize) -> std::io::Result<()> {
        self.take_fed(usize::MAX, u64::MAX, true)?;
        self.end()?;
        let end = ShardStart {
            from: Checkpoint {
                input: n_inputs,
                at: 0,
                documents: self.documents,
                open: false,
                started: false,
                read: self.read,
                place: self.place,
                fed: self.chain,
            },
            document: self.documents,
            skip: 0,
        };
        for shards in &mut self.splits {
            shards.finish(end)?;
        }
        Ok(())
    }
}

/// The inputs do not hold what the run that is gone on from read in them.
fn changed_input() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        "the inputs differ from those of the run being resumed; start over (resume=False, \
         --overwrite)",
    )
}

impl Sink for DatasetWriter {
    fn write(&mut self, encoded: &Encoded<'_>) -> std::io::Result<()> {
        let input = encoded.input;
        // The chain before the item, for what the end of earlier inputs writes; then
        // through it, which a shard starting in it records.
        self.take_fed(input, encoded.at, true)?;
        self.end_until(input)?;
        self.take_fed(input, encoded.at, false)?;
        self.item = Checkpoint {
            input,
            at: encoded.at,
            documents: self.documents,
            open: self.current.is_some(),
            started: self.started,
            read: self.read,
            place: self.place,
            fed: self.chain,
        };
        self.read.add(encoded.tally);
        let text = self.is_text[input];
        if !self.started {
            self.started = true;
            if text {
                if let Some(bos) = self.options.file_marks.bos {
                    self.begin(input)?;
                    self.push(input, &[bos])?;
                }
            }
        }
        let ids = &encoded.ids;
        if text {
            let specials = std::mem::take(&mut self.specials);
            let mut start = 0;
            let mut split = || -> std::io::Result<()> {
                for i in special_positions(ids, &specials) {
                    match self.current {
                        // A document from an earlier item ends here.
                        Some(_) => {
                            self.push(input, &ids[start..=i])?;
                            self.end()?;
                        }
                        None => self.whole(input, &ids[start..=i])?,
                    }
                    start = i + 1;
                }
                self.push(input, &ids[start..])
            };
            let result = split();
            self.specials = specials;
            result?;
        } else {
            let mut start = 0;
            for &end in &encoded.record_ends {
                self.whole(input, &ids[start..end])?;
                start = end;
            }
        }
        if let Some((source, end)) = encoded.mapped {
            let released = &mut self.released[input];
            *released = source.release_behind(*released, end);
        }
        Ok(())
    }

    fn end_until(&mut self, input: usize) -> std::io::Result<()> {
        while self.ended < input {
            let ended = self.ended;
            if self.is_text[ended] {
                let marks = self.options.file_marks;
                if !self.started && marks.bos.is_some() {
                    self.begin(ended)?;
                    self.push(ended, marks.bos.as_slice())?;
                }
                self.push(ended, marks.eos.as_slice())?;
            }
            // `after_each_file` ends a text file's last document; after records, whose
            // documents are closed, it is a document of its own.
            if let Some(id) = self.options.after_each_file {
                self.push(ended, &[id])?;
            }
            // An input's end ends its last document.
            self.end()?;
            self.ended += 1;
            self.started = false;
        }
        Ok(())
    }
}

/// Where the ids of `specials` (sorted) are in `ids`. Special ids are few and usually
/// the vocabulary's last, so a block of ids whose largest is below the least special
/// id holds none: the maximum vectorises, where a test of each id did not (that scan
/// on the writer's thread took ~4% of a 2-thread dataset encode of 1 GB of text).
fn special_positions<'a>(ids: &'a [u32], specials: &'a [u32]) -> impl Iterator<Item = usize> + 'a {
    const BLOCK: usize = 64;
    let least = specials.first().copied().unwrap_or(u32::MAX);
    ids.chunks(BLOCK).enumerate().flat_map(move |(b, block)| {
        let any = block.iter().fold(0, |m, &id| m.max(id)) >= least;
        let block = if any { block } else { &block[..0] };
        block
            .iter()
            .enumerate()
            .filter(move |&(_, id)| *id >= least && specials.binary_search(id).is_ok())
            .map(move |(i, _)| b * BLOCK + i)
    })
}

/// SplitMix64's finaliser: a strong mix of one 64-bit word.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_positions_are_every_special_id() {
        let specials = [1000, 1003];
        let mut x = 12345u64;
        for len in [0, 1, 63, 64, 65, 200, 1000] {
            let ids: Vec<u32> = (0..len)
                .map(|_| {
                    x = mix(x);
                    [1000, 1001, 1003, 7][(x % 4) as usize] * u32::from(x.is_multiple_of(5))
                })
                .collect();
            let want: Vec<usize> = (0..len).filter(|&i| specials.contains(&ids[i])).collect();
            assert_eq!(special_positions(&ids, &specials).collect::<Vec<_>>(), want);
        }
    }
}
