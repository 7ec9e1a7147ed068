//! Inputs -> a training dataset: `train/` (and `val/`) shards of at most
//! `shard_tokens` ids cut between documents, each with its document index
//! ([`super::shard`]), documents sent to a split by a hash of their number and a seed.
//!
//! Documents: each record (a JSON line, a row, an item) with its bos and eos; a text
//! file's text ends a document after each of its special tokens, and the file's end
//! ends one. A document's number counts documents from the first input on, so the
//! split does not depend on threads, chunk sizes or shard sizes.

use std::path::Path;

use super::fed::{digested, Digest, Fed};
use super::hasher::{OnShard, ShardHasher};
use super::job::{check_options, encode_all, is_text_file, Sink};
use super::options::{split_names, DatasetOptions, FileOptions};
use super::resume::{self, Checkpoint, SplitResume};
use super::shard::{ShardFormat, ShardInfo};
use super::units::{replay, Assembly};
use super::writer::DatasetWriter;
use crate::corpus::{Input, StatsSummary};
use crate::encode::Encoder;
use crate::error::{Error, Result};
use crate::progress::Progress;

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

/// Where a dataset's documents come from, as the writer needs to know it.
struct Origin {
    /// Per input: a text file, whose documents are cut by special tokens in its text.
    is_text: Vec<bool>,
    /// The digested feeds, whose chain the writer follows and checks
    /// ([`super::fed`]); None where no input is digested.
    fed: Option<Fed>,
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
        Origin { is_text, fed },
        root,
        options,
        layout,
        run,
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
        Origin { is_text, fed: None },
        root,
        options,
        layout,
        run,
        |writer, _| {
            replay(units, n_inputs, options.dtype_bytes, writer, progress)?;
            writer.end_until(n_inputs).map_err(|e| Error::io(root, e))?;
            Ok(Vec::new())
        },
    )
}

/// Checks the layout and resume, makes the splits' folders and runs `body` (which
/// feeds the writer, and returns examples of skipped records) with the writer and
/// its hasher; ends the shards.
fn write_dataset(
    encoder: &Encoder,
    origin: Origin,
    root: &Path,
    options: FileOptions,
    layout: DatasetOptions,
    run: DatasetRun,
    body: impl FnOnce(&mut DatasetWriter, &[SplitResume]) -> Result<Vec<String>>,
) -> Result<DatasetSummary> {
    let DatasetRun {
        resume,
        on_shard,
        skip_checksums,
        digest: _,
    } = run;
    let Origin { is_text, fed } = origin;
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
    if layout.format == ShardFormat::Megatron && layout.shard_tokens > i32::MAX as u64 {
        return Err(Error::invalid(format!(
            "shard_tokens {} is more than Megatron's index counts in a sequence (2**31 - 1)",
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
    let hasher =
        ShardHasher::start(root, !skip_checksums, on_shard).map_err(|e| Error::io(root, e))?;
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
