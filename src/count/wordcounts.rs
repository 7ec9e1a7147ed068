//! `WordCounts`: how often each pre-token occurs. The output of counting, the input
//! of training; saved, loaded and added so shards can be counted apart.
//!
//! File format (little-endian), documented in docs/wordcounts.md:
//! ```text
//! b"BPEKITWC"  magic            8 bytes
//! u32          version = 1
//! u32 n, n bytes  pattern (UTF-8)
//! u32 k, then k times: u32 n, n bytes  special tokens (UTF-8)
//! u64          number of words
//! per word:    u64 count, u32 n, n bytes of the word
//! ```
//! and nothing after the last word. The sum of the counts (`total`) fits in a u64:
//! loading and adding check it, so no count and no total ever wraps.

use std::hash::{BuildHasher, Hasher};
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;
use std::sync::OnceLock;

use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;

use crate::error::{Error, Result};
use crate::whole_file::WholeFile;

const MAGIC: &[u8; 8] = b"BPEKITWC";
const VERSION: u32 = 1;

/// Distinct words with their counts, in an arena: word `i` is
/// `bytes[ends[i - 1]..ends[i]]`. Why not a map of boxed words: counting builds one
/// of these from ~10^5-10^6 distinct pieces, and one allocation plus one hash per
/// word was ~15% of counting English (perf, en-small); here building is a copy. The
/// index by word, which only `get` and `add` need, is built on first use.
#[derive(Clone, Default)]
pub struct WordCounts {
    bytes: Vec<u8>,
    ends: Vec<usize>,
    counts: Vec<u64>,
    index: OnceLock<HashTable<usize>>,
    /// The pre-tokenizer pattern the words were cut with.
    pub pattern: String,
    /// The special tokens the text was split on.
    pub special_tokens: Vec<String>,
}

fn hash(word: &[u8]) -> u64 {
    let mut h = FxBuildHasher.build_hasher();
    h.write(word);
    h.finish()
}

impl WordCounts {
    /// Empty counts for words cut with `pattern` from text split on `special_tokens`.
    pub(crate) fn new(pattern: String, special_tokens: Vec<String>) -> Self {
        Self {
            pattern,
            special_tokens,
            ..Self::default()
        }
    }

    /// Appends a word that is not yet present (the caller guarantees it: counting
    /// hands over distinct pieces); no hashing, no allocation per word.
    pub(crate) fn push_distinct(&mut self, word: &[u8], count: u64) {
        debug_assert!(self.index.get().is_none() || self.position(word).is_none());
        self.bytes.extend_from_slice(word);
        self.ends.push(self.bytes.len());
        self.counts.push(count);
        if let Some(index) = self.index.get_mut() {
            let i = self.counts.len() - 1;
            index.insert_unique(hash(word), i, |&j| {
                hash(word_at(&self.bytes, &self.ends, j))
            });
        }
    }

    /// Appends an arena of words that are all new and distinct: word `i` is
    /// `bytes[ends[i - 1]..ends[i]]` (counting hands its shards over this way).
    pub(crate) fn append_distinct_arena(
        &mut self,
        bytes: Vec<u8>,
        ends: Vec<usize>,
        counts: Vec<u64>,
    ) {
        debug_assert_eq!(ends.len(), counts.len());
        debug_assert!(self.index.get().is_none());
        if self.counts.is_empty() {
            // The first part is moved, not copied.
            (self.bytes, self.ends, self.counts) = (bytes, ends, counts);
            return;
        }
        let base = self.bytes.len();
        self.bytes.extend_from_slice(&bytes);
        self.ends.extend(ends.iter().map(|&e| base + e));
        self.counts.extend_from_slice(&counts);
    }

    /// Reserves room for `words` more words of `bytes` bytes in all.
    pub(crate) fn reserve(&mut self, words: usize, bytes: usize) {
        self.bytes.reserve(bytes);
        self.ends.reserve(words);
        self.counts.reserve(words);
    }

    /// Adds `count` to `word`'s count (a new word if absent); an error, changing
    /// nothing, if that count would pass `u64::MAX`.
    pub(crate) fn add_word(&mut self, word: &[u8], count: u64) -> Result<()> {
        match self.position(word) {
            Some(i) => {
                self.counts[i] = self.counts[i].checked_add(count).ok_or_else(|| {
                    Error::Overflow(format!(
                        "the count of word {} would pass 2**64-1: {} + {count}",
                        show(word),
                        self.counts[i]
                    ))
                })?;
            }
            None => self.push_distinct(word, count),
        }
        Ok(())
    }

    /// Counts from `(word, count)` pairs (a word may come more than once: its counts
    /// are added); an error if the total would pass `u64::MAX`.
    pub fn from_pairs<I: IntoIterator<Item = (Vec<u8>, u64)>>(
        pairs: I,
        pattern: &str,
    ) -> Result<Self> {
        let mut counts = Self::new(pattern.to_owned(), Vec::new());
        let mut total = 0u64;
        for (i, (w, c)) in pairs.into_iter().enumerate() {
            if c > 0 {
                total = total.checked_add(c).ok_or_else(|| {
                    Error::Overflow(format!(
                        "the total count would pass 2**64-1 at pair #{i} (word {}, count {c})",
                        show(&w)
                    ))
                })?;
                counts.add_word(&w, c)?;
            }
        }
        Ok(counts)
    }

    fn word(&self, i: usize) -> &[u8] {
        word_at(&self.bytes, &self.ends, i)
    }

    /// Where `word` is, building the index on first use.
    fn position(&self, word: &[u8]) -> Option<usize> {
        let index = self.index.get_or_init(|| {
            let mut t = HashTable::with_capacity(self.ends.len());
            for i in 0..self.ends.len() {
                let w = self.word(i);
                t.insert_unique(hash(w), i, |&j| hash(self.word(j)));
            }
            t
        });
        index.find(hash(word), |&i| self.word(i) == word).copied()
    }

    pub fn len(&self) -> usize {
        self.counts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }

    /// Number of pre-token occurrences. It fits in a u64: counting cannot pass it
    /// (it counts bytes of input), and loading and adding check it; were it ever
    /// passed, this saturates rather than wraps.
    pub fn total(&self) -> u64 {
        self.checked_total().unwrap_or(u64::MAX)
    }

    fn checked_total(&self) -> Option<u64> {
        self.counts
            .iter()
            .try_fold(0u64, |sum, &c| sum.checked_add(c))
    }

    pub fn get(&self, word: &[u8]) -> u64 {
        self.position(word).map_or(0, |i| self.counts[i])
    }

    pub fn iter(&self) -> impl Iterator<Item = (&[u8], u64)> {
        (0..self.counts.len()).map(|i| (self.word(i), self.counts[i]))
    }

    /// The `n` most frequent words, ties by bytes, so the order is deterministic.
    pub fn most_common(&self, n: usize) -> Vec<(&[u8], u64)> {
        let mut all: Vec<(&[u8], u64)> = self.iter().collect();
        all.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        all.truncate(n);
        all
    }

    /// Adds `other`'s counts; both must come from the same pattern, and the total
    /// of the sum must fit in a u64 (else an error, changing nothing: no word's
    /// count can pass it when the total does not).
    pub fn add(&mut self, other: &WordCounts) -> Result<()> {
        if !self.is_empty() && !other.is_empty() && self.pattern != other.pattern {
            return Err(Error::invalid(format!(
                "cannot add counts made with different patterns: {:?} and {:?}",
                self.pattern, other.pattern
            )));
        }
        let (mine, theirs) = (self.checked_total(), other.checked_total());
        if mine
            .zip(theirs)
            .and_then(|(a, b)| a.checked_add(b))
            .is_none()
        {
            return Err(Error::Overflow(format!(
                "adding these word counts would make the total count pass 2**64-1: {} + {}",
                show_total(mine),
                show_total(theirs)
            )));
        }
        if self.is_empty() {
            self.pattern.clone_from(&other.pattern);
        }
        for t in &other.special_tokens {
            if !self.special_tokens.contains(t) {
                self.special_tokens.push(t.clone());
            }
        }
        for (word, count) in other.iter() {
            self.add_word(word, count)?;
        }
        Ok(())
    }

    /// [`WordCounts::add`] of counts given away: moved in whole where these hold no
    /// word (a count's first part), rather than added word by word through an index
    /// built for it (6% of counting a 1 GB unit of owt-12G on one thread, perf).
    pub(crate) fn add_owned(&mut self, other: WordCounts) -> Result<()> {
        if !self.is_empty() {
            return self.add(&other);
        }
        let mut specials = std::mem::take(&mut self.special_tokens);
        for t in &other.special_tokens {
            if !specials.contains(t) {
                specials.push(t.clone());
            }
        }
        *self = other;
        self.special_tokens = specials;
        Ok(())
    }

    /// Writes the counts to `path`, which shows the old file or the whole new one,
    /// never a part ([`WholeFile`]).
    pub fn save(&self, path: &Path) -> Result<()> {
        let err = |e| Error::io(path, e);
        let file = WholeFile::create(path, false).map_err(err)?;
        let mut w = BufWriter::new(file.file());
        self.write_to(&mut w, true)
            .and_then(|_| w.flush())
            .map_err(err)?;
        drop(w);
        file.commit().map_err(err)
    }

    /// The bytes of a saved file, the words in no particular order (how counts travel
    /// between processes: sorting is for files that must compare equal byte for
    /// byte, and took a third of the time of sending a unit's counts).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.bytes.len() + 12 * self.len() + 64);
        // Writing to memory cannot fail.
        let _ = self.write_to(&mut out, false);
        out
    }

    /// Counts from the bytes of a saved file ([`WordCounts::to_bytes`]); `name` names
    /// them in errors.
    pub fn from_bytes(bytes: &[u8], name: &str) -> Result<Self> {
        let mut counts = Self::default();
        counts.add_bytes(bytes, name)?;
        Ok(counts)
    }

    /// Adds the counts held in the bytes of a saved file, read in place: no
    /// `WordCounts` is built for them (what a driver adding many units' counts does).
    /// Errors (not such bytes, cut short, a total past `u64::MAX`) change nothing.
    pub fn add_bytes(&mut self, bytes: &[u8], name: &str) -> Result<()> {
        self.add_records(bytes, name, None)
    }

    /// Appends the words of the bytes of a saved file that holds only words this
    /// holds none of, without looking any up: each word must pass `new_here` (the
    /// caller's proof that it is new: one partition of the words added once, say),
    /// else an error naming it, changing nothing.
    pub(crate) fn append_new_bytes(
        &mut self,
        bytes: &[u8],
        name: &str,
        new_here: &dyn Fn(&[u8]) -> bool,
    ) -> Result<()> {
        self.add_records(bytes, name, Some(new_here))
    }

    fn add_records(
        &mut self,
        bytes: &[u8],
        name: &str,
        new_here: Option<NewHere<'_>>,
    ) -> Result<()> {
        let Checked {
            header,
            n,
            records,
            total,
        } = check_file(bytes, name, new_here)?;
        if !self.is_empty() && n > 0 && self.pattern != header.0 {
            return Err(Error::invalid(format!(
                "cannot add counts made with different patterns: {:?} and {:?}",
                self.pattern, header.0
            )));
        }
        if self
            .checked_total()
            .and_then(|t| t.checked_add(total))
            .is_none()
        {
            return Err(Error::Overflow(format!(
                "adding these word counts would make the total count pass 2**64-1: {} + {total}",
                show_total(self.checked_total())
            )));
        }
        if self.is_empty() {
            self.pattern = header.0;
        }
        for t in header.1 {
            if !self.special_tokens.contains(&t) {
                self.special_tokens.push(t);
            }
        }
        self.reserve((n as usize).min(records.len() / 12), 0);
        let mut at = 0;
        while let Some((count, word, next)) = parse_record(records, at) {
            match new_here {
                Some(_) => self.push_distinct(word, count),
                None => self.add_word(word, count)?,
            }
            at = next;
        }
        Ok(())
    }

    /// Writes the file's bytes; `sorted`: the words in byte order, so that equal counts
    /// give byte-identical files.
    fn write_to(&self, w: &mut impl Write, sorted: bool) -> std::io::Result<()> {
        self.write_header(w, self.len() as u64)?;
        let mut words: Vec<_> = self.iter().collect();
        if sorted {
            words.sort_unstable();
        }
        for (word, count) in words {
            write_record(w, word, count)?;
        }
        Ok(())
    }

    /// A saved file's header, for `words` word records with this pattern and special
    /// tokens.
    pub(super) fn write_header(&self, w: &mut impl Write, words: u64) -> std::io::Result<()> {
        w.write_all(MAGIC)?;
        w.write_all(&VERSION.to_le_bytes())?;
        write_blob(w, self.pattern.as_bytes())?;
        w.write_all(&(self.special_tokens.len() as u32).to_le_bytes())?;
        for t in &self.special_tokens {
            write_blob(w, t.as_bytes())?;
        }
        w.write_all(&words.to_le_bytes())
    }

    /// Reads a file [`WordCounts::save`] wrote. A file that is not one, is cut
    /// short, has bytes after its last word, or whose counts add up past
    /// `u64::MAX` is an error naming the file and, for a record, which one and at
    /// what byte offset. A word given in two records (no file `save` writes, but
    /// other writers may) has its counts added.
    pub fn load(path: &Path) -> Result<Self> {
        let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        Self::read_from(BufReader::new(file), path)
    }

    /// [`WordCounts::load`] of what `inner` reads; `path` names it in errors.
    fn read_from(inner: impl Read, path: &Path) -> Result<Self> {
        let mut r = Offset { inner, at: 0 };
        // A binary file has no lines to name.
        let bad = |message: String| Error::invalid(format!("{}: {message}", path.display()));
        // The end of the file in the middle of `what`, or a read error.
        let cut = |e: std::io::Error, what: &str, at: u64| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => bad(format!(
                "file is truncated: it ends at byte offset {at}, in {what}"
            )),
            _ => Error::io(path, e),
        };
        let mut magic = [0u8; 8];
        r.read_exact(&mut magic).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => {
                bad("not a bpekit word-counts file (too short)".into())
            }
            // A folder opens, and fails at the first read.
            _ => Error::io(path, e),
        })?;
        if &magic != MAGIC {
            return Err(bad("not a bpekit word-counts file (bad magic)".into()));
        }
        let header = "the header";
        let version = read_u32(&mut r).map_err(|e| cut(e, header, r.at))?;
        if version != VERSION {
            return Err(bad(format!("unsupported word-counts version {version}")));
        }
        let pattern = read_blob(&mut r).map_err(|e| cut(e, header, r.at))?;
        let Ok(pattern) = String::from_utf8(pattern) else {
            return Err(bad("pattern is not UTF-8".into()));
        };
        let k = read_u32(&mut r).map_err(|e| cut(e, header, r.at))?;
        let mut special_tokens = Vec::with_capacity(k.min(1 << 16) as usize);
        for _ in 0..k {
            let t = read_blob(&mut r).map_err(|e| cut(e, header, r.at))?;
            let Ok(t) = String::from_utf8(t) else {
                return Err(bad("special token is not UTF-8".into()));
            };
            special_tokens.push(t);
        }
        let n = read_u64(&mut r).map_err(|e| cut(e, header, r.at))?;
        let mut counts = Self::new(pattern, special_tokens);
        counts.reserve(n.min(1 << 24) as usize, 0);
        let mut total = 0u64;
        for i in 0..n {
            let start = r.at;
            let record = |e, at| {
                cut(
                    e,
                    &format!("word record {i} of {n} (from byte offset {start})"),
                    at,
                )
            };
            let count = read_u64(&mut r).map_err(|e| record(e, r.at))?;
            let word = read_blob(&mut r).map_err(|e| record(e, r.at))?;
            total = total.checked_add(count).ok_or_else(|| {
                bad(format!(
                    "word record {i} of {n} (byte offset {start}): its count {count} makes the total count pass 2**64-1"
                ))
            })?;
            // `add_word`, not `push_distinct`: a file is not trusted to be deduplicated.
            // No count can pass u64::MAX here, as the total does not.
            counts.add_word(&word, count)?;
        }
        let mut rest = Vec::new();
        let after = r.at;
        (&mut r)
            .take(1 << 10)
            .read_to_end(&mut rest)
            .map_err(|e| Error::io(path, e))?;
        if !rest.is_empty() {
            let more = if rest.len() == 1 << 10 {
                " or more"
            } else {
                ""
            };
            return Err(bad(format!(
                "{}{more} byte(s) after its {n} word records, from byte offset {after}: the file is corrupt",
                rest.len()
            )));
        }
        Ok(counts)
    }
}

/// A reader that knows its byte offset in what it reads.
struct Offset<R> {
    inner: R,
    at: u64,
}

impl<R: Read> Read for Offset<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.at += n as u64;
        Ok(n)
    }
}

/// `word` for a message: as text (lossy), cut after 40 bytes.
fn show(word: &[u8]) -> String {
    let cut = &word[..word.len().min(40)];
    let more = if cut.len() < word.len() { "..." } else { "" };
    format!("{:?}{more}", String::from_utf8_lossy(cut))
}

fn show_total(total: Option<u64>) -> String {
    total.map_or_else(|| "more than 2**64-1".into(), |t| t.to_string())
}

fn word_at<'a>(bytes: &'a [u8], ends: &[usize], i: usize) -> &'a [u8] {
    let start = if i == 0 { 0 } else { ends[i - 1] };
    &bytes[start..ends[i]]
}

/// Equal when they hold the same words with the same counts, in any order, and the
/// same pattern and special tokens.
impl PartialEq for WordCounts {
    fn eq(&self, other: &Self) -> bool {
        self.pattern == other.pattern
            && self.special_tokens == other.special_tokens
            && self.len() == other.len()
            && self.iter().all(|(w, c)| other.get(w) == c)
    }
}

impl Eq for WordCounts {}

impl std::fmt::Debug for WordCounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WordCounts")
            .field("words", &self.len())
            .field("total", &self.total())
            .field("pattern", &self.pattern)
            .field("special_tokens", &self.special_tokens)
            .finish()
    }
}

/// Whether a word appended without a lookup is new ([`WordCounts::append_new_bytes`]).
type NewHere<'a> = &'a dyn Fn(&[u8]) -> bool;

/// A saved file's pattern and special tokens.
pub(super) type Header = (String, Vec<String>);

/// A saved file's header, the number of words and the bytes of the word records.
fn parse_header(bytes: &[u8]) -> std::result::Result<(Header, u64, &[u8]), String> {
    let rest = bytes
        .strip_prefix(MAGIC.as_slice())
        .ok_or("not a bpekit word-counts file (bad magic)")?;
    let (version, mut rest) = take_u32(rest).ok_or("cut short in the header")?;
    if version != VERSION {
        return Err(format!("unsupported word-counts version {version}"));
    }
    let text = |rest: &mut &[u8]| -> std::result::Result<String, String> {
        let (n, after) = take_u32(rest).ok_or("cut short in the header")?;
        let blob = after.get(..n as usize).ok_or("cut short in the header")?;
        *rest = &after[n as usize..];
        String::from_utf8(blob.to_vec()).map_err(|_| "a header string is not UTF-8".to_string())
    };
    let pattern = text(&mut rest)?;
    let (k, after) = take_u32(rest).ok_or("cut short in the header")?;
    rest = after;
    let mut specials = Vec::new();
    for _ in 0..k {
        specials.push(text(&mut rest)?);
    }
    let n = rest.get(..8).ok_or("cut short in the header")?;
    let n = u64::from_le_bytes(n.try_into().map_err(|_| "cut short in the header")?);
    Ok(((pattern, specials), n, &rest[8..]))
}

/// A saved file whose every record was read: its header, word count, records and
/// the sum of its counts.
pub(super) struct Checked<'b> {
    pub(super) header: Header,
    pub(super) n: u64,
    pub(super) records: &'b [u8],
    pub(super) total: u64,
}

/// Reads every record of the saved file `bytes` (named `name` in errors), so that
/// adding them after cannot fail half way: an error where the bytes are not such a
/// file, are cut short or run on, where the counts add up past 2**64-1, or where a
/// word is not `new_here`.
pub(super) fn check_file<'b>(
    bytes: &'b [u8],
    name: &str,
    new_here: Option<NewHere<'_>>,
) -> Result<Checked<'b>> {
    let bad = |what: String| Error::invalid(format!("{name}: {what}"));
    let (header, n, records) = parse_header(bytes).map_err(bad)?;
    let mut total = 0u64;
    let mut at = 0;
    for i in 0..n {
        let (count, word, next) = parse_record(records, at)
            .ok_or_else(|| bad(format!("cut short in word record {i} of {n}")))?;
        if new_here.is_some_and(|new_here| !new_here(word)) {
            return Err(bad(format!(
                "word record {i} of {n} ({}) belongs to another partition",
                show(word)
            )));
        }
        total = total
            .checked_add(count)
            .ok_or_else(|| bad("its counts add up past 2**64-1".into()))?;
        at = next;
    }
    if at != records.len() {
        return Err(bad(format!(
            "{} byte(s) after its {n} word records",
            records.len() - at
        )));
    }
    Ok(Checked {
        header,
        n,
        records,
        total,
    })
}

fn take_u32(bytes: &[u8]) -> Option<(u32, &[u8])> {
    let b = bytes.get(..4)?;
    Some((u32::from_le_bytes(b.try_into().ok()?), &bytes[4..]))
}

/// The record at `at` of `records`: `(count, word, where the next starts)`, or `None`
/// where the bytes end first.
pub(super) fn parse_record(records: &[u8], at: usize) -> Option<(u64, &[u8], usize)> {
    let count = u64::from_le_bytes(records.get(at..at + 8)?.try_into().ok()?);
    let n = u32::from_le_bytes(records.get(at + 8..at + 12)?.try_into().ok()?) as usize;
    let word = records.get(at + 12..(at + 12).checked_add(n)?)?;
    Some((count, word, at + 12 + n))
}

/// One word record of a saved file.
pub(super) fn write_record(w: &mut impl Write, word: &[u8], count: u64) -> std::io::Result<()> {
    w.write_all(&count.to_le_bytes())?;
    write_blob(w, word)
}

fn write_blob(w: &mut impl Write, bytes: &[u8]) -> std::io::Result<()> {
    w.write_all(&(bytes.len() as u32).to_le_bytes())?;
    w.write_all(bytes)
}

fn read_u32(r: &mut impl Read) -> std::io::Result<u32> {
    let mut b = [0u8; 4];
    r.read_exact(&mut b)?;
    Ok(u32::from_le_bytes(b))
}

fn read_u64(r: &mut impl Read) -> std::io::Result<u64> {
    let mut b = [0u8; 8];
    r.read_exact(&mut b)?;
    Ok(u64::from_le_bytes(b))
}

fn read_blob(r: &mut impl Read) -> std::io::Result<Vec<u8>> {
    let n = read_u32(r)? as usize;
    let mut v = Vec::new();
    // take() bounds the allocation by what the file really holds, not by a corrupt length.
    r.take(n as u64).read_to_end(&mut v)?;
    if v.len() != n {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    Ok(v)
}

#[cfg(test)]
#[path = "wordcounts_tests.rs"]
mod tests;
