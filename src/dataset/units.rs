//! A distributed dataset encode's two halves: a worker encodes one unit of the input
//! (a byte range of a file, a run of row groups) into a *unit file* of its items' ids
//! and what the dataset writer needs to know of each; the driver then replays every
//! unit file, in input order, into the dataset writer ([`super::writer`]), which cuts
//! documents, splits and shards exactly as a run that encoded the inputs itself.
//!
//! Why replay rather than have each worker write shards: shard boundaries, document
//! numbers and the val split depend on every token before them, so a worker cannot
//! know its shards until the units before it are done. The replay only copies ids (it
//! reads and writes each id once), which is the cheap half of the work.
//!
//! A unit file: a 32-byte header (`BPEKUNIT`, version, id width, items, tokens), then
//! per item a 56-byte head (input, place in it, documents, bytes and skipped records
//! read, ids, record ends; each a little-endian `u64`), its ids at the header's width
//! and its record ends (`u64`). It is written under no name and put in place when
//! whole ([`OutFile`]).

use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use super::job::{check_options, encode_all, Encoded, Sink};
use super::options::FileOptions;
use super::outfile::OutFile;
use crate::corpus::{Input, StatsSummary, Tally};
use crate::encode::Encoder;
use crate::error::{Error, Result};
use crate::progress::Progress;

const MAGIC: &[u8; 8] = b"BPEKUNIT";
const VERSION: u32 = 1;
const HEADER_LEN: usize = 32;
const ITEM_HEAD_LEN: usize = 56;

/// A unit file written: its token count, what was read, the file's CRC-32 (what a
/// rerun checks it by) and its skeleton.
pub struct UnitWritten {
    pub tokens: u64,
    pub stats: StatsSummary,
    pub crc32: u32,
    pub items: Vec<SkeletonItem>,
}

/// One item of a unit file as the driver plans shards from it (Python's
/// `shardplan.unit_skeleton` reads the same from the file): made as the item is
/// written, it spares the worker reading its ids back (on `owt-12G`, 8 GB read through
/// a mapping and scanned by numpy, ~3.5 CPU seconds a GB of ids).
pub struct SkeletonItem {
    /// Its input, among the unit's.
    pub input: u64,
    /// Where it starts in its input.
    pub at: u64,
    pub documents: u64,
    pub read: u64,
    pub skipped: u64,
    /// Where its ids start in the file (bytes).
    pub offset: u64,
    pub ids: u64,
    /// Where its documents end (id positions): after each special token of a text
    /// input; each record's end.
    pub cuts: Vec<u64>,
}

/// Encodes `inputs` (a unit's: usually one) into the unit file `output`.
pub fn encode_unit(
    encoder: &Encoder,
    inputs: Vec<Input>,
    output: &Path,
    options: FileOptions,
    progress: &Progress,
) -> Result<UnitWritten> {
    check_options(encoder, &options)?;
    let io = |e| Error::io(output, e);
    let mut file = OutFile::with_checksum(output, HEADER_LEN)
        .map_err(io)?
        .through_page_cache();
    file.write_bytes(&[0; HEADER_LEN]).map_err(io)?;
    let mut cut_ids: Vec<u32> = encoder.specials().tokens().map(|(_, id)| id).collect();
    cut_ids.sort_unstable();
    cut_ids.dedup();
    let mut writer = UnitWriter {
        file: &mut file,
        width: options.dtype_bytes,
        items: 0,
        tokens: 0,
        released: vec![0; inputs.len()],
        text: inputs.iter().map(Input::is_text).collect(),
        cut_ids,
        at_byte: HEADER_LEN as u64,
        skeleton: Vec::new(),
    };
    let stats = encode_all(
        encoder,
        inputs,
        options,
        progress,
        output,
        &mut writer,
        None,
    )?;
    let header = header(options.dtype_bytes, writer.items, writer.tokens);
    let (tokens, items) = (writer.tokens, std::mem::take(&mut writer.skeleton));
    let (_, crc) = file.finish_checked(&header).map_err(io)?;
    let crc32 = crc.ok_or_else(|| Error::internal("a unit file's checksum was not taken"))?;
    Ok(UnitWritten {
        tokens,
        stats,
        crc32,
        items,
    })
}

/// The positions just after each id of `ids` that is among `cut_ids` (sorted).
fn cuts_after(ids: &[u32], cut_ids: &[u32], cuts: &mut Vec<u64>) -> std::io::Result<()> {
    let Some(&lowest) = cut_ids.first() else {
        return Ok(());
    };
    const BLOCK: usize = 64;
    for (b, block) in ids.chunks(BLOCK).enumerate() {
        // Special tokens are rare and most lie above every ordinary id: a block's
        // test is one vectorised pass.
        if block.iter().fold(0u32, |m, &id| m.max(id)) < lowest {
            continue;
        }
        for (i, id) in block.iter().enumerate() {
            if *id >= lowest && cut_ids.binary_search(id).is_ok() {
                cuts.try_reserve(1)
                    .map_err(|_| std::io::ErrorKind::OutOfMemory)?;
                cuts.push((b * BLOCK + i + 1) as u64);
            }
        }
    }
    Ok(())
}

fn header(width: usize, items: u64, tokens: u64) -> [u8; HEADER_LEN] {
    let mut h = [0; HEADER_LEN];
    h[..8].copy_from_slice(MAGIC);
    h[8..12].copy_from_slice(&VERSION.to_le_bytes());
    h[12..16].copy_from_slice(&(width as u32).to_le_bytes());
    h[16..24].copy_from_slice(&items.to_le_bytes());
    h[24..32].copy_from_slice(&tokens.to_le_bytes());
    h
}

/// Writes each item as it comes, in order; the marks around files are the dataset
/// writer's, at replay.
struct UnitWriter<'f> {
    file: &'f mut OutFile,
    width: usize,
    items: u64,
    tokens: u64,
    released: Vec<usize>,
    /// Whether each input is text (cut at special tokens), and those tokens' ids.
    text: Vec<bool>,
    cut_ids: Vec<u32>,
    /// Bytes of the file so far.
    at_byte: u64,
    skeleton: Vec<SkeletonItem>,
}

impl Sink for UnitWriter<'_> {
    fn write(&mut self, encoded: &Encoded<'_>) -> std::io::Result<()> {
        let mut cuts = Vec::new();
        let text = self.text.get(encoded.input).copied();
        if text.ok_or_else(|| std::io::Error::other("internal: an item of no input"))? {
            cuts_after(&encoded.ids, &self.cut_ids, &mut cuts)?;
        } else {
            cuts.try_reserve_exact(encoded.record_ends.len())
                .map_err(|_| std::io::ErrorKind::OutOfMemory)?;
            cuts.extend(encoded.record_ends.iter().map(|&e| e as u64));
        }
        let n_ids = encoded.ids.len() as u64;
        self.skeleton
            .try_reserve(1)
            .map_err(|_| std::io::ErrorKind::OutOfMemory)?;
        self.skeleton.push(SkeletonItem {
            input: encoded.input as u64,
            at: encoded.at,
            documents: encoded.tally.documents,
            read: encoded.tally.bytes,
            skipped: encoded.tally.skipped,
            offset: self.at_byte + ITEM_HEAD_LEN as u64,
            ids: n_ids,
            cuts,
        });
        let body = n_ids * self.width as u64 + 8 * encoded.record_ends.len() as u64;
        self.at_byte += ITEM_HEAD_LEN as u64 + body;
        let fields = [
            encoded.input as u64,
            encoded.at,
            encoded.tally.documents,
            encoded.tally.bytes,
            encoded.tally.skipped,
            encoded.ids.len() as u64,
            encoded.record_ends.len() as u64,
        ];
        let mut head = [0u8; ITEM_HEAD_LEN];
        for (d, v) in head.chunks_exact_mut(8).zip(fields) {
            d.copy_from_slice(&v.to_le_bytes());
        }
        self.file.write_bytes(&head)?;
        self.file.write_ids(&encoded.ids, self.width)?;
        for &end in &encoded.record_ends {
            self.file.write_bytes(&(end as u64).to_le_bytes())?;
        }
        self.items += 1;
        self.tokens += encoded.ids.len() as u64;
        if let Some((source, end)) = encoded.mapped {
            let released = &mut self.released[encoded.input];
            *released = source.release_behind(*released, end);
        }
        Ok(())
    }

    fn end_until(&mut self, _input: usize) -> std::io::Result<()> {
        Ok(())
    }
}

/// A unit file to replay, and the index (among the dataset's inputs) of its first
/// input: its items' inputs count from there.
#[derive(Clone, Debug)]
pub struct UnitFile {
    pub path: PathBuf,
    pub first_input: usize,
}

/// What a dataset is assembled from: its unit files in input order, and whether each
/// of its inputs is a text file (the inputs the units were encoded from).
pub struct Assembly<'a> {
    /// The unit files, each as it becomes ready: the replay goes on while later units
    /// are still being encoded.
    pub units: Box<dyn Iterator<Item = Result<UnitFile>> + Send + 'a>,
    pub is_text: Vec<bool>,
    /// The unit files' bytes in all, for progress (0: not known).
    pub size: u64,
}

/// Replays the items of `units`, in order, into `sink`; `n_inputs`: the dataset's
/// inputs, which every item's must be among; `width`: the ids' bytes the units must
/// have been written with. Returns what the items read.
pub(super) fn replay(
    units: impl Iterator<Item = Result<UnitFile>>,
    n_inputs: usize,
    width: usize,
    sink: &mut impl Sink,
    progress: &Progress,
) -> Result<Tally> {
    let mut read = Tally::default();
    let mut last = 0usize;
    let mut ids: Vec<u32> = Vec::new();
    let mut ends: Vec<usize> = Vec::new();
    for unit in units {
        let unit = unit?;
        let path = &unit.path;
        let bad = |what: String| Error::invalid(format!("{}: {what}", path.display()));
        let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        let size = file.metadata().map_err(|e| Error::io(path, e))?.len();
        let mut r = BufReader::with_capacity(1 << 20, file);
        let mut h = [0u8; HEADER_LEN];
        read_exact(&mut r, &mut h, path)?;
        let word = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
        if &h[..8] != MAGIC || h[8..12] != VERSION.to_le_bytes() {
            return Err(bad("not a bpekit unit file of this version".into()));
        }
        let stored = u32::from_le_bytes([h[12], h[13], h[14], h[15]]) as usize;
        if stored != width {
            return Err(bad(format!("holds {stored}-byte ids, not {width}-byte")));
        }
        let (items, tokens) = (word(&h[16..24]), word(&h[24..32]));
        let mut seen_tokens = 0u64;
        let mut at_byte = HEADER_LEN as u64;
        for _ in 0..items {
            let mut head = [0u8; ITEM_HEAD_LEN];
            read_exact(&mut r, &mut head, path)?;
            let f: Vec<u64> = head.chunks_exact(8).map(word).collect();
            let (n_ids, n_ends) = (f[5], f[6]);
            let body = n_ids
                .checked_mul(width as u64)
                .and_then(|b| n_ends.checked_mul(8).and_then(|e| b.checked_add(e)))
                .filter(|&b| at_byte + ITEM_HEAD_LEN as u64 + b <= size)
                .ok_or_else(|| bad(format!("an item claims more than the file's {size} bytes")))?;
            let input = usize::try_from(f[0])
                .ok()
                .and_then(|i| i.checked_add(unit.first_input))
                .filter(|&i| i < n_inputs)
                .ok_or_else(|| bad(format!("an item of input {} of {n_inputs}", f[0])))?;
            // The writer ends inputs as later ones begin: they must come in order.
            if input < last {
                return Err(bad("its items' inputs are out of order".into()));
            }
            last = input;
            let n_ids = n_ids as usize; // bounded by the file's size above
            ids.clear();
            ids.try_reserve(n_ids)
                .map_err(|_| Error::out_of_memory::<u32>("a unit's ids", n_ids))?;
            read_ids(&mut r, &mut ids, n_ids, width, path)?;
            ends.clear();
            let mut prev = 0usize;
            for _ in 0..n_ends {
                let mut b = [0u8; 8];
                read_exact(&mut r, &mut b, path)?;
                let end = usize::try_from(u64::from_le_bytes(b)).unwrap_or(usize::MAX);
                if end < prev || end > n_ids {
                    return Err(bad(format!("a record ends at id {end} of {n_ids}")));
                }
                prev = end;
                ends.push(end);
            }
            let tally = Tally {
                documents: f[2],
                bytes: f[3],
                skipped: f[4],
            };
            read.add(tally);
            let encoded = Encoded {
                input,
                at: f[1],
                tally,
                mapped: None,
                ids: std::mem::take(&mut ids),
                record_ends: std::mem::take(&mut ends),
            };
            let written = sink.write(&encoded).map_err(|e| Error::io(path, e));
            (ids, ends) = (encoded.ids, encoded.record_ends);
            written?;
            seen_tokens += n_ids as u64;
            at_byte += ITEM_HEAD_LEN as u64 + body;
            progress.add(ITEM_HEAD_LEN as u64 + body);
            progress.check()?;
        }
        if seen_tokens != tokens || at_byte != size {
            return Err(bad(format!(
                "holds {size} bytes, {seen_tokens} tokens; its header says {tokens} tokens \
                 in {at_byte} bytes"
            )));
        }
    }
    Ok(read)
}

fn read_exact(r: &mut impl Read, buf: &mut [u8], path: &Path) -> Result<()> {
    r.read_exact(buf).map_err(|e| Error::io(path, e))
}

/// Reads `n` ids of `width` bytes into `ids`.
fn read_ids(
    r: &mut impl Read,
    ids: &mut Vec<u32>,
    n: usize,
    width: usize,
    path: &Path,
) -> Result<()> {
    let mut buf = [0u8; 1 << 16];
    let mut left = n * width;
    while left > 0 {
        let take = left.min(buf.len());
        read_exact(r, &mut buf[..take], path)?;
        if width == 2 {
            ids.extend(
                buf[..take]
                    .chunks_exact(2)
                    .map(|c| u32::from(u16::from_le_bytes([c[0], c[1]]))),
            );
        } else {
            ids.extend(
                buf[..take]
                    .chunks_exact(4)
                    .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])),
            );
        }
        left -= take;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::options::DatasetOptions;
    use super::super::run::{assemble_dataset, encode_dataset, DatasetRun};
    use super::super::shard::ShardFormat;
    use super::*;
    use crate::corpus::{file_ranges, Format};

    /// Every file under `dir`, by its path below it, with its bytes.
    fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
        let mut out = Vec::new();
        for split in ["train", "val"] {
            for entry in std::fs::read_dir(dir.join(split)).unwrap() {
                let path = entry.unwrap().path();
                out.push((
                    path.strip_prefix(dir).unwrap().into(),
                    std::fs::read(&path).unwrap(),
                ));
            }
        }
        out.sort();
        out
    }

    #[test]
    fn a_unit_sizes_its_cache_for_its_workers_share() {
        // A worker keeps its encoder for every unit it gets: its cache is made for
        // `table_bytes` where that is more than the unit. The file is the same.
        let vocab: Vec<(u32, Vec<u8>)> = (0..=255u8).map(|b| (u32::from(b), vec![b])).collect();
        let dir = std::env::temp_dir().join(format!("bpekit-unit-table-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let input = dir.join("in.txt");
        std::fs::write(&input, "some words<|e|>and more words\n".repeat(500)).unwrap();
        let mut written = Vec::new();
        for (table_bytes, lines) in [(0, 1 << 15), (40 << 20, 1 << 18)] {
            let e = Encoder::from_merges(vocab.clone(), &[], vec!["<|e|>".into()], "gpt2").unwrap();
            let options = FileOptions {
                num_threads: 1,
                table_bytes,
                ..FileOptions::default()
            };
            let whole = Input::File {
                path: input.clone(),
                format: Format::Text,
                range: None,
            };
            let path = dir.join("u.ids");
            encode_unit(&e, vec![whole], &path, options, &Progress::new()).unwrap();
            assert_eq!(e.lease().unwrap().short.capacity_lines(), lines);
            written.push(std::fs::read(&path).unwrap());
        }
        assert_eq!(written[0], written[1]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn units_replayed_write_the_dataset_the_inputs_write() {
        let vocab: Vec<(u32, Vec<u8>)> = (0..=255u8).map(|b| (u32::from(b), vec![b])).collect();
        let e = Encoder::from_merges(vocab, &[], vec!["<|e|>".into()], "gpt2").unwrap();
        let dir = std::env::temp_dir().join(format!("bpekit-units-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let input = dir.join("in.txt");
        std::fs::write(&input, "one doc\nTwo lines<|e|>second doc\nok ".repeat(40)).unwrap();
        let options = FileOptions {
            chunk_size: 64,
            num_threads: 2,
            dtype_bytes: 2,
            after_each_file: Some(256),
            ..FileOptions::default()
        };
        let layout = DatasetOptions {
            format: ShardFormat::Npy,
            tokenizer: "t".into(),
            shard_tokens: 97,
            val_fraction: 0.25,
            seed: 1,
        };
        let whole = || Input::File {
            path: input.clone(),
            format: Format::Text,
            range: None,
        };
        let one = dir.join("one");
        let run = DatasetRun::default;
        encode_dataset(
            &e,
            vec![whole(), whole()],
            &one,
            options,
            layout.clone(),
            &Progress::new(),
            run(),
        )
        .unwrap();
        let specials = e.specials().matcher.clone();
        let kind = e.pretokenizer().kind();
        let ranges = file_ranges(&input, false, &specials, 300, kind).unwrap();
        assert!(ranges.len() > 3);
        // The file twice: as units of byte ranges, then whole.
        let mut units = Vec::new();
        for (k, range) in ranges.into_iter().enumerate() {
            let path = dir.join(format!("u{k}.ids"));
            let unit = Input::File {
                path: input.clone(),
                format: Format::Text,
                range: Some(range),
            };
            encode_unit(&e, vec![unit], &path, options, &Progress::new()).unwrap();
            units.push(UnitFile {
                path,
                first_input: 0,
            });
        }
        let path = dir.join("whole.ids");
        encode_unit(&e, vec![whole()], &path, options, &Progress::new()).unwrap();
        units.push(UnitFile {
            path,
            first_input: 1,
        });
        let two = dir.join("two");
        let assembly = Assembly {
            units: Box::new(units.into_iter().map(Ok)),
            is_text: vec![true, true],
            size: 0,
        };
        let summary =
            assemble_dataset(&e, assembly, &two, options, layout, &Progress::new(), run()).unwrap();
        assert!(summary.shards.len() > 4);
        assert_eq!(files(&one), files(&two));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
