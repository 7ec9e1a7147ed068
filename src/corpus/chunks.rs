//! Input cut into chunks that no pre-token and no special token crosses, handed to
//! workers as they ask.

use std::ops::Range;
use std::sync::Mutex;

use super::safe_cut::next_cut;
use super::source::Source;
use crate::pretokenize::Kind;
use crate::specials::SpecialMatcher;

/// All the ranges of [`ChunkCuts`] (for tests: work takes them from [`Chunks`] as it
/// goes).
#[cfg(test)]
pub(crate) fn chunk_ranges(
    data: &[u8],
    specials: &SpecialMatcher,
    target: usize,
    kind: Kind,
) -> Vec<Range<usize>> {
    ChunkCuts::new(data, specials, target, kind).collect()
}

/// Cuts `data` into ranges of about `target` bytes, one at a time. Each cut is the
/// first safe place ([`super::safe_cut`]) at or after the previous cut plus `target`: right
/// before a special token, or at a line cut of the pattern `kind`; never inside an
/// occurrence of a special token. A stretch with no safe place stays whole: correct,
/// just less parallel.
///
/// Only the bytes near each place looked at are read, not the whole input:
/// finding the cuts of a 116 MB file by scanning it all took ~25 ms on one thread
/// before any encoding could start (8% of a 2-thread encode).
struct ChunkCuts<'a> {
    data: &'a [u8],
    specials: &'a SpecialMatcher,
    target: usize,
    kind: Kind,
    /// JSON lines: cut after any newline (no string holds one unescaped).
    lines: bool,
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
            lines: false,
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
            let cut = match self.lines {
                true => memchr::memchr(b'\n', &self.data[self.from - 1..])
                    .map(|i| self.from + i)
                    .filter(|&c| c < len),
                false => next_cut(self.data, self.specials, self.from, self.kind),
            };
            let Some(cut) = cut else {
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

/// The byte ranges of about `target` bytes that the file at `path` is cut into for
/// the workers of a distributed job: at safe cuts of `kind` and `specials` (the
/// special tokens that are special in its text), or after newlines (`lines`, JSON
/// lines). The ranges cover the file; reading each range alone reads exactly what
/// reading the whole file reads. Only the bytes near each cut are read.
pub fn file_ranges(
    path: &std::path::Path,
    lines: bool,
    specials: &SpecialMatcher,
    target: usize,
    kind: Kind,
) -> crate::error::Result<Vec<Range<u64>>> {
    let source = Source::open(path)?;
    let mut cuts = ChunkCuts::new(source.bytes(), specials, target, kind);
    cuts.lines = lines;
    let ranges = cuts.map(|r| r.start as u64..r.end as u64).collect();
    source.check_intact()?;
    Ok(ranges)
}

/// The chunks of several sources in order, as `(source index, byte range)`, found as
/// they are asked for ([`ChunkCuts`] of each source in turn).
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
    /// Which sources are JSON lines, cut after newlines (none unless set).
    lines: Vec<bool>,
    /// Bytes in the sources after each one.
    after: Vec<usize>,
    /// Where the first source's chunks start (0 unless a job goes on from there).
    first_start: usize,
    state: Mutex<ChunksFound<'a>>,
}

/// Near the end, chunks of `1 / (TAPER * threads)` of the bytes left: the last chunks
/// shrink, so the threads finish together. With chunks of one size, the threads of a
/// 2-thread encode of the 116 MB English corpus finished 4-51 ms apart (perf sched, 6
/// runs; a 1 MB chunk takes 6-9 ms), one core idle for that time.
const TAPER: usize = 4;
/// The smallest chunk: no automatic size ([`chunk_size`]) and no tapered chunk is
/// smaller (a tapered one may be if the target is). Small enough to end within a
/// millisecond, large enough that a chunk's fixed costs (a lock, a cut search, a
/// decode check) stay small.
const MIN_CHUNK: usize = 64 << 10;

/// Chunks per thread that an automatic chunk size aims at: enough to balance uneven
/// documents, few enough that per-chunk work stays negligible.
const CHUNKS_PER_THREAD: usize = 16;

/// The chunk size for `total_bytes` of input on `threads` threads when the caller
/// gave none: about [`CHUNKS_PER_THREAD`] chunks per thread, at least [`MIN_CHUNK`]
/// and at most `max_chunk` (the callers differ there: counting takes large chunks,
/// encoding keeps the chunks in flight small).
///
/// ```text
/// chunk_size(116 << 20, 2, 16 << 20) == 3.625 MiB    chunk_size(116 << 20, 2, 1 << 20) == 1 MiB
/// chunk_size(100 << 10, 2, 1 << 20) == 64 KiB
/// ```
pub(crate) fn chunk_size(total_bytes: usize, threads: usize, max_chunk: usize) -> usize {
    let per_chunk = total_bytes / threads.max(1).saturating_mul(CHUNKS_PER_THREAD);
    per_chunk.clamp(MIN_CHUNK, max_chunk.max(MIN_CHUNK))
}

/// How many of `threads` threads to start on `bytes` of input in `files` files cut
/// into chunks of `chunk_size`: no more than there can be chunks (tapered ones are at
/// least [`MIN_CHUNK`], or `chunk_size` if that is smaller, and each file ends one),
/// since a worker without a chunk only costs its start and its state; at least 1.
pub(crate) fn worker_count(threads: usize, bytes: usize, files: usize, chunk_size: usize) -> usize {
    let most_chunks = bytes / chunk_size.clamp(1, MIN_CHUNK) + files;
    threads.min(most_chunks).max(1)
}

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
            after[i - 1] = after[i] + sources[i].read_len();
        }
        Self {
            sources,
            specials,
            target,
            kind,
            threads: 1,
            lines: Vec::new(),
            after,
            first_start: 0,
            state: Mutex::new(ChunksFound {
                found: Vec::new(),
                source: 0,
                ranges: None,
            }),
        }
    }

    /// Chunks for `threads` threads: the last ones smaller, down to [`MIN_CHUNK`]
    /// bytes, so that no thread is left with a whole chunk when the others are done.
    pub fn tapered(mut self, threads: usize) -> Self {
        self.threads = threads.max(1);
        self
    }

    /// Starts the first source's chunks at byte `at`, a chunk's start in an earlier cut
    /// of it (a safe cut, or a line start): the bytes before it are not read.
    pub(crate) fn starting_at(mut self, at: usize) -> Self {
        self.first_start = at;
        self
    }

    /// Cuts the sources marked in `lines` after newlines (JSON lines), not at safe
    /// cuts of text.
    pub(crate) fn with_lines(mut self, lines: Vec<bool>) -> Self {
        self.lines = lines;
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
                    // A window ends at a safe cut, so its bytes pre-tokenize as they
                    // do in the whole file: cut them as if the file ended there.
                    let s = self.sources.get(source)?;
                    let window = s.window();
                    let bytes = &s.bytes()[..window.end];
                    let mut cuts = ChunkCuts::new(bytes, self.specials, self.target, self.kind);
                    cuts.lines = self.lines.get(source).copied().unwrap_or(false);
                    let first = match source {
                        0 => self.first_start.max(window.start),
                        _ => window.start,
                    };
                    if first > 0 {
                        cuts.start = first.min(bytes.len());
                        cuts.from = cuts.start.saturating_add(cuts.target);
                    }
                    state.ranges.insert(cuts)
                }
            };
            if self.threads > 1 {
                let left = ranges.left() + self.after[source];
                let share = (left / (TAPER * self.threads)).max(MIN_CHUNK);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_reads_its_range_as_the_whole_file_cut_there() {
        let specials = SpecialMatcher::new(&["<|endoftext|>".to_string()]).unwrap();
        let text = b"one two<|endoftext|>three four\nfive<|endoftext|>six";
        let path = std::env::temp_dir().join(format!("bpekit-window-{}", std::process::id()));
        std::fs::write(&path, text).unwrap();
        let ranges = file_ranges(&path, false, &specials, 8, Kind::Gpt2).unwrap();
        // The ranges cover the file, each starting at a cut the workers' chunks use.
        assert_eq!(ranges.first().map(|r| r.start), Some(0));
        assert_eq!(ranges.last().map(|r| r.end), Some(text.len() as u64));
        let whole = chunk_ranges(text, &specials, 8, Kind::Gpt2);
        let cuts: Vec<usize> = whole.iter().map(|r| r.start).collect();
        for pair in ranges.windows(2) {
            assert_eq!(pair[0].end, pair[1].start);
            assert!(cuts.contains(&(pair[1].start as usize)), "{ranges:?}");
        }
        // A window's chunks stay inside it, in file offsets.
        for r in &ranges {
            let source = Source::open_window(&path, Some(r.clone())).unwrap();
            let sources = [source];
            let chunks = Chunks::new(&sources, &specials, 3, Kind::Gpt2);
            let got: Vec<_> = (0..).map_while(|i| chunks.get(i)).map(|(_, c)| c).collect();
            assert_eq!(got.first().map(|c| c.start as u64), Some(r.start));
            assert_eq!(got.last().map(|c| c.end as u64), Some(r.end));
        }
        // A range past the end: the file changed since it was planned.
        let past = text.len() as u64 + 1;
        let err = Source::open_window(&path, Some(0..past)).err().unwrap();
        assert!(err.to_string().contains("planned to be read"), "{err}");
        std::fs::remove_file(&path).unwrap();
    }

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
                assert!(!specials.covers(text, c), "{target}: cut {c}");
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
        // The last source's last chunks are the smallest, down to MIN_CHUNK (a line
        // more at most).
        let last: Vec<usize> = got.iter().rev().take(6).map(|(_, r)| r.len()).collect();
        assert!(last[1..].iter().all(|&n| n < target / 2), "{last:?}");
        assert!(last[1] < MIN_CHUNK + 64, "{last:?}");
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
    fn chunk_size_and_worker_count() {
        const MIB: usize = 1 << 20;
        assert_eq!(chunk_size(116 * MIB, 2, 16 * MIB), 116 * MIB / 32);
        assert_eq!(chunk_size(116 * MIB, 2, MIB), MIB);
        assert_eq!(chunk_size(100 << 10, 2, MIB), MIN_CHUNK);
        assert_eq!(chunk_size(0, 0, 0), MIN_CHUNK);
        assert_eq!(chunk_size(usize::MAX, usize::MAX, 16 * MIB), MIN_CHUNK);
        // No more workers than chunks: tapered chunks are at least MIN_CHUNK.
        assert_eq!(worker_count(8, 100 << 10, 1, MIB), 2);
        assert_eq!(worker_count(8, 10, 1, MIB), 1);
        assert_eq!(worker_count(8, 10, 3, 1), 8);
        assert_eq!(worker_count(2, 116 * MIB, 1, MIB), 2);
        assert_eq!(worker_count(0, 0, 0, 0), 1);
    }
}
