//! Inputs -> a training dataset: `train/` (and `val/`) shards of at most
//! `shard_tokens` ids cut between documents, each with its document index
//! ([`super::shard`]), documents sent to a split by a hash of their number and a seed.
//!
//! Documents: each record (a JSON line, a row, an item) with its bos and eos; a text
//! file's text ends a document after each of its special tokens, and the file's end
//! ends one. A document's number counts documents from the first input on, so the
//! split does not depend on threads, chunk sizes or shard sizes.

use std::path::Path;
use std::sync::Arc;

use super::fed::{Digest, DigestFeed, FedLog};
use super::hasher::{Hasher, OnShard};
use super::job::{check_options, encode_all, is_text_file, Encoded, Sink};
use super::options::FileOptions;
use super::resume::{self, Checkpoint, Place, ShardStart, SplitResume};
use super::shard::{ShardFormat, ShardInfo, Shards};
use super::units::{replay, Assembly};
use crate::corpus::{Input, StatsSummary, Tally};
use crate::encode::encoder::Encoder;
use crate::error::{Error, Result};
use crate::progress::Progress;

/// How a dataset is laid out.
#[derive(Clone, Copy, Debug)]
pub struct DatasetOptions {
    pub format: ShardFormat,
    pub shard_tokens: u64,
    /// The share of documents that go to `val/`, in `[0, 1)`.
    pub val_fraction: f64,
    pub seed: u64,
}

/// What a dataset encode wrote.
#[derive(Debug)]
pub struct DatasetSummary {
    /// The shards this run wrote (after those of the run it went on from), in the
    /// order they finished.
    pub shards: Vec<ShardInfo>,
    /// Documents of the whole dataset.
    pub documents: u64,
    /// What was read, the run this one went on from included.
    pub stats: StatsSummary,
    /// The chain of the digested feeds' batches ([`super::fed`]), where any input was
    /// digested: what a finished dataset records to tell its feeds again.
    pub fed: Option<Digest>,
}

/// The splits a layout has: `train`, and `val` when `val_fraction > 0`.
pub fn split_names(layout: &DatasetOptions) -> &'static [&'static str] {
    match layout.val_fraction > 0.0 {
        true => &["train", "val"],
        false => &["train"],
    }
}

/// How a dataset run relates to others: what it goes on from, who hears of its shards.
#[derive(Default)]
pub struct DatasetRun {
    /// One per split, as [`split_names`] orders them: the run goes on after the shards
    /// an earlier run of the same inputs and options finished ([`super::resume`]).
    pub resume: Option<Vec<SplitResume>>,
    /// Hears of each shard once it is finished and hashed.
    pub on_shard: Option<OnShard>,
    /// Leaves the shards unhashed (their sha256 empty): a run then resumes checking
    /// sizes only.
    pub skip_checksums: bool,
    /// The feeds whose documents are hashed ([`super::fed`]), by input number: those
    /// that nothing else identifies (a Python iterable, a dataset object).
    pub digest: Vec<usize>,
}

/// Encodes `inputs` into the dataset folder `root` (which exists), shard by shard.
pub fn encode_dataset(
    encoder: &Encoder,
    inputs: Vec<Input>,
    root: &Path,
    options: FileOptions,
    layout: DatasetOptions,
    progress: &Progress,
    run: DatasetRun,
) -> Result<DatasetSummary> {
    let n_inputs = inputs.len();
    let is_text = is_text_file(&inputs);
    let (inputs, fed) = digested(inputs, &run.digest);
    write_dataset(
        encoder,
        is_text,
        root,
        options,
        layout,
        run,
        fed,
        |writer, resume| {
            let mut inputs = inputs;
            let from = resume::from(resume);
            if from.input > n_inputs {
                return Err(Error::invalid(format!(
                    "resume: input {} of {n_inputs} is where the earlier run went on",
                    from.input
                )));
            }
            writer.restore(&from);
            // The digested feeds before the start are read for their hash alone: the
            // shards kept hold their documents ([`super::fed`]).
            for input in inputs.iter_mut().take(from.input) {
                if let Input::Feed { feed, .. } = input {
                    if writer.fed.is_some() {
                        while feed.next_batch()?.is_some() {
                            progress.check()?;
                        }
                    }
                }
            }
            let start = (from != Checkpoint::default()).then(|| from.start());
            let stats = encode_all(encoder, inputs, options, progress, root, writer, start)?;
            // Before the manifest is written; a resumed run read only the rest.
            if start.is_none() {
                stats.check_some_read()?;
            }
            Ok(stats.examples)
        },
    )
}

/// `inputs` with the feeds of `digest` hashed as they are read into a log, and the
/// log (none where no feed is digested): the feeds' names too, for messages.
fn digested(inputs: Vec<Input>, digest: &[usize]) -> (Vec<Input>, Option<Fed>) {
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
/// [`encode_dataset`] would come to over them (`None` where none is digested): how a
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

/// The log of the digested feeds, and their names by input number.
struct Fed {
    log: Arc<FedLog>,
    names: Vec<(usize, String)>,
}

/// Writes into the dataset folder `root` the items of the assembly's unit files
/// ([`super::units`]), in order, as [`encode_dataset`] would have written the
/// inputs they were encoded from. A run of units does not go on from an earlier one
/// (`run.resume` must be `None`): the units are what is kept.
pub fn assemble_dataset(
    encoder: &Encoder,
    assembly: Assembly<'_>,
    root: &Path,
    options: FileOptions,
    layout: DatasetOptions,
    progress: &Progress,
    run: DatasetRun,
) -> Result<DatasetSummary> {
    if run.resume.is_some() {
        return Err(Error::invalid(
            "a dataset assembled from units does not resume",
        ));
    }
    let Assembly {
        units,
        is_text,
        size,
    } = assembly;
    progress.reset(size);
    let n_inputs = is_text.len();
    write_dataset(
        encoder,
        is_text,
        root,
        options,
        layout,
        run,
        None,
        |writer, _| {
            replay(units, n_inputs, options.dtype_bytes, writer, progress)?;
            writer.end_until(n_inputs).map_err(|e| Error::io(root, e))?;
            Ok(Vec::new())
        },
    )
}

/// Checks the layout and resume, makes the splits' folders and runs `body` (which
/// feeds the writer, and returns examples of skipped records) with the writer and
/// its hasher; ends the shards. `fed`: the digested feeds, whose chain the writer
/// follows and checks ([`super::fed`]).
#[allow(clippy::too_many_arguments)]
fn write_dataset(
    encoder: &Encoder,
    is_text: Vec<bool>,
    root: &Path,
    options: FileOptions,
    layout: DatasetOptions,
    run: DatasetRun,
    fed: Option<Fed>,
    body: impl FnOnce(&mut DatasetWriter, &[SplitResume]) -> Result<Vec<String>>,
) -> Result<DatasetSummary> {
    let DatasetRun {
        resume,
        on_shard,
        skip_checksums,
        digest: _,
    } = run;
    check_options(encoder, &options)?;
    if !(0.0..1.0).contains(&layout.val_fraction) {
        return Err(Error::invalid(format!(
            "val_fraction must be at least 0 and below 1, not {}",
            layout.val_fraction
        )));
    }
    if layout.shard_tokens == 0 {
        return Err(Error::invalid("shard_tokens must be at least 1"));
    }
    if layout.format == ShardFormat::Llmc && layout.shard_tokens > i32::MAX as u64 {
        return Err(Error::invalid(format!(
            "shard_tokens {} is more than llm.c's header can count (2**31 - 1)",
            layout.shard_tokens
        )));
    }
    let names = split_names(&layout);
    let resume = resume.unwrap_or_else(|| vec![SplitResume::default(); names.len()]);
    if resume.len() != names.len() {
        return Err(Error::invalid(format!(
            "resume: {} splits given, the layout has {}",
            resume.len(),
            names.len()
        )));
    }
    if resume.iter().any(|r| r.next.is_none() && r.kept > 0) {
        return Err(Error::invalid(
            "resume: kept shards need the start of the next",
        ));
    }
    for name in names {
        let dir = root.join(name);
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        // A link there would have the shards written wherever it points.
        let real = std::fs::symlink_metadata(&dir).map_err(|e| Error::io(&dir, e))?;
        if !real.is_dir() {
            return Err(Error::invalid(format!(
                "{}: a link, where the dataset's {name} shards go (bpekit never writes through \
                 a link); remove it, or give another folder for the dataset",
                dir.display()
            )));
        }
    }
    let n_inputs = is_text.len();
    let hasher = Hasher::start(root, !skip_checksums, on_shard).map_err(|e| Error::io(root, e))?;
    let mut writer = DatasetWriter::new(encoder, root, is_text, options, layout, &resume, &hasher);
    writer.follow(fed, &resume);
    let outcome = body(&mut writer, &resume).and_then(|examples| {
        writer.finish(n_inputs).map_err(|e| Error::io(root, e))?;
        Ok(examples)
    });
    // Documents other than those the shards kept were read from: the run's error,
    // whatever failed after it.
    let outcome = match writer.mismatch.take() {
        Some(message) => Err(Error::invalid(message)),
        None => outcome,
    };
    let fed = writer.fed.as_ref().map(|_| writer.chain);
    let (documents, read, is_text) = (writer.documents, writer.read, writer.is_text.clone());
    // The shards' senders go with the writer: the hasher ends once they are gone.
    drop(writer);
    // A failed hash or report stops the writer at its next shard: it is the cause.
    let shards = hasher.finish().map_err(|e| Error::io(root, e))?;
    let examples = outcome?;
    let text_files = is_text.iter().filter(|&&t| t).count() as u64;
    Ok(DatasetSummary {
        shards,
        documents,
        stats: StatsSummary {
            documents: read.documents + text_files,
            skipped: read.skipped,
            examples,
            bytes: read.bytes,
        },
        fed,
    })
}

struct DatasetWriter {
    splits: Vec<Shards>,
    layout: DatasetOptions,
    options: FileOptions,
    is_text: Vec<bool>,
    /// The special tokens' ids, sorted: in a text file's ids, each ends a document.
    specials: Vec<u32>,
    /// Documents begun so far (the next one's number).
    documents: u64,
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
    read: Tally,
    /// The last document begun: its input, and its number among that input's.
    place: Place,
    /// The digested feeds ([`super::fed`]), and the chain through the items written.
    fed: Option<Fed>,
    chain: Digest,
    /// Per split gone on from: where it starts, and the chain the run it goes on from
    /// had come to there; checked once the run passes there, before it writes on.
    checks: Vec<(usize, u64, Digest)>,
    /// Why the run stopped where its documents differ from those the shards kept hold.
    mismatch: Option<String>,
}

impl DatasetWriter {
    fn new(
        encoder: &Encoder,
        root: &Path,
        is_text: Vec<bool>,
        options: FileOptions,
        layout: DatasetOptions,
        resume: &[SplitResume],
        hasher: &Hasher,
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
                    layout.format,
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
    fn follow(&mut self, fed: Option<Fed>, resume: &[SplitResume]) {
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
    fn restore(&mut self, c: &Checkpoint) {
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
    fn finish(&mut self, n_inputs: usize) -> std::io::Result<()> {
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
