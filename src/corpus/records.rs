//! An item -> its documents, under the caller's policies: text decoded as UTF-8, JSON
//! lines parsed, bad records reported or skipped, special tokens inside documents
//! checked.
//!
//! A chunk of a text file comes out as one document-part (`record: false`): a text
//! file is one stream whose documents are separated by its own special tokens. Each
//! record of a record format (a JSON line, a row, an item of an iterable) is one
//! document (`record: true`), and its boundaries act like special tokens: no
//! pre-token and no merge crosses them.

use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use super::input::{BadRecords, DocBatch, Format, SpecialPolicy};
use super::items::{Body, InputInfo, Item};
use super::jsonl::{self, field_of, FieldPath, Found, Surrogates};
use super::source::Source;
use super::utf8::{decode, decode_ignoring_errors, Utf8Policy};
use crate::error::{Error, Result};
use crate::specials::SpecialMatcher;

/// How documents are read; results never depend on anything else.
#[derive(Clone, Copy, Debug)]
pub struct ReadOptions {
    pub utf8: Utf8Policy,
    /// `None`: [`SpecialPolicy::Special`] for text files, [`SpecialPolicy::Text`] for
    /// records.
    pub special_in_text: Option<SpecialPolicy>,
    pub bad_records: BadRecords,
}

impl Default for ReadOptions {
    fn default() -> Self {
        Self {
            utf8: Utf8Policy::Strict,
            special_in_text: None,
            bad_records: BadRecords::Error,
        }
    }
}

/// What a job read, counted by its workers.
#[derive(Default)]
pub struct Stats {
    documents: AtomicU64,
    skipped: AtomicU64,
    bytes: AtomicU64,
    examples: Mutex<Vec<String>>,
}

/// Why a JSON line holds no value to read ([`Reader::parse_line`]): serde_json's
/// message, or a lone surrogate escape; and the byte of the line where.
enum LineError {
    NotJson(String, usize),
    Surrogate(String, usize),
}

/// A UTF-8 byte-order mark.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Skipped records' messages kept as examples.
const EXAMPLES: usize = 5;

/// [`Stats`] once the job is done.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StatsSummary {
    /// Record documents read, and one per text file.
    pub documents: u64,
    /// Bad records skipped, and the first few messages.
    pub skipped: u64,
    pub examples: Vec<String>,
    /// Bytes of text read (of documents, for records; decompressed).
    pub bytes: u64,
}

impl StatsSummary {
    /// An error where records were skipped and no document was read: a run whose every
    /// record was bad has read nothing, whatever `bad_records` says (skipping them all
    /// wrote an empty output and exited 0, the summary's "skipped" line the only sign).
    pub fn check_some_read(&self) -> Result<()> {
        if self.documents > 0 || self.skipped == 0 {
            return Ok(());
        }
        Err(Error::BadRecord(all_skipped_message(
            self.skipped,
            self.examples.first().map(String::as_str),
        )))
    }
}

/// The error of a run whose `skipped` records were all bad ([`StatsSummary::check_some_read`]),
/// with the first one's message; `bpekit.sources.check_some_read` words it alike.
fn all_skipped_message(skipped: u64, first: Option<&str>) -> String {
    let count = skipped
        .to_string()
        .as_bytes()
        .rchunks(3)
        .rev()
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect::<Vec<_>>()
        .join(",");
    let first = first.map_or(String::new(), |m| format!("; the first: {m}"));
    format!(
        "every record was bad ({count} skipped{first}), so no document was read; fix the \
         records, or how they are read (text_field=, format=)"
    )
}

impl Stats {
    pub fn summary(&self) -> StatsSummary {
        StatsSummary {
            documents: self.documents.load(Ordering::Relaxed),
            skipped: self.skipped.load(Ordering::Relaxed),
            examples: self.examples.lock().map(|e| e.clone()).unwrap_or_default(),
            bytes: self.bytes.load(Ordering::Relaxed),
        }
    }

    /// One text file read (its chunks are not documents of their own).
    pub(crate) fn add_text_file(&self) {
        self.documents.fetch_add(1, Ordering::Relaxed);
    }
}

/// A document, or a part of a text file's text.
pub(crate) struct Doc<'b> {
    pub(crate) text: Cow<'b, str>,
    /// A record's document (it gets the records' bos and eos), not a text chunk.
    pub(crate) record: bool,
    /// Whether the special tokens in it are special tokens (else text).
    pub(crate) specials: bool,
}

/// Counts of one item, added to the job's [`Stats`] once, and handed to the caller
/// (a dataset's checkpoints add them up in input order).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Record documents (a text file's chunks are not documents of their own).
    pub documents: u64,
    /// Bytes of text read (of documents, for records; decompressed).
    pub bytes: u64,
    /// Bad records skipped.
    pub skipped: u64,
}

impl Tally {
    pub fn add(&mut self, other: Tally) {
        self.documents += other.documents;
        self.bytes += other.bytes;
        self.skipped += other.skipped;
    }
}

/// Reads the documents of items (see the module docs).
pub(crate) struct Reader<'j> {
    info: &'j [InputInfo],
    options: ReadOptions,
    /// Every special token, to find them in documents.
    specials: &'j SpecialMatcher,
    none: SpecialMatcher,
    stats: &'j Stats,
    /// Per mapped input, an offset and the newlines before it, where a message last
    /// needed them: each message counts on from there, so that skipping many bad lines
    /// of a big file costs one pass over it, not one per line.
    line_marks: Mutex<HashMap<usize, (usize, u64)>>,
}

/// Whole JSON lines `bytes` at byte `offset` of their file; `whole`: the bytes as
/// text, where they are valid UTF-8; `lines`: how to number them.
struct JsonChunk<'b, 'x> {
    bytes: &'b [u8],
    whole: Option<&'b str>,
    offset: u64,
    lines: Lines<'x>,
}

/// Where the lines of a chunk of JSON lines are: known, or counted on demand in the
/// bytes before the chunk (only a message needs them).
#[derive(Clone, Copy)]
enum Lines<'x> {
    Known(u64),
    /// The whole mapped file, and where the chunk starts in it.
    InFile(&'x [u8], usize),
}

impl<'j> Reader<'j> {
    pub(crate) fn new(
        info: &'j [InputInfo],
        options: ReadOptions,
        specials: &'j SpecialMatcher,
        stats: &'j Stats,
    ) -> Self {
        Self {
            info,
            options,
            specials,
            none: SpecialMatcher::default(),
            stats,
            line_marks: Mutex::new(HashMap::new()),
        }
    }

    /// The newlines in `file[..end]`, input `input`'s bytes (see `line_marks`).
    fn lines_before(&self, input: usize, file: &[u8], end: usize) -> u64 {
        let count = |b: &[u8]| memchr::memchr_iter(b'\n', b).count() as u64;
        let end = end.min(file.len());
        let Ok(mut marks) = self.line_marks.lock() else {
            return count(&file[..end]);
        };
        let (at, lines) = marks.get(&input).copied().unwrap_or((0, 0));
        let at = at.min(file.len());
        let n = match end >= at {
            true => lines + count(&file[at..end]),
            false => lines - count(&file[end..at]),
        };
        marks.insert(input, (end, n));
        n
    }

    /// What special tokens in input `input`'s documents are.
    fn policy(&self, input: usize) -> SpecialPolicy {
        let records = !matches!(self.info[input].format, Some(Format::Text));
        self.options.special_in_text.unwrap_or(match records {
            true => SpecialPolicy::Text,
            false => SpecialPolicy::Special,
        })
    }

    /// The special tokens that text files are cut before: none where their special
    /// tokens are read as text (a cut before one would then split what the
    /// pre-tokenizer may join).
    pub(crate) fn cut_specials(&self) -> &SpecialMatcher {
        match self.options.special_in_text {
            Some(SpecialPolicy::Text) => &self.none,
            _ => self.specials,
        }
    }

    /// Whether input `input` is a text file (it gets the files' bos and eos).
    pub(crate) fn is_text_file(&self, input: usize) -> bool {
        matches!(self.info[input].format, Some(Format::Text))
    }

    /// Calls `f` with each document of a mapped chunk, borrowed from the map where it
    /// can be.
    pub(crate) fn mapped<'a>(
        &self,
        input: usize,
        source: &'a Source,
        range: Range<usize>,
        f: &mut impl FnMut(Doc<'a>) -> Result<()>,
    ) -> Result<Tally> {
        let mut tally = Tally::default();
        let result = match &self.info[input].format {
            Some(Format::Jsonl(field)) => {
                let bytes = &source.bytes()[range.clone()];
                let whole = simdutf8::basic::from_utf8(bytes).ok();
                // Validation read every byte: a file truncated since is seen here.
                if source.faulted() {
                    source.check_intact()?;
                }
                let before = Lines::InFile(source.bytes(), range.start);
                let chunk = JsonChunk {
                    bytes,
                    whole,
                    offset: range.start as u64,
                    lines: before,
                };
                self.json_lines(input, field, chunk, &mut tally, f)
            }
            _ => {
                let text = decode(source, range.clone(), self.options.utf8)?;
                self.text_part(input, text, range.start as u64, &mut tally, f)
            }
        };
        self.add(tally);
        result.map(|()| tally)
    }

    /// Calls `f` with each document of a block or batch.
    pub(crate) fn owned(
        &self,
        item: &Item<'_>,
        f: &mut impl FnMut(Doc<'_>) -> Result<()>,
    ) -> Result<Tally> {
        let input = item.input;
        let mut tally = Tally::default();
        let result = match &item.body {
            Body::Mapped { source, range } => return self.mapped(input, source, range.clone(), f),
            Body::Block(block) => match &self.info[input].format {
                Some(Format::Jsonl(field)) => {
                    let whole = simdutf8::basic::from_utf8(&block.bytes).ok();
                    let lines = Lines::Known(block.line);
                    let chunk = JsonChunk {
                        bytes: &block.bytes,
                        whole,
                        offset: block.offset,
                        lines,
                    };
                    self.json_lines(input, field, chunk, &mut tally, f)
                }
                _ => {
                    let text = self.decode_block(input, &block.bytes, block.offset)?;
                    self.text_part(input, text, block.offset, &mut tally, f)
                }
            },
            Body::Batch(batch) => self.batch(input, batch, &mut tally, f),
        };
        self.add(tally);
        result.map(|()| tally)
    }

    fn add(&self, tally: Tally) {
        self.stats
            .documents
            .fetch_add(tally.documents, Ordering::Relaxed);
        self.stats.bytes.fetch_add(tally.bytes, Ordering::Relaxed);
        self.stats
            .skipped
            .fetch_add(tally.skipped, Ordering::Relaxed);
    }

    /// A block of a text file as UTF-8, under the caller's policy.
    fn decode_block<'b>(&self, input: usize, bytes: &'b [u8], offset: u64) -> Result<Cow<'b, str>> {
        if let Ok(s) = simdutf8::basic::from_utf8(bytes) {
            return Ok(Cow::Borrowed(s));
        }
        match std::str::from_utf8(bytes) {
            Ok(s) => Ok(Cow::Borrowed(s)),
            Err(e) => match self.options.utf8 {
                Utf8Policy::Strict => Err(Error::InvalidUtf8 {
                    path: self.info[input].name.clone().into(),
                    offset: offset + e.valid_up_to() as u64,
                }),
                Utf8Policy::Replace => Ok(Cow::Owned(String::from_utf8_lossy(bytes).into_owned())),
                Utf8Policy::Ignore => Ok(Cow::Owned(decode_ignoring_errors(bytes))),
            },
        }
    }

    /// A chunk of a text file, at byte `offset` of it.
    fn text_part<'b>(
        &self,
        input: usize,
        text: Cow<'b, str>,
        offset: u64,
        tally: &mut Tally,
        f: &mut impl FnMut(Doc<'b>) -> Result<()>,
    ) -> Result<()> {
        tally.bytes += text.len() as u64;
        let policy = self.policy(input);
        if policy == SpecialPolicy::Error {
            if let Some((at, token)) = self.first_special(&text) {
                return Err(Error::BadRecord(format!(
                    "{}: byte {}: {}",
                    self.info[input].name,
                    offset + at as u64,
                    special_message(token)
                )));
            }
        }
        f(Doc {
            text,
            record: false,
            specials: policy == SpecialPolicy::Special,
        })
    }

    /// The first special token in `text`: its byte offset and text.
    fn first_special<'t>(&'t self, text: &str) -> Option<(usize, &'t str)> {
        self.specials
            .find_iter(text.as_bytes())
            .next()
            .map(|(start, _, i)| (start, self.specials.tokens()[i].as_str()))
    }

    /// The value at `field` of the JSON line `line`, or why there is none. A lone
    /// surrogate escape (`"\ud800"`), which Python's `json` reads into a `str` that is
    /// no valid text, is what `errors` says: under "replace" U+FFFD, under "ignore"
    /// nothing, under "strict" a bad record saying so.
    fn parse_line<'s>(
        &self,
        line: &'s str,
        field: &FieldPath,
    ) -> std::result::Result<Found<'s>, LineError> {
        let (message, at) = match field_of(line, field) {
            Ok(found) => return Ok(found),
            Err(e) => e,
        };
        let replace = match self.options.utf8 {
            Utf8Policy::Strict => None,
            Utf8Policy::Replace => Some(true),
            Utf8Policy::Ignore => Some(false),
        };
        match jsonl::lone_surrogates(line, replace) {
            Surrogates::None => Err(LineError::NotJson(message, at)),
            Surrogates::At(at, escape) => Err(LineError::Surrogate(escape, at)),
            Surrogates::Fixed(fixed) => field_of(&fixed, field)
                .map(Found::into_owned)
                .map_err(|(message, _)| LineError::NotJson(message, at)),
        }
    }

    /// A line that is not JSON, or holds a lone surrogate ([`LineError`]), at `place`.
    fn bad_line(&self, place: String, error: LineError, tally: &mut Tally) -> Result<()> {
        match error {
            LineError::NotJson(message, _) => {
                self.bad(place, format!("not JSON ({message})"), tally)
            }
            LineError::Surrogate(escape, _) => {
                let message = format!(
                    "the text holds {escape}, half of a UTF-16 surrogate pair, which is no text"
                );
                let advice = "pass errors=\"replace\" or errors=\"ignore\" to read it anyway, or \
                              bad_records=\"skip\" to leave such records out";
                self.bad_with(place, message, advice, tally)
            }
        }
    }

    /// A record without the field `field` (at its first `depth` parts), whose object
    /// there has `keys`: a bad record whose error lists them and names the option
    /// that picks the field.
    fn missing(
        &self,
        place: String,
        field: &FieldPath,
        depth: usize,
        keys: Option<String>,
        tally: &mut Tally,
    ) -> Result<()> {
        let problem = Found::Missing { depth }.problem(field).unwrap_or_default();
        let keys = keys.map(|k| match k.is_empty() {
            true => "no fields".to_owned(),
            false => k,
        });
        let message = match keys {
            None => problem,
            Some(keys) if depth <= 1 => format!("{problem} (the record has {keys})"),
            Some(keys) => format!("{problem} ('{}' has {keys})", field.prefix(depth - 1)),
        };
        let advice = "pass text_field= naming the field that holds the text, or \
                      bad_records=\"skip\" to leave out records without it";
        self.bad_with(place, message, advice, tally)
    }

    /// A record holding no document, at `place`: an error, or skipped and counted.
    fn bad(&self, place: String, message: String, tally: &mut Tally) -> Result<()> {
        let advice = "pass bad_records=\"skip\" to leave such records out";
        self.bad_with(place, message, advice, tally)
    }

    /// [`Reader::bad`], whose error ends with `advice` (what to do, in the Python
    /// API's keywords, which the command line words as its flags).
    fn bad_with(
        &self,
        place: String,
        message: String,
        advice: &str,
        tally: &mut Tally,
    ) -> Result<()> {
        let message = format!("{place}: {message}");
        match self.options.bad_records {
            BadRecords::Error => Err(Error::BadRecord(format!("{message}; {advice}"))),
            BadRecords::Skip => {
                tally.skipped += 1;
                if let Ok(mut examples) = self.stats.examples.lock() {
                    if examples.len() < EXAMPLES {
                        examples.push(message);
                    }
                }
                Ok(())
            }
        }
    }

    /// A record's document: checked for special tokens under the policy, counted,
    /// given to `f`.
    fn record<'b>(
        &self,
        input: usize,
        text: Cow<'b, str>,
        place: impl Fn() -> String,
        tally: &mut Tally,
        f: &mut impl FnMut(Doc<'b>) -> Result<()>,
    ) -> Result<()> {
        let policy = self.policy(input);
        if policy == SpecialPolicy::Error {
            if let Some((at, token)) = self.first_special(&text) {
                let message = format!("byte {at} of its text: {}", special_message(token));
                return self.bad(place(), message, tally);
            }
        }
        tally.documents += 1;
        tally.bytes += text.len() as u64;
        f(Doc {
            text,
            record: true,
            specials: policy == SpecialPolicy::Special,
        })
    }

    /// The documents of a chunk of whole JSON lines.
    fn json_lines<'b>(
        &self,
        input: usize,
        field: &FieldPath,
        chunk: JsonChunk<'b, '_>,
        tally: &mut Tally,
        f: &mut impl FnMut(Doc<'b>) -> Result<()>,
    ) -> Result<()> {
        let JsonChunk {
            bytes,
            whole,
            offset,
            lines,
        } = chunk;
        let name = &self.info[input].name;
        // A byte-order mark before the first line (Windows editors write one), which
        // JSON forbids and Python's `json` refuses, is left out: it is no text of any
        // record.
        let mut start = match offset == 0 && bytes.starts_with(BOM) {
            true => BOM.len(),
            false => 0,
        };
        let mut k = 0u64; // lines of this chunk before this one
        while start < bytes.len() {
            let end = memchr::memchr(b'\n', &bytes[start..]).map_or(bytes.len(), |i| start + i);
            let line = &bytes[start..end];
            let (line_start, this) = (start, k);
            start = end + 1;
            k += 1;
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let place = |at: usize| {
                let number = match lines {
                    Lines::Known(n) => n + this + 1,
                    Lines::InFile(file, start) => self.lines_before(input, file, start) + this + 1,
                };
                format!(
                    "{name}: line {number} (byte {})",
                    offset + (line_start + at) as u64
                )
            };
            let text: Cow<'b, str> = match whole {
                // Cut at newlines, so at character boundaries.
                Some(w) => Cow::Borrowed(&w[line_start..end]),
                None => match std::str::from_utf8(line) {
                    Ok(s) => Cow::Borrowed(s),
                    Err(e) => match self.options.utf8 {
                        Utf8Policy::Strict => {
                            self.bad(place(e.valid_up_to()), "invalid UTF-8".into(), tally)?;
                            continue;
                        }
                        Utf8Policy::Replace => {
                            Cow::Owned(String::from_utf8_lossy(line).into_owned())
                        }
                        Utf8Policy::Ignore => Cow::Owned(decode_ignoring_errors(line)),
                    },
                },
            };
            let parsed = match &text {
                Cow::Borrowed(s) => self.parse_line(s, field),
                Cow::Owned(s) => self.parse_line(s, field).map(Found::into_owned),
            };
            let doc: Cow<'b, str> = match parsed {
                Ok(Found::Text(t)) => t,
                Ok(Found::Missing { depth }) => {
                    // The keys it has, to name the right field: read again, for the
                    // message only.
                    let keys = jsonl::keys_at(&text, field, depth);
                    self.missing(place(0), field, depth, keys, tally)?;
                    continue;
                }
                Ok(other) => {
                    self.bad(place(0), other.problem(field).unwrap_or_default(), tally)?;
                    continue;
                }
                Err(error) => {
                    let at = match (&text, &error) {
                        (Cow::Owned(_), _) => 0, // not the file's bytes
                        (_, LineError::NotJson(_, at) | LineError::Surrogate(_, at)) => *at,
                    };
                    self.bad_line(place(at), error, tally)?;
                    continue;
                }
            };
            self.record(input, doc, || place(0), tally, f)?;
        }
        Ok(())
    }

    /// The documents of a feed's batch.
    fn batch<'b>(
        &self,
        input: usize,
        batch: &'b DocBatch,
        tally: &mut Tally,
        f: &mut impl FnMut(Doc<'b>) -> Result<()>,
    ) -> Result<()> {
        let data: &'b [u8] = (*batch.data).as_ref();
        let name = &self.info[input].name;
        let offsets = &batch.offsets;
        let bad_offsets =
            || Error::invalid(format!("{name}: a batch's offsets do not fit its data"));
        let (Some(&lo), Some(&hi)) = (offsets.first(), offsets.last()) else {
            return Ok(());
        };
        if lo > hi || hi > data.len() {
            return Err(bad_offsets());
        }
        for (row, message) in &batch.bad {
            let place = match batch.row_group {
                Some(g) => format!("{name}: row group {g}, row {row}"),
                None => format!("{name}: {} {row}", batch.unit),
            };
            self.bad(place, message.clone(), tally)?;
        }
        let whole = simdutf8::basic::from_utf8(&data[lo..hi]).ok();
        for (i, pair) in offsets.windows(2).enumerate() {
            let (s, e) = (pair[0], pair[1]);
            if s > e || e > hi || s < lo {
                return Err(bad_offsets());
            }
            let place = || {
                let row = batch.first_row + i as u64;
                match batch.row_group {
                    Some(g) => format!("{name}: row group {g}, row {row}"),
                    None => format!("{name}: {} {row}", batch.unit),
                }
            };
            let text: Cow<'b, str> = match whole {
                Some(w) if w.is_char_boundary(s - lo) && w.is_char_boundary(e - lo) => {
                    Cow::Borrowed(&w[s - lo..e - lo])
                }
                _ => match std::str::from_utf8(&data[s..e]) {
                    Ok(t) => Cow::Borrowed(t),
                    Err(err) => match self.options.utf8 {
                        Utf8Policy::Strict => {
                            let message =
                                format!("invalid UTF-8 at byte {} of its text", err.valid_up_to());
                            self.bad(place(), message, tally)?;
                            continue;
                        }
                        Utf8Policy::Replace => {
                            Cow::Owned(String::from_utf8_lossy(&data[s..e]).into_owned())
                        }
                        Utf8Policy::Ignore => Cow::Owned(decode_ignoring_errors(&data[s..e])),
                    },
                },
            };
            self.record(input, text, place, tally, f)?;
        }
        Ok(())
    }
}

fn special_message(token: &str) -> String {
    format!(
        "the text holds the special token {token:?} (special_in_text=\"error\"; pass \"text\" to \
         read it as text, or \"special\" as the special token)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_that_skipped_every_record_is_an_error() {
        let mut summary = StatsSummary {
            documents: 0,
            skipped: 1234,
            examples: vec!["a.jsonl: line 1 (byte 0): no field 'txt'".into()],
            bytes: 0,
        };
        let e = summary.check_some_read().unwrap_err().to_string();
        assert_eq!(
            e,
            "every record was bad (1,234 skipped; the first: a.jsonl: line 1 (byte 0): no \
             field 'txt'), so no document was read; fix the records, or how they are read \
             (text_field=, format=)"
        );
        summary.documents = 1;
        assert!(summary.check_some_read().is_ok());
        summary.documents = 0;
        summary.skipped = 0;
        assert!(summary.check_some_read().is_ok());
    }
}
