//! Input files: mapped into memory (or decompressed, for `.gz`), cut into chunks
//! that no pre-token and no special token crosses, and decoded as UTF-8 under the
//! caller's policy.

use std::borrow::Cow;
use std::fs::File;
use std::io::Read;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use memmap2::Mmap;

use crate::error::{Error, Result};
use crate::mapguard::Guard;
use crate::pretokenize::{cuts, Kind};
use crate::progress::Progress;
use crate::specials::SpecialMatcher;

/// What to do with bytes that are not UTF-8.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Utf8Policy {
    /// Fail, naming the file and byte offset.
    Strict,
    /// Replace each maximal invalid subsequence with U+FFFD, as Python's `errors="replace"`.
    Replace,
    /// Drop invalid bytes, as Python's `errors="ignore"`.
    Ignore,
}

impl Utf8Policy {
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "strict" => Ok(Self::Strict),
            "replace" => Ok(Self::Replace),
            "ignore" => Ok(Self::Ignore),
            other => Err(Error::invalid(format!(
                "errors must be \"strict\", \"replace\" or \"ignore\", not {other:?}"
            ))),
        }
    }
}

enum Bytes {
    Mapped(Mapped),
    Owned(Vec<u8>),
}

/// A mapped input file, registered with [`mapguard`] while it lives.
struct Mapped {
    /// Declared before `map`, so it unregisters the mapping before it is unmapped.
    guard: Option<Guard>,
    map: Mmap,
    /// The file's device and inode, to tell a shrunk file from one replaced by
    /// another under the same name (which leaves the mapped bytes as they were).
    id: Option<(u64, u64)>,
}

/// The text of the gzip file `file` (any number of members), decompressed into a
/// scratch file ([`spool`]): like any mapped input it is read and released chunk by
/// chunk, so memory does not grow with its size. It needs room in the temporary
/// folder (`TMPDIR`).
fn gunzip(path: &Path, file: File) -> Result<Bytes> {
    let decoder = flate2::read::MultiGzDecoder::new(std::io::BufReader::new(file));
    spool(path, decoder, "decompressing")
}

/// The bytes `reader` gives (the text of `path`, for errors), copied into a scratch
/// file in the temporary folder that no other process can see
/// ([`crate::atomic::scratch_file`]) and mapped. For inputs that cannot be mapped
/// themselves (pipes, `.gz` files): memory stays bounded however long they are,
/// where reading them into memory took all of it for an endless pipe.
fn spool(path: &Path, mut reader: impl Read, doing: &str) -> Result<Bytes> {
    let dir = std::env::temp_dir();
    let in_tmp = |e: std::io::Error| {
        let message = format!(
            "{doing} {} here: {e} (set TMPDIR to a folder with room)",
            path.display()
        );
        Error::io(&dir, std::io::Error::new(e.kind(), message))
    };
    let mut out = crate::atomic::scratch_file(&dir).map_err(in_tmp)?;
    let mut buf = vec![0u8; 1 << 20];
    let mut len = 0usize;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::io(path, e)),
        };
        std::io::Write::write_all(&mut out, &buf[..n]).map_err(in_tmp)?;
        len += n;
    }
    if len == 0 {
        return Ok(Bytes::Owned(Vec::new()));
    }
    // SAFETY: the file is private to this process (no name, or unlinked) and no
    // longer written. Not guarded: nobody else can truncate it.
    unsafe { Mmap::map(&out) }
        .map(|map| {
            Bytes::Mapped(Mapped {
                guard: None,
                map,
                id: None,
            })
        })
        .map_err(in_tmp)
}

/// Whether `file` is a device that is not a terminal (`/dev/zero`, `/dev/urandom`, a
/// disk): endless or binary, never a text to read to its end.
fn is_endless_device(file: &File, meta: &std::fs::Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::FileTypeExt;
        let ft = meta.file_type();
        // SAFETY: isatty only inspects the descriptor.
        (ft.is_char_device() || ft.is_block_device())
            && unsafe { libc::isatty(file.as_raw_fd()) } == 0
    }
    #[cfg(not(unix))]
    {
        let _ = (file, meta);
        false
    }
}

/// One input file's bytes.
pub struct Source {
    pub path: PathBuf,
    bytes: Bytes,
    /// The file's size on disk (0 for pipes), which progress totals start from.
    on_disk: u64,
}

impl Source {
    /// Maps `path`; reads it whole when it cannot be mapped (a pipe, a device); when
    /// its name ends in `.gz`, decompresses it into a temporary file it maps ([`gunzip`]).
    pub fn open(path: &Path) -> Result<Self> {
        let err = |e| Error::io(path, e);
        let mut file = File::open(path).map_err(err)?;
        let meta = file.metadata().map_err(err)?;
        if meta.is_dir() {
            return Err(Error::invalid(format!(
                "{}: is a directory; pass its files",
                path.display()
            )));
        }
        let bytes = if path.extension().is_some_and(|e| e == "gz") {
            // An empty file reads as empty, as Python's gzip reads it (a pipe, which
            // reports a length of 0 too, is read).
            if meta.is_file() && meta.len() == 0 {
                Bytes::Owned(Vec::new())
            } else {
                gunzip(path, file)?
            }
        } else if is_endless_device(&file, &meta) {
            return Err(Error::invalid(format!(
                "{}: is a device, not a file of text (it may never end); give a file or a pipe",
                path.display()
            )));
        } else if !meta.is_file() {
            // Pipes (`/dev/stdin`, `<(...)`) and terminals cannot be mapped, and may
            // be endless: spooled, in bounded memory.
            spool(path, file, "reading")?
        } else if meta.len() == 0 {
            // An empty file cannot be mapped; files of /proc report 0 and hold text.
            let mut buf = Vec::new();
            file.read_to_end(&mut buf).map_err(err)?;
            Bytes::Owned(buf)
        } else {
            let mut buf = Vec::new();
            // SAFETY: the map is read-only. A file truncated under us while mapped
            // would raise SIGBUS; the guard turns that into zeros and a mark that the
            // readers check ([`Source::check_intact`]).
            match unsafe { Mmap::map(&file) } {
                Ok(map) => Bytes::Mapped(Mapped {
                    guard: Guard::new(map.as_ptr(), map.len()),
                    map,
                    id: file_id(&meta),
                }),
                // Out of address space (a memory limit): reading it whole would not
                // fit either.
                Err(e) if e.raw_os_error() == Some(libc::ENOMEM) => return Err(err(e)),
                // Pipes and special files cannot be mapped: read them instead.
                Err(_) => {
                    file.read_to_end(&mut buf).map_err(err)?;
                    Bytes::Owned(buf)
                }
            }
        };
        Ok(Self {
            path: path.to_owned(),
            bytes,
            on_disk: meta.len(),
        })
    }

    /// In-memory bytes, for tests and for text handed over from Python.
    pub fn from_bytes(path: impl Into<PathBuf>, bytes: Vec<u8>) -> Self {
        Self {
            path: path.into(),
            on_disk: bytes.len() as u64,
            bytes: Bytes::Owned(bytes),
        }
    }

    /// Tells the OS that `range` of a mapped file will not be read again, so its pages
    /// leave this process's resident memory (they stay in the page cache). Readers of
    /// huge files call it behind them to keep memory flat. No-op for in-memory bytes.
    fn release(&self, range: Range<usize>) {
        #[cfg(unix)]
        if let Bytes::Mapped(Mapped { map: m, .. }) = &self.bytes {
            if range.start < range.end && range.end <= m.len() {
                // SAFETY: the map is private, read-only and never written, so dropping its
                // pages only means they are read from the file again if touched.
                let _ = unsafe {
                    m.unchecked_advise_range(
                        memmap2::UncheckedAdvice::DontNeed,
                        range.start,
                        range.len(),
                    )
                };
            }
        }
        #[cfg(not(unix))]
        let _ = range;
    }

    /// A reader that is done with `..to` and released `..from` before: releases
    /// `from..` up to the last 2 MiB boundary (of address) at or below `to` once that
    /// is at least [`RELEASE_STEP`] on, and returns where released bytes now end.
    /// `to == len` releases the rest.
    ///
    /// Why: releasing each 1 MB chunk as it was written split the file's huge-page
    /// mappings and flushed them from both cores' TLBs each time, with an interrupt
    /// to the other core. In a 1-thread encode of the 116 MB English corpus on the
    /// 2-core test VM, waiting for those flushes took from nothing to 14% of the
    /// time, by the host's load (perf, gpt2).
    pub fn release_behind(&self, from: usize, to: usize) -> usize {
        use crate::hugemem::HUGE_PAGE;
        let len = self.bytes().len();
        let base = self.bytes().as_ptr() as usize;
        let end = match to >= len {
            true => len,
            false => ((base + to) & !(HUGE_PAGE - 1)).saturating_sub(base),
        };
        if end <= from || (end < len && end - from < RELEASE_STEP) {
            return from;
        }
        self.release(from..end);
        end
    }

    pub fn bytes(&self) -> &[u8] {
        match &self.bytes {
            Bytes::Mapped(m) => &m.map,
            Bytes::Owned(v) => v,
        }
    }

    /// Whether the bytes were read into memory (pipes) rather than mapped.
    fn is_owned(&self) -> bool {
        matches!(self.bytes, Bytes::Owned(_))
    }

    /// Whether a read of the mapped file ran past its end (it was truncated while
    /// mapped), and read zeros there instead ([`mapguard`]). One atomic load.
    pub fn faulted(&self) -> bool {
        match &self.bytes {
            Bytes::Mapped(m) => m.guard.as_ref().is_some_and(Guard::faulted),
            Bytes::Owned(_) => false,
        }
    }

    /// An error if the file shrank while it was mapped: a read past its new end was
    /// turned into zeros, or (a shrink within the last page faults nowhere) the file
    /// at the same path, the same inode, is now shorter than what was mapped.
    pub fn check_intact(&self) -> Result<()> {
        let Bytes::Mapped(m) = &self.bytes else {
            return Ok(());
        };
        let now = std::fs::metadata(&self.path).ok();
        let shrunk = now.as_ref().is_some_and(|meta| {
            file_id(meta) == m.id && m.id.is_some() && meta.len() < m.map.len() as u64
        });
        if self.faulted() || shrunk {
            let size = now.map_or(String::new(), |meta| format!(", now {}", meta.len()));
            return Err(Error::io(
                &self.path,
                std::io::Error::other(format!(
                    "changed size while being read (was {} bytes{size}); \
                     nothing was written from it",
                    m.map.len()
                )),
            ));
        }
        Ok(())
    }
}

/// Files open at once at most. Each mapped file is one of the process's memory maps,
/// and Linux allows 65,530 by default: a folder of 70,000 files, all mapped up front,
/// left none for the threads' stacks (the encode panicked).
const GROUP_FILES: usize = 1024;

/// The least a reader releases at once ([`Source::release_behind`]): mapped input
/// stays at most this much (plus a huge page) above what it reads. 8 MB cut the TLB
/// flushes of a file encode 8-fold against 1 MB steps, for ~10 MiB more peak memory
/// (en, gpt2: 75 -> 85 MiB on 1 thread, 93 -> 97 on 2).
const RELEASE_STEP: usize = 8 << 20;

/// Input bytes read into memory (pipes and devices) held at once at most, beyond the
/// file that passes it.
const GROUP_READ_BYTES: usize = 256 << 20;

/// The sum of the files' sizes on disk: what a progress bar can know before opening
/// them (a `.gz` file's is its compressed size; [`Groups`] corrects it as it opens).
pub fn size_on_disk(paths: &[PathBuf]) -> u64 {
    paths
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum()
}

/// A file's device and inode, where the platform has them.
fn file_id(meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some((meta.dev(), meta.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        None
    }
}

/// An error if any of `sources` shrank while it was read ([`Source::check_intact`]);
/// called once a group's work is done, before its results are used.
pub fn check_intact(sources: &[Source]) -> Result<()> {
    sources.iter().try_for_each(Source::check_intact)
}

/// `paths` opened in order, a group at a time ([`GROUP_FILES`], [`GROUP_READ_BYTES`]):
/// work that maps files runs group after group, so the open files and the bytes read
/// into memory stay bounded however many files there are. Each group moves the
/// progress total from its files' sizes on disk to the bytes they hold.
pub struct Groups<'a> {
    paths: &'a [PathBuf],
    next: usize,
    progress: &'a Progress,
}

impl<'a> Groups<'a> {
    pub fn new(paths: &'a [PathBuf], progress: &'a Progress) -> Self {
        Self {
            paths,
            next: 0,
            progress,
        }
    }
}

impl Iterator for Groups<'_> {
    type Item = Result<Vec<Source>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.paths.len() {
            return None;
        }
        let mut group = Vec::new();
        let mut read_bytes = 0;
        while self.next < self.paths.len()
            && group.len() < GROUP_FILES
            && read_bytes < GROUP_READ_BYTES
        {
            let path = &self.paths[self.next];
            self.next += 1;
            let source = match Source::open(path) {
                Ok(s) => s,
                Err(e) => return Some(Err(e)),
            };
            let on_disk = source.on_disk;
            let held = source.bytes().len() as u64;
            let total = self.progress.total();
            self.progress
                .set_total((total + held).saturating_sub(on_disk.min(total)));
            if source.is_owned() {
                read_bytes += source.bytes().len();
            }
            group.push(source);
        }
        Some(Ok(group))
    }
}

/// Cuts `data` into ranges of about `target` bytes. Each cut is the first safe
/// place at or after the previous cut plus `target`: right before a special token, or
/// at a line cut of the pattern `kind` ([`cuts`]); never inside an occurrence of a
/// special token.
/// A stretch with no safe place stays whole: correct, just less parallel.
///
/// Only the bytes near each place looked at are read, not the whole input:
/// finding the cuts of a 116 MB file by scanning it all took ~25 ms on one thread
/// before any encoding could start (8% of a 2-thread encode).
pub fn chunk_ranges(
    data: &[u8],
    specials: &SpecialMatcher,
    target: usize,
    kind: Kind,
) -> Vec<Range<usize>> {
    ChunkCuts::new(data, specials, target, kind).collect()
}

/// The ranges of [`chunk_ranges`], found one at a time.
struct ChunkCuts<'a> {
    data: &'a [u8],
    specials: &'a SpecialMatcher,
    target: usize,
    kind: Kind,
    /// Where the next range starts.
    start: usize,
    /// Where the search for the next cut starts.
    from: usize,
}

impl<'a> ChunkCuts<'a> {
    fn new(data: &'a [u8], specials: &'a SpecialMatcher, target: usize, kind: Kind) -> Self {
        let target = target.max(1);
        Self {
            data,
            specials,
            target,
            kind,
            start: 0,
            from: target,
        }
    }

    /// Makes the next range about `target` bytes (those after it too).
    fn set_target(&mut self, target: usize) {
        let target = target.max(1);
        if target != self.target {
            self.target = target;
            // Between ranges, the search for the next cut always starts one target
            // past the range's start.
            self.from = self.start.saturating_add(target);
        }
    }

    /// Bytes not yet in a range.
    fn left(&self) -> usize {
        self.data.len() - self.start
    }
}

impl Iterator for ChunkCuts<'_> {
    type Item = Range<usize>;

    fn next(&mut self) -> Option<Range<usize>> {
        let len = self.data.len();
        while self.from < len {
            let Some(cut) = next_cut(self.data, self.specials, self.from, self.kind) else {
                break;
            };
            self.from = (cut + self.target).max(self.from + self.target);
            if cut > self.start {
                let range = self.start..cut;
                self.start = cut;
                return Some(range);
            }
        }
        self.from = len;
        if self.start < len {
            let range = self.start..len;
            self.start = len;
            return Some(range);
        }
        None
    }
}

/// The chunks of several sources in order, as `(source index, byte range)`, found as
/// they are asked for ([`chunk_ranges`] of each source in turn).
///
/// Why lazily: finding all the cuts first took 6-8 ms for the 116 MB English corpus
/// (texts whose lines start with spaces have few safe newlines), on one thread
/// before any other could start; found as the workers ask, that time is spread over
/// them and overlaps the encoding.
pub struct Chunks<'a> {
    sources: &'a [Source],
    specials: &'a SpecialMatcher,
    target: usize,
    kind: Kind,
    /// The threads sharing the chunks (1: every chunk is about `target` bytes).
    threads: usize,
    /// Bytes in the sources after each one.
    after: Vec<usize>,
    state: Mutex<ChunksFound<'a>>,
}

/// Near the end, chunks of `1 / (TAPER * threads)` of the bytes left: the last chunks
/// shrink, so the threads finish together. With chunks of one size, the threads of a
/// 2-thread encode of the 116 MB English corpus finished 4-51 ms apart (perf sched, 6
/// runs; a 1 MB chunk takes 6-9 ms), one core idle for that time.
const TAPER: usize = 4;
/// No tapered chunk is smaller than this (unless the target is): small enough to end
/// within a millisecond, large enough that a chunk's fixed costs stay small.
const MIN_TAPERED: usize = 64 << 10;

struct ChunksFound<'a> {
    found: Vec<(usize, Range<usize>)>,
    /// The source being cut, and its ranges (`None` before it starts).
    source: usize,
    ranges: Option<ChunkCuts<'a>>,
}

impl<'a> Chunks<'a> {
    pub fn new(
        sources: &'a [Source],
        specials: &'a SpecialMatcher,
        target: usize,
        kind: Kind,
    ) -> Self {
        let mut after = vec![0; sources.len()];
        for i in (1..sources.len()).rev() {
            after[i - 1] = after[i] + sources[i].bytes().len();
        }
        Self {
            sources,
            specials,
            target,
            kind,
            threads: 1,
            after,
            state: Mutex::new(ChunksFound {
                found: Vec::new(),
                source: 0,
                ranges: None,
            }),
        }
    }

    /// Chunks for `threads` threads: the last ones smaller, down to [`MIN_TAPERED`]
    /// bytes, so that no thread is left with a whole chunk when the others are done.
    pub fn tapered(mut self, threads: usize) -> Self {
        self.threads = threads.max(1);
        self
    }

    /// Chunk `i`, or `None` past the last one.
    pub fn get(&self, i: usize) -> Option<(usize, Range<usize>)> {
        // A poisoned lock only means another worker panicked; what was found holds.
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        while state.found.len() <= i {
            let source = state.source;
            // A file truncated while mapped reads zeros from there on, with no safe
            // cut: cutting it further would make one chunk of the rest. Its readers
            // fail at their next chunk ([`decode`]).
            if self.sources.get(source).is_some_and(Source::faulted) {
                state.ranges = None;
                state.source += 1;
                continue;
            }
            let ranges = match &mut state.ranges {
                Some(c) => c,
                None => {
                    let bytes = self.sources.get(source)?.bytes();
                    state.ranges.insert(ChunkCuts::new(
                        bytes,
                        self.specials,
                        self.target,
                        self.kind,
                    ))
                }
            };
            if self.threads > 1 {
                let left = ranges.left() + self.after[source];
                let share = (left / (TAPER * self.threads)).max(MIN_TAPERED);
                ranges.set_target(self.target.min(share));
            }
            match ranges.next() {
                Some(range) => state.found.push((source, range)),
                None => {
                    state.ranges = None;
                    state.source += 1;
                }
            }
        }
        state.found.get(i).cloned()
    }
}

/// The first safe cut at or after `from` (and before the end), if any. Reads a window
/// at a time and stops at the first cut, so successive calls read disjoint stretches.
fn next_cut(data: &[u8], specials: &SpecialMatcher, from: usize, kind: Kind) -> Option<usize> {
    const WINDOW: usize = 64 << 10;
    let margin = specials.max_len();
    // Whether a special token may start at `p`: one whose first byte is there. Not a
    // full match: under errors="ignore" invalid bytes inside "<|endo\xfftext|>" vanish
    // and a special token starts there after decoding.
    let special_at = |p: usize| {
        let first = data.get(p).copied();
        specials
            .tokens()
            .iter()
            .any(|t| t.as_bytes().first().copied() == first)
    };
    let mut at = from.max(1);
    while at < data.len() {
        let end = (at + WINDOW).min(data.len());
        let newline = if kind == Kind::Custom {
            None
        } else {
            memchr::memchr_iter(b'\n', &data[at - 1..end])
                .filter_map(|i| cuts::cut_at_newline(data, at - 1 + i, kind, special_at))
                .find(|&p| {
                    p >= at && !inside_special(data, specials, p) && valid_near(data, p, margin)
                })
        };
        // A special token's start is a cut unless another occurrence covers it. One
        // this search skips is covered by the match it found instead. Only the stretch
        // before the newline cut can hold an earlier one: searching the whole window
        // for each cut took ~6 ms of a 116 MB file's setup, before any encoding.
        let limit = newline.unwrap_or(end);
        let special = specials
            .find_iter(&data[at..(limit + margin).min(data.len())])
            .map(|(s, _, _)| at + s)
            .take_while(|&s| s < limit)
            .find(|&s| !inside_special(data, specials, s) && valid_near(data, s, margin));
        match special.or(newline) {
            Some(cut) => return Some(cut),
            None => at = end,
        }
    }
    None
}

/// Whether some occurrence of a special token, matched anywhere, covers both
/// `data[p - 1]` and `data[p]`. Cutting elsewhere is safe: with no occurrence across
/// `p`, leftmost-longest matching reaches `p` in the same state from any start.
fn inside_special(data: &[u8], specials: &SpecialMatcher, p: usize) -> bool {
    specials.tokens().iter().any(|t| {
        let t = t.as_bytes();
        (1..t.len()).any(|j| p >= j && data.get(p - j..p - j + t.len()) == Some(t))
    })
}

/// Whether the bytes within `margin` (the longest special token) of `p` are valid
/// UTF-8. Special tokens are matched on raw bytes here, but under errors="ignore"
/// invalid bytes vanish in decoding and can join two halves into a special token
/// ("a\xff\nb" holds "a\nb"): no cut is made that close to an invalid byte.
fn valid_near(data: &[u8], p: usize, margin: usize) -> bool {
    if margin == 0 {
        return true;
    }
    let is_continuation = |b: u8| b & 0xc0 == 0x80;
    let mut lo = p.saturating_sub(margin);
    let mut hi = (p + margin).min(data.len());
    // Widen to whole characters (at most 3 continuation bytes each way).
    for _ in 0..3 {
        if lo > 0 && is_continuation(data[lo]) {
            lo -= 1;
        }
        if hi < data.len() && is_continuation(data[hi]) {
            hi += 1;
        }
    }
    std::str::from_utf8(&data[lo..hi]).is_ok()
}

/// Decodes one chunk of `source` that starts at byte `offset` of the file.
pub fn decode<'a>(
    source: &'a Source,
    range: Range<usize>,
    policy: Utf8Policy,
) -> Result<Cow<'a, str>> {
    let bytes = &source.bytes()[range.clone()];
    // The common case, valid text, checked at ~2x the speed of `std` (4% of a 1-thread
    // count of en-small went to validation); `std` then says where an error is.
    let valid = simdutf8::basic::from_utf8(bytes);
    // Validation read every byte: a file truncated since (or before) is seen here,
    // before the zeros read in its place are used.
    if source.faulted() {
        source.check_intact()?;
    }
    if let Ok(s) = valid {
        return Ok(Cow::Borrowed(s));
    }
    match std::str::from_utf8(bytes) {
        Ok(s) => Ok(Cow::Borrowed(s)),
        Err(e) => match policy {
            Utf8Policy::Strict => Err(Error::InvalidUtf8 {
                path: source.path.clone(),
                offset: (range.start + e.valid_up_to()) as u64,
            }),
            Utf8Policy::Replace => Ok(Cow::Owned(String::from_utf8_lossy(bytes).into_owned())),
            Utf8Policy::Ignore => Ok(Cow::Owned(decode_ignoring_errors(bytes))),
        },
    }
}

fn decode_ignoring_errors(mut bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    loop {
        match std::str::from_utf8(bytes) {
            Ok(s) => {
                out.push_str(s);
                return out;
            }
            Err(e) => {
                let (good, rest) = bytes.split_at(e.valid_up_to());
                // SAFETY-free: `good` was just validated.
                out.push_str(std::str::from_utf8(good).unwrap_or_default());
                let skip = e.error_len().unwrap_or(rest.len());
                bytes = &rest[skip..];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cover_input_and_cut_before_specials() {
        let specials = SpecialMatcher::new(&["<|endoftext|>".to_string()]).unwrap();
        let text = b"aaaa<|endoftext|>bbbb<|endoftext|>cc";
        let ranges = chunk_ranges(text, &specials, 3, Kind::Custom);
        assert_eq!(ranges, vec![0..4, 4..21, 21..36]);
    }

    #[test]
    fn never_cuts_inside_a_special_token() {
        // Overlapping specials: a cut before the second `<|a|>` of `<|a|><|a|>` or
        // inside `ab|c` would change how the text matches.
        let specials = SpecialMatcher::new(&[
            "<|a|>".to_string(),
            "<|a|><|a|>".to_string(),
            "b\nc".to_string(),
        ])
        .unwrap();
        let text = b"x\nab\nc<|a|><|a|>y\nz<|a|>w";
        for target in 1..text.len() {
            let ranges = chunk_ranges(text, &specials, target, Kind::O200k);
            let cuts: Vec<usize> = ranges.iter().map(|r| r.start).collect();
            for &c in &cuts[1..] {
                assert!(!inside_special(text, &specials, c), "{target}: cut {c}");
            }
            assert!(!cuts.contains(&11), "{target}");
            assert!(!cuts.contains(&5), "{target}");
            assert_eq!(ranges.last().map(|r| r.end), Some(text.len()));
        }
        assert_eq!(
            chunk_ranges(text, &specials, 1, Kind::O200k)
                .iter()
                .map(|r| r.start)
                .collect::<Vec<_>>(),
            vec![0, 2, 3, 6, 18, 19]
        );
    }

    #[test]
    fn lazy_chunks_equal_chunk_ranges_of_each_source() {
        let specials = SpecialMatcher::new(&["<|e|>".to_string()]).unwrap();
        let texts: [&[u8]; 4] = [
            b"ab\ncd\nef<|e|>gh\nij\nkl",
            b"",
            b"no cut anywhere in this one",
            b"x<|e|>y<|e|>z\nA\nB\nC",
        ];
        let sources: Vec<Source> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| Source::from_bytes(format!("t{i}"), t.to_vec()))
            .collect();
        for target in [1, 2, 3, 5, 100] {
            let want: Vec<(usize, Range<usize>)> = texts
                .iter()
                .enumerate()
                .flat_map(|(i, t)| {
                    chunk_ranges(t, &specials, target, Kind::O200k)
                        .into_iter()
                        .map(move |r| (i, r))
                })
                .collect();
            let chunks = Chunks::new(&sources, &specials, target, Kind::O200k);
            // Asked out of order, as workers may.
            assert_eq!(chunks.get(2), want.get(2).cloned(), "{target}");
            let got: Vec<_> = (0..).map_while(|i| chunks.get(i)).collect();
            assert_eq!(got, want, "{target}");
            assert_eq!(chunks.get(want.len() + 3), None);
        }
    }

    #[test]
    fn tapered_chunks_shrink_at_the_end_and_cut_only_at_safe_places() {
        let specials = SpecialMatcher::new(&["<|e|>".to_string()]).unwrap();
        let line = b"some words on a line<|e|>\n".repeat(40_000); // ~1 MB
        let texts = [line.clone(), b"short\n".to_vec(), line];
        let sources: Vec<Source> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| Source::from_bytes(format!("t{i}"), t.clone()))
            .collect();
        let target = 256 << 10;
        let plain: Vec<_> = {
            let c = Chunks::new(&sources, &specials, target, Kind::Gpt2);
            (0..).map_while(|i| c.get(i)).collect()
        };
        let chunks = Chunks::new(&sources, &specials, target, Kind::Gpt2).tapered(2);
        let got: Vec<(usize, Range<usize>)> = (0..).map_while(|i| chunks.get(i)).collect();
        assert!(got.len() > plain.len());
        for (s, text) in texts.iter().enumerate() {
            // Each source's ranges tile it, and every cut is one `chunk_ranges` with
            // a 1-byte target (every safe place) makes.
            let ranges: Vec<&Range<usize>> = got
                .iter()
                .filter(|(i, _)| *i == s)
                .map(|(_, r)| r)
                .collect();
            assert_eq!(ranges.first().map(|r| r.start), Some(0));
            assert_eq!(ranges.last().map(|r| r.end), Some(text.len()));
            assert!(ranges.windows(2).all(|w| w[0].end == w[1].start));
            let safe = chunk_ranges(text, &specials, 1, Kind::Gpt2);
            for r in &ranges {
                assert!(
                    safe.iter().any(|x| x.start == r.start),
                    "cut at {}",
                    r.start
                );
                // None larger than the target by more than a line.
                assert!(r.len() < target + 64, "{r:?}");
            }
        }
        // The last source's last chunks are the smallest, down to MIN_TAPERED (a line
        // more at most).
        let last: Vec<usize> = got.iter().rev().take(6).map(|(_, r)| r.len()).collect();
        assert!(last[1..].iter().all(|&n| n < target / 2), "{last:?}");
        assert!(last[1] < MIN_TAPERED + 64, "{last:?}");
        // One thread: chunks of one size, as before.
        let one = Chunks::new(&sources, &specials, target, Kind::Gpt2).tapered(1);
        assert_eq!((0..).map_while(|i| one.get(i)).collect::<Vec<_>>(), plain);
    }

    #[test]
    fn newline_cuts_only_at_safe_places() {
        let none = SpecialMatcher::new(&[]).unwrap();
        let text = b"ab\ncd\n\nef \ngh\nij";
        let ranges = chunk_ranges(text, &none, 1, Kind::O200k);
        let cuts: Vec<usize> = ranges.iter().map(|r| r.start).collect();
        assert_eq!(cuts, vec![0, 3, 7, 11, 14]);
    }

    #[test]
    fn releasing_behind_a_reader_goes_in_steps_and_keeps_the_bytes() {
        let path = std::env::temp_dir().join(format!("bpekit-release-{}", std::process::id()));
        let text: Vec<u8> = (0..(20 << 20) + 123).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &text).unwrap();
        let source = Source::open(&path).unwrap();
        let base = source.bytes().as_ptr() as usize;
        // Less than a step behind: nothing yet.
        assert_eq!(source.release_behind(0, 1 << 20), 0);
        // A step and a huge page or more: up to a huge-page boundary at or below the
        // reader (of address: the map may start anywhere in a huge page).
        let to = RELEASE_STEP + (3 << 20) + 5;
        let first = source.release_behind(0, to);
        assert!((RELEASE_STEP..=to).contains(&first));
        assert_eq!((base + first) % crate::hugemem::HUGE_PAGE, 0);
        assert_eq!(source.release_behind(first, first + 100), first);
        // The end of the file releases the rest.
        assert_eq!(source.release_behind(first, text.len()), text.len());
        // Released pages are read from the file again.
        assert!(source.bytes() == text.as_slice());
        drop(source);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn ignore_and_replace_match_python() {
        let s = Source::from_bytes("t", b"a\xffb\xe2\x82c".to_vec());
        assert_eq!(decode(&s, 0..6, Utf8Policy::Ignore).unwrap(), "abc");
        assert_eq!(
            decode(&s, 0..6, Utf8Policy::Replace).unwrap(),
            "a\u{fffd}b\u{fffd}c"
        );
        match decode(&s, 0..6, Utf8Policy::Strict) {
            Err(Error::InvalidUtf8 { offset, .. }) => assert_eq!(offset, 1),
            other => panic!("{other:?}"),
        }
    }
}
