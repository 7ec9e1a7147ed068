//! Inputs -> a training dataset: `train/` (and `val/`) shards of at most
//! `shard_tokens` ids cut between documents, each with its document index
//! ([`super::shard`]), documents sent to a split by a hash of their number and a seed.
//!
//! Documents: each record (a JSON line, a row, an item) with its bos and eos; a text
//! file's text ends a document after each of its special tokens, and the file's end
//! ends one. A document's number counts documents from the first input on, so the
//! split does not depend on threads, chunk sizes or shard sizes.

use std::path::Path;

use super::job::{check_options, encode_all, is_text_file, Encoded, Sink};
use super::options::FileOptions;
use super::shard::{ShardFormat, ShardInfo, Shards};
use crate::corpus::{Input, StatsSummary};
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
    /// The shards of `train` and, when there is a validation split, `val`.
    pub splits: Vec<(&'static str, Vec<ShardInfo>)>,
    pub documents: u64,
    pub tokens: u64,
    pub stats: StatsSummary,
}

/// Encodes `inputs` into the dataset folder `root` (which exists), shard by shard.
pub fn encode_dataset(
    encoder: &Encoder,
    inputs: Vec<Input>,
    root: &Path,
    options: FileOptions,
    layout: DatasetOptions,
    progress: &Progress,
) -> Result<DatasetSummary> {
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
    let names: &[&'static str] = match layout.val_fraction > 0.0 {
        true => &["train", "val"],
        false => &["train"],
    };
    for name in names {
        let dir = root.join(name);
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    }
    let mut specials: Vec<u32> = encoder.specials().ids.clone();
    specials.sort_unstable();
    let mut writer = DatasetWriter {
        splits: names
            .iter()
            .map(|name| {
                Shards::new(
                    root,
                    name,
                    layout.format,
                    options.dtype_bytes,
                    layout.shard_tokens,
                )
            })
            .collect(),
        layout,
        options,
        is_text: is_text_file(&inputs),
        specials,
        documents: 0,
        current: None,
        tokens: 0,
        ended: 0,
        started: false,
        released: vec![0; inputs.len()],
    };
    let stats = encode_all(encoder, inputs, options, progress, root, &mut writer)?;
    writer.end().map_err(|e| Error::io(root, e))?;
    for shards in &mut writer.splits {
        shards.finish().map_err(|e| Error::io(root, e))?;
    }
    Ok(DatasetSummary {
        documents: writer.documents,
        tokens: writer.tokens,
        splits: names
            .iter()
            .copied()
            .zip(writer.splits.into_iter().map(|s| s.done))
            .collect(),
        stats,
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
    tokens: u64,
    /// Inputs before this one are ended; whether it has begun.
    ended: usize,
    started: bool,
    released: Vec<usize>,
}

impl DatasetWriter {
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

    fn begin(&mut self, input: usize) -> std::io::Result<()> {
        self.end()?;
        let n = self.documents;
        self.documents += 1;
        let split = self.split_of(n);
        self.splits[split].begin(n, input)?;
        self.current = Some(split);
        Ok(())
    }

    /// A whole document, from input `input`.
    fn whole(&mut self, input: usize, ids: &[u32]) -> std::io::Result<()> {
        self.end()?;
        let n = self.documents;
        self.documents += 1;
        self.tokens += ids.len() as u64;
        let split = self.split_of(n);
        self.splits[split].whole(n, input, ids)
    }

    /// Ids of the open document (one is begun if none is open).
    fn push(&mut self, input: usize, ids: &[u32]) -> std::io::Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        if self.current.is_none() {
            self.begin(input)?;
        }
        self.tokens += ids.len() as u64;
        match self.current {
            Some(split) => self.splits[split].push(ids),
            None => Ok(()),
        }
    }

    fn end(&mut self) -> std::io::Result<()> {
        match self.current.take() {
            Some(split) => self.splits[split].end(),
            None => Ok(()),
        }
    }
}

impl Sink for DatasetWriter {
    fn write(&mut self, encoded: &Encoded<'_>) -> std::io::Result<()> {
        let input = encoded.input;
        self.end_until(input)?;
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
            // Special ids are few and usually the vocabulary's last: most ids are told
            // apart by one comparison.
            let least = self.specials.first().copied().unwrap_or(u32::MAX);
            let mut start = 0;
            for (i, id) in ids.iter().enumerate() {
                if *id >= least && self.specials.binary_search(id).is_ok() {
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
            }
            self.push(input, &ids[start..])?;
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

/// SplitMix64's finaliser: a strong mix of one 64-bit word.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}
