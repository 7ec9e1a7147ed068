//! One split of a dataset (`train/`, `val/`) written as shards of at most
//! `shard_tokens` ids, cut between documents, each with its document index.
//!
//! A document that would not fit in what is left of a shard starts the next one; one
//! larger than a whole shard fills shards in turn (the next shard "continues" it).
//! While a document may still move to the next shard (it began in a shard that holds
//! earlier documents), its ids wait in memory; once it starts a shard, they go straight
//! to the file. So what waits is at most one shard's room, and for the documents of
//! real corpora a few KB.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::mpsc::Sender;
use std::sync::Arc;

use super::outfile::OutFile;
use super::resume::{Checkpoint, Place, ShardStart};
use super::waiting::Waiting;
use super::{datatrove, megatron, npy};
use crate::whole_file::WholeFile;

/// The byte layout of a shard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShardFormat {
    /// A `.npy` array (`np.load(mmap_mode="r")`).
    Npy,
    /// Raw little-endian ids (`np.memmap(path, dtype=np.uint16)`, nanoGPT, CS336).
    Bin,
    /// llm.c's `.bin`: a header of 256 int32 (magic, version, token count), then the ids.
    Llmc,
    /// Megatron-LM's indexed dataset: raw ids (`.bin`) and its index (`.idx`).
    Megatron,
    /// datatrove's tokenized file: raw ids (`.ds`), `.ds.index`, `.ds.metadata`.
    Datatrove,
}

impl ShardFormat {
    pub fn parse(name: &str) -> crate::error::Result<Self> {
        match name {
            "npy" => Ok(Self::Npy),
            "bin" => Ok(Self::Bin),
            "llmc" => Ok(Self::Llmc),
            "megatron" => Ok(Self::Megatron),
            "datatrove" => Ok(Self::Datatrove),
            other => Err(crate::error::Error::invalid(format!(
                "format must be \"npy\", \"bin\", \"llmc\", \"megatron\" or \"datatrove\", \
                 not {other:?}"
            ))),
        }
    }

    fn extension(self) -> &'static str {
        match self {
            Self::Npy => "npy",
            Self::Bin | Self::Llmc | Self::Megatron => "bin",
            Self::Datatrove => "ds",
        }
    }

    /// The files a trainer reads beside a shard's ids (suffix after `NNNNN.`, bytes),
    /// for a shard of `tokens` ids of `width` bytes whose documents start at `starts`.
    fn side_files(
        self,
        width: usize,
        starts: &[u64],
        tokens: u64,
        tokenizer: &str,
    ) -> Vec<(&'static str, Vec<u8>)> {
        match self {
            Self::Npy | Self::Bin | Self::Llmc => Vec::new(),
            Self::Megatron => vec![("idx", megatron::index(width, starts, tokens))],
            Self::Datatrove => vec![
                ("ds.index", datatrove::index(starts, tokens)),
                (
                    "ds.metadata",
                    datatrove::metadata(tokenizer, width, tokens).into_bytes(),
                ),
            ],
        }
    }

    /// The header of a shard of `tokens` ids of `width` bytes (a placeholder with 0).
    fn header(self, width: usize, tokens: u64) -> Vec<u8> {
        match self {
            Self::Npy => npy::header(if width == 2 { "<u2" } else { "<u4" }, tokens),
            Self::Bin | Self::Megatron | Self::Datatrove => Vec::new(),
            Self::Llmc => {
                // llm.c's loaders: 20240520 v1 for uint16 ids, 20240801 v7 for uint32.
                let (magic, version) = if width == 2 {
                    (20240520, 1)
                } else {
                    (20240801, 7)
                };
                let mut header = [0i32; 256];
                header[0] = magic;
                header[1] = version;
                header[2] = i32::try_from(tokens).unwrap_or(i32::MAX);
                header.iter().flat_map(|v| v.to_le_bytes()).collect()
            }
        }
    }
}

/// How a split's shards are written: their format, and the tokenizer's name, which
/// datatrove's metadata records.
#[derive(Clone, Debug)]
pub(super) struct ShardStyle {
    pub(super) format: ShardFormat,
    pub(super) tokenizer: Arc<str>,
}

/// A file a trainer reads beside a shard (Megatron's `.idx`, datatrove's `.ds.index`).
#[derive(Clone, Debug)]
pub struct SideFile {
    /// Relative to the dataset folder.
    pub file: String,
    pub size: u64,
    /// Hex; empty until hashed.
    pub sha256: String,
}

/// A finished shard.
#[derive(Clone, Debug)]
pub struct ShardInfo {
    /// The split it belongs to ("train", "val").
    pub split: &'static str,
    /// The shard's file and its index, relative to the dataset folder.
    pub file: String,
    pub index: String,
    /// The file's size in bytes, and the sha256 of the file and of the index (hex;
    /// empty until hashed).
    pub size: u64,
    pub sha256: String,
    pub index_sha256: String,
    /// The files its format adds for a trainer.
    pub side: Vec<SideFile>,
    pub tokens: u64,
    /// Documents that start in the shard.
    pub documents: u64,
    /// Whether the shard begins with the rest of a document from the shard before.
    pub continues: bool,
    /// The dataset-wide number of its first document, and the inputs it came from.
    pub first_document: u64,
    pub inputs: Vec<usize>,
    /// The documents its ids came from, by input: `(input, first, end)`, documents
    /// `first..end` of that input (counted as [`Place`] counts them).
    pub ranges: Vec<(usize, u64, u64)>,
    /// Where the shard after it starts (after the last: the end of the input), for a
    /// run that goes on from here ([`super::resume`]).
    pub next: Option<ShardStart>,
}

struct Open {
    file: OutFile,
    tokens: u64,
    /// Where each document (or continued part) starts.
    starts: Vec<u64>,
    continues: bool,
    first_document: u64,
    ranges: Vec<(usize, u64, u64)>,
}

/// The shards of one split, written in order.
pub(super) struct Shards {
    root: PathBuf,
    split: &'static str,
    format: ShardFormat,
    /// The tokenizer's name, which datatrove's metadata records.
    tokenizer: Arc<str>,
    width: usize,
    shard_tokens: u64,
    open: Option<Open>,
    /// Shards finished (those of an earlier run included).
    finished: usize,
    /// The last shard finished, until the next starts and says where that is.
    pending: Option<ShardInfo>,
    /// Where finished shards go (to be hashed and recorded).
    out: Sender<ShardInfo>,
    /// Where the open document began (the item it began in), set by the caller.
    pub(super) mark: Checkpoint,
    /// Tokens of the open document written so far, in this shard and those before.
    doc_tokens: u64,
    /// The ids of the document being written that may still move to the next shard.
    waiting: Waiting,
    /// Whether a document is open, and whether its ids wait in `waiting`.
    in_doc: bool,
    movable: bool,
    /// The document's dataset-wide number and place.
    document: u64,
    place: Place,
}

impl Shards {
    /// The shards of `split` in `style`, of at most `shard_tokens` ids `width` bytes
    /// wide, after the first `first` (written by an earlier run), each sent to `out`
    /// once finished and the next one started.
    pub(super) fn new(
        root: &Path,
        split: &'static str,
        style: ShardStyle,
        width: usize,
        shard_tokens: u64,
        first: usize,
        out: Sender<ShardInfo>,
    ) -> Self {
        Self {
            root: root.to_owned(),
            split,
            format: style.format,
            tokenizer: style.tokenizer,
            width,
            shard_tokens: shard_tokens.max(1),
            open: None,
            finished: first,
            pending: None,
            out,
            mark: Checkpoint::default(),
            doc_tokens: 0,
            waiting: Waiting::new(&root.join(split)),
            in_doc: false,
            movable: false,
            document: 0,
            place: Place::default(),
        }
    }

    fn name(&self, k: usize, what: &str) -> String {
        format!("{}/{k:05}.{what}", self.split)
    }

    /// Opens the next shard; `continues`: it starts with the rest of the open document.
    fn start_shard(&mut self, continues: bool) -> io::Result<()> {
        let k = self.finished;
        let name = self.name(k, self.format.extension());
        let start = ShardStart {
            from: self.mark,
            document: self.document,
            skip: if continues { self.doc_tokens } else { 0 },
        };
        self.send_pending(start)?;
        let mut file = OutFile::create(&self.root.join(&name)).map_err(|e| named(&name, e))?;
        file.write_bytes(&self.format.header(self.width, 0))
            .map_err(|e| named(&name, e))?;
        self.open = Some(Open {
            file,
            tokens: 0,
            starts: Vec::new(),
            continues,
            first_document: self.document + u64::from(continues),
            ranges: Vec::new(),
        });
        Ok(())
    }

    /// Sends the shard finished last, now that the shard after it starts at `next`.
    fn send_pending(&mut self, next: ShardStart) -> io::Result<()> {
        match self.pending.take() {
            Some(mut info) => {
                info.next = Some(next);
                self.out
                    .send(info)
                    .map_err(|_| io::Error::other("the shards' hasher stopped"))
            }
            None => Ok(()),
        }
    }

    /// Finishes the open shard: its ids, its header, its index.
    fn finish_shard(&mut self) -> io::Result<()> {
        let Some(open) = self.open.take() else {
            return Ok(());
        };
        let k = self.finished;
        let file = self.name(k, self.format.extension());
        let header = self.format.header(self.width, open.tokens);
        let size = header.len() as u64 + open.tokens * self.width as u64;
        open.file.finish(&header).map_err(|e| named(&file, e))?;
        let index = self.name(k, "idx.npy");
        let mut bytes = npy_u64_header(open.starts.len() as u64 + 1);
        for &s in open.starts.iter().chain([open.tokens].iter()) {
            bytes.extend_from_slice(&s.to_le_bytes());
        }
        write_whole(&self.root, &index, &bytes)?;
        let mut side = Vec::new();
        let files = self
            .format
            .side_files(self.width, &open.starts, open.tokens, &self.tokenizer);
        for (suffix, bytes) in files {
            let file = self.name(k, suffix);
            write_whole(&self.root, &file, &bytes)?;
            side.push(SideFile {
                file,
                size: bytes.len() as u64,
                sha256: String::new(),
            });
        }
        let documents = open.starts.len() as u64 - u64::from(open.continues);
        self.finished += 1;
        self.pending = Some(ShardInfo {
            split: self.split,
            file,
            index,
            size,
            sha256: String::new(),
            index_sha256: String::new(),
            side,
            tokens: open.tokens,
            documents,
            continues: open.continues,
            first_document: open.first_document,
            inputs: dedup_inputs(&open.ranges),
            ranges: open.ranges,
            next: None,
        });
        Ok(())
    }

    /// Opens a document: `document`, the dataset-wide number, from input `input`.
    pub(super) fn begin(&mut self, document: u64, place: Place) -> io::Result<()> {
        self.end()?;
        self.in_doc = true;
        self.document = document;
        self.place = place;
        self.doc_tokens = 0;
        let full = self
            .open
            .as_ref()
            .is_some_and(|o| o.tokens >= self.shard_tokens);
        if full {
            self.finish_shard()?;
        }
        if self.open.is_none() {
            self.start_shard(false)?;
        }
        let open = self
            .open
            .as_mut()
            .ok_or_else(|| io::Error::other("no shard"))?;
        // A document that starts a shard stays there, whatever its length.
        self.movable = open.tokens > 0;
        if !self.movable {
            open.starts.push(0);
            note_place(&mut open.ranges, place);
        }
        Ok(())
    }

    /// A whole document at once: written straight to a shard, where [`Shards::push`]
    /// keeps a document that may still move in memory until it ends. Records and most
    /// of a text file's documents come whole; the copy through `waiting` took 9% of a
    /// 2-thread dataset encode of en (116 MB) over a single `.npy`.
    pub(super) fn whole(&mut self, document: u64, place: Place, ids: &[u32]) -> io::Result<()> {
        self.begin(document, place)?;
        if self.movable {
            let tokens = self.open.as_ref().map_or(0, |o| o.tokens);
            if tokens + ids.len() as u64 > self.shard_tokens {
                self.finish_shard()?;
                self.start_shard(false)?;
            }
            self.place_waiting()?;
        }
        self.write(ids)?;
        self.in_doc = false;
        Ok(())
    }

    /// Goes on with document `document`, of which `written` tokens are in the shards
    /// of an earlier run: the next ids start a shard that continues it.
    pub(super) fn go_on_with(&mut self, document: u64, place: Place, written: u64) {
        self.in_doc = true;
        self.movable = false;
        self.document = document;
        self.place = place;
        self.doc_tokens = written;
    }

    /// Ids of the open document.
    pub(super) fn push(&mut self, ids: &[u32]) -> io::Result<()> {
        if !self.movable {
            return self.write(ids);
        }
        self.waiting.push(ids)?;
        let tokens = self.open.as_ref().map_or(0, |o| o.tokens);
        if tokens + self.waiting.len() > self.shard_tokens {
            // It does not fit what is left: it starts the next shard.
            self.finish_shard()?;
            self.start_shard(false)?;
            self.place_waiting()?;
        }
        Ok(())
    }

    /// Writes the waiting document at the end of the open shard, where it now stays.
    fn place_waiting(&mut self) -> io::Result<()> {
        let open = self
            .open
            .as_mut()
            .ok_or_else(|| io::Error::other("no shard"))?;
        open.starts.push(open.tokens);
        note_place(&mut open.ranges, self.place);
        self.movable = false;
        let mut waiting = std::mem::take(&mut self.waiting);
        let result = waiting.drain(|ids| self.write(ids));
        self.waiting = waiting;
        result
    }

    /// Appends ids to the open shard, going on in new shards when it fills.
    fn write(&mut self, mut ids: &[u32]) -> io::Result<()> {
        while !ids.is_empty() {
            if self
                .open
                .as_ref()
                .is_none_or(|o| o.tokens >= self.shard_tokens)
            {
                self.finish_shard()?;
                self.start_shard(true)?;
                let open = self
                    .open
                    .as_mut()
                    .ok_or_else(|| io::Error::other("no shard"))?;
                open.starts.push(0);
                note_place(&mut open.ranges, self.place);
            }
            let open = self
                .open
                .as_mut()
                .ok_or_else(|| io::Error::other("no shard"))?;
            let room = (self.shard_tokens - open.tokens).min(ids.len() as u64) as usize;
            if let Err(e) = open.file.write_ids(&ids[..room], self.width) {
                return Err(named(&self.name(self.finished, self.format.extension()), e));
            }
            open.tokens += room as u64;
            self.doc_tokens += room as u64;
            ids = &ids[room..];
        }
        Ok(())
    }

    /// Closes the open document, if any.
    pub(super) fn end(&mut self) -> io::Result<()> {
        if self.in_doc && self.movable {
            self.place_waiting()?;
        }
        self.in_doc = false;
        Ok(())
    }

    /// Closes the open document and the last shard; `end`: the end of the input, where
    /// a run going on from here has nothing left to write.
    pub(super) fn finish(&mut self, end: ShardStart) -> io::Result<()> {
        self.end()?;
        self.finish_shard()?;
        self.send_pending(end)
    }
}

/// Writes `bytes` to `name` (relative to `root`), whole or not at all.
fn write_whole(root: &Path, name: &str, bytes: &[u8]) -> io::Result<()> {
    let write = || -> io::Result<()> {
        let f = WholeFile::create(&root.join(name), false)?;
        io::Write::write_all(&mut f.file(), bytes)?;
        f.commit()
    };
    write().map_err(|e| named(name, e))
}

/// `e`, naming the shard file `name` (relative to the dataset folder).
fn named(name: &str, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{name}: {e}"))
}

/// Adds a document to a shard's ranges: the range of its input goes on, or one begins.
fn note_place(ranges: &mut Vec<(usize, u64, u64)>, place: Place) {
    match ranges.last_mut() {
        Some((input, _, end)) if *input == place.input && *end == place.document => *end += 1,
        _ => ranges.push((place.input, place.document, place.document + 1)),
    }
}

/// The inputs of `ranges`, each once, in order.
fn dedup_inputs(ranges: &[(usize, u64, u64)]) -> Vec<usize> {
    let mut inputs: Vec<usize> = ranges.iter().map(|r| r.0).collect();
    inputs.dedup();
    inputs
}

/// The `.npy` header of `len` little-endian uint64.
fn npy_u64_header(len: u64) -> Vec<u8> {
    npy::header("<u8", len)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u64s(bytes: &[u8]) -> Vec<u64> {
        bytes[npy::HEADER_LEN..]
            .chunks(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }

    #[test]
    fn documents_move_to_the_next_shard_or_fill_shards_in_turn() {
        let root = std::env::temp_dir().join(format!("bpekit-shards-{}", std::process::id()));
        std::fs::create_dir_all(root.join("train")).unwrap();
        let (sender, receiver) = std::sync::mpsc::channel();
        let style = ShardStyle {
            format: ShardFormat::Bin,
            tokenizer: "t".into(),
        };
        let mut shards = Shards::new(&root, "train", style, 2, 6, 0, sender);
        let lengths = [3u32, 5, 2, 10, 0, 4];
        let place = |n: usize| Place {
            input: 0,
            document: n as u64,
        };
        let mut next = 0u32;
        for (n, &len) in lengths.iter().enumerate() {
            let ids: Vec<u32> = (next..next + len).collect();
            next += len;
            if n % 2 == 0 {
                shards.whole(n as u64, place(n), &ids).unwrap();
                continue;
            }
            // In two pushes, as documents spanning chunks arrive.
            shards.begin(n as u64, place(n)).unwrap();
            let half = ids.len() / 2;
            shards.push(&ids[..half]).unwrap();
            shards.push(&ids[half..]).unwrap();
            shards.end().unwrap();
        }
        shards.finish(ShardStart::default()).unwrap();
        drop(shards);
        let done: Vec<ShardInfo> = receiver.iter().collect();
        assert!(done[..5].iter().all(|s| s.next.is_some()));
        let tokens: Vec<u64> = done.iter().map(|s| s.tokens).collect();
        assert_eq!(tokens, [3, 5, 2, 6, 4, 4]);
        let documents: Vec<u64> = done.iter().map(|s| s.documents).collect();
        assert_eq!(documents, [1, 1, 1, 1, 1, 1]);
        let continues: Vec<bool> = done.iter().map(|s| s.continues).collect();
        assert_eq!(continues, [false, false, false, false, true, false]);
        let ranges: Vec<_> = done.iter().map(|s| s.ranges.clone()).collect();
        assert_eq!(ranges[3], [(0, 3, 4)]);
        assert_eq!(ranges[4], [(0, 3, 5)]);
        let index = std::fs::read(root.join(&done[4].index)).unwrap();
        assert_eq!(u64s(&index), [0, 4, 4]);
        let mut all = Vec::new();
        for shard in &done {
            let bytes = std::fs::read(root.join(&shard.file)).unwrap();
            all.extend(
                bytes
                    .chunks(2)
                    .map(|c| u32::from(u16::from_le_bytes([c[0], c[1]]))),
            );
        }
        assert_eq!(all, (0..next).collect::<Vec<_>>());
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn llmc_headers_follow_llm_c() {
        let h = ShardFormat::Llmc.header(2, 1234);
        assert_eq!(h.len(), 1024);
        let word = |i: usize| i32::from_le_bytes(h[4 * i..4 * i + 4].try_into().unwrap());
        assert_eq!((word(0), word(1), word(2)), (20240520, 1, 1234));
        let h = ShardFormat::Llmc.header(4, 7);
        let word = |i: usize| i32::from_le_bytes(h[4 * i..4 * i + 4].try_into().unwrap());
        assert_eq!((word(0), word(1), word(2)), (20240801, 7, 7));
    }
}
