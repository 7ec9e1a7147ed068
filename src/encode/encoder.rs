//! Text -> ids: split on special tokens, pre-tokenize, then merge each piece (whole
//! piece lookup, cache, or byte-pair merge). Also batches and decoding.

use std::sync::{Mutex, OnceLock};

use hashbrown::hash_map::Entry;
use rustc_hash::{FxBuildHasher, FxHashSet};

use super::batched::Batch;
use super::cache::PieceCache;
use super::merge::{merge_piece, Scratch};
use super::prefault::Prefault;
use super::short::{ShortTable, SHORT_IDS};
use super::table::{Bpe, NONE};
use super::wide::Text;
use crate::count::FxMap;
use crate::error::{Error, Result};
use crate::piecekey;
use crate::pretokenize::Pretokenizer;
use crate::specials::{Segment, Specials};

/// Short-table pairs of a workspace, at first and at most: 2 MB growing to 32 MB
/// (655K pieces; en-small has ~120K distinct short pieces, the 116 MB en corpus
/// ~517K with gpt2 and ~579K with o200k),
/// and the words of its spill arena (4 MB).
const SHORT_PAIRS: (usize, usize) = (1 << 15, 1 << 19);
const SHORT_SPILL: usize = 1 << 20;
/// Long pieces cached per workspace (the arenas and table take about 2 MB).
const LONG_ENTRIES: usize = 1 << 16;

/// Per-thread state: the piece caches and merge buffers.
#[derive(Debug)]
pub struct Workspace {
    pub short: ShortTable,
    pub long: PieceCache,
    pub scratch: Scratch,
    /// Whether `long` holds a short piece (one the short table had no room for).
    /// Until then a short piece the short table lacks is new, and the miss path skips
    /// the long cache's lookup (with o200k, a cold encode's miss path spent ~10% of
    /// its time there).
    long_holds_short: bool,
    /// Faults in the output buffer of [`Encoder::encode`] ahead of the writes.
    pub prefault: Prefault,
    /// Why the last pieces could not be encoded (out of memory, or Ctrl-C while
    /// merging a huge piece), for the text loop to stop at its next batch.
    failure: Option<Error>,
}

impl Workspace {
    /// A workspace for encoding large texts: its short table grows with the text.
    /// An error where its memory cannot be had.
    pub fn new() -> Result<Self> {
        Self::with_sizes(SHORT_PAIRS, SHORT_SPILL, LONG_ENTRIES)
    }

    /// A workspace whose caches never grow: `short_pairs` pairs (spilling at most
    /// 8 ids a pair) and `long_entries` long pieces, all reserved now (the streaming
    /// encoder may not allocate later).
    pub fn fixed(short_pairs: usize, long_entries: usize) -> Result<Self> {
        Self::with_sizes((short_pairs, short_pairs), short_pairs * 8, long_entries)
    }

    fn with_sizes(short_pairs: (usize, usize), spill: usize, long_entries: usize) -> Result<Self> {
        Ok(Self {
            short: ShortTable::try_new(short_pairs.0, short_pairs.1, spill)?,
            long: PieceCache::try_new(long_entries)?,
            scratch: Scratch::try_new()?,
            long_holds_short: false,
            prefault: Prefault::default(),
            failure: None,
        })
    }

    /// The failure that stopped the last pieces, if any (taken: the workspace is
    /// sound again, as no wrong ids were cached).
    pub(super) fn take_failure(&mut self) -> Result<()> {
        self.failure.take().map_or(Ok(()), Err)
    }
}

#[derive(Debug)]
pub struct Encoder {
    bpe: Bpe,
    pretok: Pretokenizer,
    specials: Specials,
    pool: Mutex<Vec<Workspace>>,
    /// The short table that the threads of a parallel encode share (see
    /// [`Encoder::lease_shared`]), made on first use at its full size.
    shared_short: Mutex<Option<ShortTable>>,
}

/// A workspace borrowed from the encoder's pool, given back on drop.
pub struct Lease<'a> {
    encoder: &'a Encoder,
    ws: Option<Workspace>,
    /// The workspace's own short table while it holds a handle on the shared one.
    own_short: Option<ShortTable>,
}

impl std::ops::Deref for Lease<'_> {
    type Target = Workspace;
    fn deref(&self) -> &Workspace {
        self.ws.as_ref().expect("workspace present until drop")
    }
}

impl std::ops::DerefMut for Lease<'_> {
    fn deref_mut(&mut self) -> &mut Workspace {
        self.ws.as_mut().expect("workspace present until drop")
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        if let (Some(ws), Some(own)) = (self.ws.as_mut(), self.own_short.take()) {
            ws.short = own;
        }
        if let (Some(ws), Ok(mut pool)) = (self.ws.take(), self.encoder.pool.lock()) {
            if pool.len() < 64 {
                pool.push(ws);
            }
        }
    }
}

impl Encoder {
    /// From a CS336 vocab and merges. Special tokens already in the vocab keep their
    /// id; the others are appended after the highest id, in the order given.
    pub fn from_merges(
        mut vocab: Vec<(u32, Vec<u8>)>,
        merges: &[(Vec<u8>, Vec<u8>)],
        special_tokens: Vec<String>,
        pattern: &str,
    ) -> Result<Self> {
        let mut next = vocab.iter().map(|(i, _)| u64::from(*i) + 1).max();
        // Each special token's id from a map of the vocab's bytes to their lowest id:
        // comparing every special token with every token took ~10 s for 60K special
        // tokens and over a minute for the ~200K of a vocab.json without merges.
        let mut new = Vec::new(); // (index in `special_tokens`, id) of those appended
        let ids: Vec<u32> = {
            let mut lowest: FxMap<&[u8], u32> =
                FxMap::with_capacity_and_hasher(vocab.len(), FxBuildHasher);
            for (id, bytes) in &vocab {
                let slot = lowest.entry(bytes.as_slice()).or_insert(*id);
                *slot = (*slot).min(*id);
            }
            let mut ids = Vec::with_capacity(special_tokens.len());
            for (k, tok) in special_tokens.iter().enumerate() {
                let id = match lowest.entry(tok.as_bytes()) {
                    Entry::Occupied(e) => *e.get(),
                    Entry::Vacant(e) => {
                        let id = next.unwrap_or(0);
                        next = Some(id + 1);
                        let id = u32::try_from(id).map_err(|_| {
                            Error::invalid(format!(
                                "special token {tok:?}: no id is left after {}",
                                u32::MAX
                            ))
                        })?;
                        new.push((k, id));
                        *e.insert(id)
                    }
                };
                ids.push(id);
            }
            ids
        };
        for (k, id) in new {
            vocab.push((id, special_tokens[k].as_bytes().to_vec()));
        }
        let specials = special_tokens.into_iter().zip(ids).collect();
        let bpe = Bpe::from_merges(vocab, merges)?;
        Self::new(bpe, pattern, specials)
    }

    /// From tiktoken mergeable ranks and special tokens with their ids.
    pub fn from_ranks(
        ranks: Vec<(Vec<u8>, u32)>,
        special_tokens: Vec<(String, u32)>,
        pattern: &str,
    ) -> Result<Self> {
        Self::new(Bpe::from_ranks(ranks)?, pattern, special_tokens)
    }

    fn new(mut bpe: Bpe, pattern: &str, specials: Vec<(String, u32)>) -> Result<Self> {
        for (tok, id) in &specials {
            if *id == NONE {
                return Err(Error::invalid(format!(
                    "special token {tok:?}: id {id} is too large"
                )));
            }
            bpe.set_special(*id, tok.as_bytes())?;
        }
        Ok(Self {
            bpe,
            pretok: Pretokenizer::new(pattern)?,
            specials: Specials::new(specials)?,
            pool: Mutex::new(Vec::new()),
            shared_short: Mutex::new(None),
        })
    }

    pub fn bpe(&self) -> &Bpe {
        &self.bpe
    }

    pub fn pretokenizer(&self) -> &Pretokenizer {
        &self.pretok
    }

    /// All special tokens of this encoder.
    pub fn specials(&self) -> &Specials {
        &self.specials
    }

    /// The special tokens among `names` (names that are not special are ignored, as
    /// tiktoken does).
    ///
    /// The names are looked up in a set: checking each special token against the
    /// list was quadratic, minutes per `encode` for 200K special tokens all
    /// disallowed.
    pub fn subset(&self, names: &[String]) -> Result<Specials> {
        let names: FxHashSet<&str> = names.iter().map(String::as_str).collect();
        Specials::new(
            self.specials
                .tokens()
                .filter(|(t, _)| names.contains(t))
                .map(|(t, i)| (t.to_owned(), i))
                .collect(),
        )
    }

    /// A workspace from the pool, or a new one (an error where its memory cannot be
    /// had).
    pub fn lease(&self) -> Result<Lease<'_>> {
        let ws = match self.pool.lock().ok().and_then(|mut p| p.pop()) {
            Some(ws) => ws,
            None => Workspace::new()?,
        };
        Ok(Lease {
            encoder: self,
            ws: Some(ws),
            own_short: None,
        })
    }

    /// A workspace for one of several threads encoding parts of the same data: its
    /// short table is a handle on a table all of them share (where the machine allows
    /// it: [`ShortTable::can_share`]), so a piece one thread has merged is a hit for
    /// the others.
    ///
    /// Why: with a table per thread, each thread merged the frequent pieces again,
    /// and a new piece costs ~500 ns against ~10 ns for a hit; on the 116 MB English
    /// corpus a cold 2-thread file encode ran at 1.4x one thread (see RESULTS.md).
    pub fn lease_shared(&self) -> Result<Lease<'_>> {
        let mut lease = self.lease()?;
        if let Some(handle) = self.shared_handle() {
            lease.own_short = Some(std::mem::replace(&mut lease.short, handle));
        }
        Ok(lease)
    }

    /// Between two chunks of a parallel encode: if the shared table filled up, moves
    /// `lease` to its larger copy. A shared table cannot grow in place while other
    /// threads read it, so the first thread to see it full makes a copy twice the
    /// size, and each thread moves over at its next chunk; the old table is freed
    /// when the last thread has left it. It starts small, like a thread's own table,
    /// so that small inputs keep small tables.
    pub fn refresh_shared(&self, lease: &mut Lease<'_>) {
        if lease.own_short.is_some() && lease.short.wants_growth() {
            if let Some(handle) = self.shared_handle() {
                lease.short = handle;
            }
        }
    }

    /// How many pieces the shared short table holds (0 when none was made).
    #[cfg(test)]
    pub(crate) fn shared_table_len(&self) -> usize {
        let master = self.shared_short.lock().unwrap_or_else(|p| p.into_inner());
        master.as_ref().map_or(0, ShortTable::len)
    }

    /// Before a parallel encode of `bytes` of text: makes the shared short table (or
    /// grows it) to the size such a text is likely to need ([`short_pairs_for`]).
    ///
    /// Why: a shared table grows only between chunks, by copy, so one that starts
    /// small spends the first chunks full, and the pieces that find no room are merged
    /// again at each occurrence. A cold 2-thread encode of the 116 MB English corpus
    /// ran at 1.65x one thread with a table that grew from 2 MB, and at ~1.85x with one
    /// made at its full size.
    pub fn size_shared_for(&self, bytes: usize) {
        let want = short_pairs_for(bytes);
        let Ok(mut master) = self.shared_short.lock() else {
            return;
        };
        if master.is_none() {
            // Where the memory cannot be had, the threads keep tables of their own.
            *master = ShortTable::try_new(want, SHORT_PAIRS.1, SHORT_SPILL).ok();
        }
        let Some(table) = master.as_mut() else {
            return;
        };
        // Growing by copy leaves handles that other calls hold on the old table valid.
        while table.capacity_pairs() < want && table.can_grow() {
            *table = table.grown();
        }
    }

    /// Pairs of the shared short table (0 when none was made).
    #[cfg(test)]
    pub(crate) fn shared_table_pairs(&self) -> usize {
        let master = self.shared_short.lock().unwrap_or_else(|p| p.into_inner());
        master.as_ref().map_or(0, ShortTable::capacity_pairs)
    }

    /// A handle on the shared short table, made (or grown, if it filled up) first.
    fn shared_handle(&self) -> Option<ShortTable> {
        let mut master = self.shared_short.lock().ok()?;
        if master.is_none() {
            *master = ShortTable::try_new(SHORT_PAIRS.0, SHORT_PAIRS.1, SHORT_SPILL).ok();
        }
        let table = master.as_mut()?;
        if table.wants_growth() {
            *table = table.grown();
        }
        table.share()
    }

    /// Appends the ids of one pre-token (outside the batched loop: for profiling).
    pub fn encode_piece(&self, piece: &[u8], ws: &mut Workspace, out: &mut Vec<u32>) {
        let key = piecekey::key_of(piece);
        self.encode_slow(piece, key, piecekey::hash(key), ws, out);
    }

    /// A piece the emit loop's probe did not settle (found past its home pair, with
    /// spilled ids, long, or new), or any piece outside that loop.
    #[inline(never)]
    pub(super) fn encode_slow(
        &self,
        piece: &[u8],
        key: u128,
        hash: u64,
        ws: &mut Workspace,
        out: &mut Vec<u32>,
    ) {
        if key != 0 {
            if let Some((words, n)) = ws.short.get_words(key, hash) {
                match n <= SHORT_IDS {
                    true => out.extend_from_slice(&words[..n]),
                    false => ws.short.extend_spilled(words, n, out),
                }
                return;
            }
        }
        self.encode_miss(piece, key, hash, ws, out);
    }

    /// A piece the short table does not hold: the long cache, else the vocabulary
    /// (a whole piece that is a token) or the byte-pair merge; the result is cached.
    #[inline(never)]
    fn encode_miss(
        &self,
        piece: &[u8],
        key: u128,
        hash: u64,
        ws: &mut Workspace,
        out: &mut Vec<u32>,
    ) {
        if key == 0 || ws.long_holds_short {
            if let Some(ids) = ws.long.get(piece) {
                out.extend_from_slice(ids);
                return;
            }
        }
        let start = out.len();
        match piece {
            [b] => out.push(self.bpe.byte_id(*b)),
            _ => {
                let whole = match (self.bpe.whole_piece_lookup(), key) {
                    (false, _) => None,
                    (true, 0) => self.bpe.id_of(piece),
                    (true, _) => self.bpe.id_of_short(key, hash),
                };
                match whole {
                    Some(id) => out.push(id),
                    None => {
                        if let Err(e) = merge_piece(&self.bpe, piece, NONE, &mut ws.scratch, out) {
                            // Not cached: the text loop stops at its next batch.
                            out.truncate(start);
                            ws.failure = Some(e);
                            return;
                        }
                    }
                }
            }
        }
        let ids = &out[start..];
        if key == 0 || ids.is_empty() || !ws.short.insert(key, hash, ids) {
            ws.long_holds_short |= key != 0;
            ws.long.insert(piece, ids);
        }
    }

    /// Appends the ids of `text`, which holds no special token to recognise.
    pub fn encode_ordinary_into(
        &self,
        text: &str,
        ws: &mut Workspace,
        out: &mut Vec<u32>,
    ) -> Result<()> {
        self.encode_into(text, &Specials::default(), ws, out)
    }

    /// Appends the ids of `text`, recognising the special tokens in `allowed`.
    ///
    /// The scanner only records each piece's range (a special token is a piece of its
    /// own); full batches go through [`Encoder::step`], which keys and prefetches one
    /// batch while it emits the one before, so each table line has a whole batch of
    /// work (~0.5 us) to arrive in. The batches run on across special tokens: ending
    /// them at each document cost the first batch of every document its prefetches.
    pub fn encode_into(
        &self,
        text: &str,
        allowed: &Specials,
        ws: &mut Workspace,
        out: &mut Vec<u32>,
    ) -> Result<()> {
        let bytes = text.as_bytes();
        let (mut a, mut b) = (Batch::default(), Batch::default());
        let (mut next, mut ready) = (&mut a, &mut b);
        let mut result = Ok(());
        // Why the batches stopped (out of memory, Ctrl-C): the scanner runs on to the
        // end of its segment, but no batch is looked up or emitted after it.
        let mut halt = None;
        allowed.matcher.split(text, |seg| match seg {
            Segment::Text(t) if result.is_ok() => {
                // Spans of a segment, made spans of `text`.
                let base = (t.as_ptr() as usize).wrapping_sub(bytes.as_ptr() as usize);
                result = self.pretok.for_each_span(t, |start, end| {
                    if next.push(base + start, base + end) {
                        self.turn(bytes, &mut next, &mut ready, ws, out, &mut halt);
                    }
                });
            }
            Segment::Text(_) => {}
            Segment::Special(i) => {
                if next.push_special(allowed.ids[i]) {
                    self.turn(bytes, &mut next, &mut ready, ws, out, &mut halt);
                }
            }
        });
        result?;
        halt.map_or(Ok(()), Err)?;
        self.step(bytes, next, ready, ws, out)?;
        ready.clear();
        self.step(bytes, ready, next, ws, out)
    }

    /// A full `next` batch: key it while emitting `ready`, then the two trade places
    /// (by reference: by value, a swap copies 2.5 KB) and the new `next` starts empty.
    /// After a failure (kept in `halt`) batches are only dropped.
    #[inline(always)]
    fn turn<'b>(
        &self,
        bytes: &[u8],
        next: &mut &'b mut Batch,
        ready: &mut &'b mut Batch,
        ws: &mut Workspace,
        out: &mut Vec<u32>,
        halt: &mut Option<Error>,
    ) {
        if halt.is_none() {
            *halt = self.step(bytes, next, ready, ws, out).err();
        }
        std::mem::swap(next, ready);
        next.clear();
    }

    pub fn encode(&self, text: &str, allowed: &Specials) -> Result<Vec<u32>> {
        let mut ws = self.lease()?;
        ws.short.reserve_pairs(short_pairs_for(text.len()));
        ws.short.populate();
        self.encode_fresh(text, allowed, &mut ws, output_buffer(text.len())?)
    }

    /// Encodes `text` into `out`, a fresh buffer, faulting its pages in ahead of the
    /// writes ([`Prefault`]).
    fn encode_fresh(
        &self,
        text: &str,
        allowed: &Specials,
        ws: &mut Workspace,
        mut out: Vec<u32>,
    ) -> Result<Vec<u32>> {
        ws.prefault = Prefault::new(&out);
        let encoded = self.encode_into(text, allowed, ws, &mut out);
        ws.prefault = Prefault::default();
        encoded.map(|()| out)
    }

    /// Encodes each text, in parallel on `num_threads` threads (0: all cores).
    pub fn encode_batch<S: AsRef<str> + Sync>(
        &self,
        texts: &[S],
        allowed: &Specials,
        num_threads: usize,
    ) -> Result<Vec<Vec<u32>>> {
        let texts: Vec<Text<'_>> = texts.iter().map(|t| Text::Utf8(t.as_ref())).collect();
        let ids = self.encode_texts(&texts, allowed, None, num_threads)?;
        // UTF-8 texts always give their ids (`None` is for code points without UTF-8).
        Ok(ids.into_iter().map(Option::unwrap_or_default).collect())
    }

    /// Times the two stages of encoding `text` (no special tokens) apart, for
    /// benchmarks: `(pre-tokenize seconds, merge seconds, token count)`, in CPU time of
    /// the calling thread (so a busy machine does not inflate them). The merge stage
    /// runs on pieces collected beforehand, with a cold cache.
    pub fn profile(&self, text: &str) -> Result<(f64, f64, usize)> {
        let t0 = thread_cpu_seconds();
        let mut pieces: Vec<&str> = Vec::with_capacity(text.len() / 4);
        self.pretok.for_each_piece(text, |p| pieces.push(p))?;
        let pretok_s = thread_cpu_seconds() - t0;
        let mut ws = Workspace::new()?;
        let mut out = Vec::with_capacity(text.len() / 3);
        let t1 = thread_cpu_seconds();
        for p in &pieces {
            self.encode_piece(p.as_bytes(), &mut ws, &mut out);
        }
        Ok((pretok_s, thread_cpu_seconds() - t1, out.len()))
    }

    /// The bytes of `ids`, joined. An id the vocabulary does not hold is an error naming it.
    pub fn decode_bytes(&self, ids: &[u32]) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(ids.len() * 4);
        for &id in ids {
            let bytes = self.bpe.token(id).ok_or(Error::UnknownTokenId { id })?;
            out.extend_from_slice(bytes);
        }
        Ok(out)
    }
}

/// Short-table pairs for encoding `bytes` of text: about one per 160 bytes, which
/// follows the distinct pieces of English (~115K in 19 MB, ~517K in 116 MB), within
/// the table's limits. Small inputs keep small tables.
pub fn short_pairs_for(bytes: usize) -> usize {
    (bytes / 160)
        .next_power_of_two()
        .clamp(SHORT_PAIRS.0, SHORT_PAIRS.1)
}

/// An empty id buffer for a text of `len` bytes, with room for one id per two bytes
/// so that it is not copied to grow (English is ~0.25-0.34 ids a byte; room never
/// written costs nothing). Its pages are faulted in a megabyte at a time ahead of the
/// writes ([`Prefault`]). Not in huge pages: with a page cache filling the memory,
/// repeated calls ran up to 2x slower (the kernel compacting memory to find 2 MiB pages).
pub fn output_buffer(len: usize) -> Result<Vec<u32>> {
    let mut out = Vec::new();
    out.try_reserve_exact(len / 2 + 16)
        .map_err(|_| Error::out_of_memory::<u32>("token ids", len / 2 + 16))?;
    Ok(out)
}

/// CPU seconds used by the calling thread (wall-clock seconds where unsupported).
fn thread_cpu_seconds() -> f64 {
    #[cfg(target_os = "linux")]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec.
        if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } == 0 {
            return ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9;
        }
    }
    static START: OnceLock<std::time::Instant> = OnceLock::new();
    START
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_secs_f64()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::finishes_within;

    fn encoder(specials: &[&str]) -> Encoder {
        let mut vocab: Vec<(u32, Vec<u8>)> = (0..=255u8).map(|b| (u32::from(b), vec![b])).collect();
        vocab.push((256, b" t".to_vec()));
        vocab.push((257, b" th".to_vec()));
        vocab.push((258, b" the".to_vec()));
        let merges = vec![
            (b" ".to_vec(), b"t".to_vec()),
            (b" t".to_vec(), b"h".to_vec()),
            (b" th".to_vec(), b"e".to_vec()),
        ];
        let specials = specials.iter().map(|s| s.to_string()).collect();
        Encoder::from_merges(vocab, &merges, specials, "gpt2").unwrap()
    }

    #[test]
    fn encodes_and_decodes() {
        let e = encoder(&["<|a|>", "<|a|><|a|>"]);
        let all = e.specials().clone();
        assert_eq!(all.ids, vec![259, 260]);
        let ids = e.encode("a the<|a|><|a|> th<|a|>", &all).unwrap();
        assert_eq!(ids, vec![97, 258, 260, 257, 259]);
        assert_eq!(e.decode_bytes(&ids).unwrap(), b"a the<|a|><|a|> th<|a|>");
        let none = Specials::default();
        let ordinary = e.encode("<|a|>", &none).unwrap();
        assert_eq!(ordinary.len(), 5);
        assert!(matches!(
            e.decode_bytes(&[999]),
            Err(Error::UnknownTokenId { id: 999 })
        ));
    }

    #[test]
    fn specials_that_are_ordinary_tokens_stay_ordinary() {
        // " th" is a merge's result and " " a byte: both keep their ids, and the
        // merges that make or use them still apply (as special tokens they are split
        // off first, so " the" is " th" + "e" then).
        let e = encoder(&[" th", " "]);
        let all = e.specials().clone();
        assert_eq!(all.ids, vec![257, 32]);
        assert_eq!(e.encode(" the th ", &all).unwrap(), vec![257, 101, 257, 32]);
        let none = Specials::default();
        assert_eq!(e.encode(" the th ", &none).unwrap(), vec![258, 257, 32]);
    }

    #[test]
    fn specials_inside_batches_equal_segment_by_segment() {
        // Special tokens ride in the batches with the pieces: at every position of a
        // batch, next to each other, at the start and the end of the text.
        let e = encoder(&["<|a|>", "<|b|>"]);
        let all = e.specials().clone();
        let none = Specials::default();
        let mut text = String::from("<|b|>");
        let mut want = vec![260];
        for doc in 0..300 {
            let body = " the then".repeat(doc % 37) + &"x".repeat(doc % 20);
            want.extend(e.encode(&body, &none).unwrap());
            text += &body;
            let special = if doc % 3 == 0 { "<|a|><|b|>" } else { "<|a|>" };
            want.extend(e.encode(special, &all).unwrap());
            text += special;
        }
        assert_eq!(e.encode(&text, &all).unwrap(), want);
        // The same text without special tokens recognised is all ordinary pieces.
        let ordinary = e.encode(&text, &none).unwrap();
        assert_eq!(e.decode_bytes(&ordinary).unwrap(), text.as_bytes());
    }

    #[test]
    fn encode_piece_handles_spilled_ids() {
        // Regression: a cached piece of more than three ids (spilled) made the
        // unbatched path slice past the slot's inline ids and panic.
        let e = encoder(&[]);
        let mut ws = Workspace::new().unwrap();
        for _ in 0..2 {
            let mut out = Vec::new();
            e.encode_piece(b"abcdef", &mut ws, &mut out);
            assert_eq!(
                out,
                b"abcdef".iter().map(|&b| u32::from(b)).collect::<Vec<_>>()
            );
        }
    }

    #[test]
    fn prefaulted_output_equals_plain_output() {
        // A text large enough that `encode` faults its buffer in ahead of the writes,
        // with pieces of many ids (a long run of bytes) to move the write cursor in
        // large steps.
        let e = encoder(&["<|a|>"]);
        let all = e.specials().clone();
        let mut text = String::new();
        for i in 0..300_000 {
            text += [" the then", "<|a|>", " xyzzy", "\n\n  the", " th"][i % 5];
            if i % 997 == 0 {
                text += &"q".repeat(6000);
            }
        }
        assert!(text.len() > 3 << 20);
        let mut plain = Vec::new();
        e.encode_into(&text, &all, &mut Workspace::new().unwrap(), &mut plain)
            .unwrap();
        assert_eq!(e.encode(&text, &all).unwrap(), plain);
        let batch = e.encode_batch(&[&text, &text], &all, 2).unwrap();
        assert!(batch.iter().all(|ids| *ids == plain));
    }

    #[test]
    fn shared_table_is_sized_for_the_input_and_keeps_its_pieces() {
        let e = encoder(&[]);
        let all = e.specials().clone();
        assert_eq!(e.shared_table_pairs(), 0);
        e.size_shared_for(1000);
        assert_eq!(e.shared_table_pairs(), SHORT_PAIRS.0);
        // Pieces a parallel encode put in the table survive the growth.
        let texts = vec![" the then thin"; 4];
        let before = e.encode_batch(&texts, &all, 2).unwrap();
        let held = e.shared_table_len();
        e.size_shared_for(40 << 20);
        assert_eq!(e.shared_table_pairs(), (40 << 20) / 160);
        assert_eq!(e.shared_table_len(), held);
        // A smaller input never shrinks it; a huge one stops at the limit.
        e.size_shared_for(1000);
        e.size_shared_for(usize::MAX / 2);
        assert_eq!(e.shared_table_pairs(), SHORT_PAIRS.1);
        assert_eq!(e.encode_batch(&texts, &all, 2).unwrap(), before);
    }

    /// Finding each special token's id compared it with every token (~10 s for 60K
    /// special tokens, optimised), and `subset` compared each special token with
    /// every name (~9 s for 60K); both look up a hash map now.
    #[test]
    fn many_special_tokens_build_and_subset_in_linear_time() {
        let e = finishes_within(2.0, "an encoder with 60K special tokens", || {
            let mut names: Vec<String> = (0..60_000).map(|i| format!("<|s{i}|>")).collect();
            names.insert(1, " th".into());
            encoder(&names.iter().map(String::as_str).collect::<Vec<_>>())
        });
        let all = e.specials().clone();
        assert_eq!(all.ids[..3], [259, 257, 260]);
        assert_eq!(all.ids.last(), Some(&(259 + 59_999)));
        assert_eq!(
            e.encode("<|s59999|> th", &all).unwrap(),
            [259 + 59_999, 257]
        );
        let e = std::sync::Arc::new(e);
        let shared = e.clone();
        let half = finishes_within(2.0, "a subset of 30K of 60K special tokens", move || {
            let names: Vec<String> = (0..60_000)
                .step_by(2)
                .map(|i| format!("<|s{i}|>"))
                .collect();
            shared.subset(&names).unwrap()
        });
        assert_eq!(half.ids.len(), 30_000);
        assert_eq!(e.encode("<|s2|><|s3|>", &half).unwrap().len(), 1 + 6);
        // A special token given twice is still an error.
        let twice = Encoder::from_merges(
            (0..=255u8).map(|b| (u32::from(b), vec![b])).collect(),
            &[],
            vec!["<|a|>".into(), "<|b|>".into(), "<|a|>".into()],
            "gpt2",
        );
        let err = twice.unwrap_err().to_string();
        assert_eq!(err, "special token \"<|a|>\" is given twice");
    }

    #[test]
    fn batch_equals_single() {
        let e = encoder(&[]);
        let texts = vec!["the the", " then", ""];
        let all = e.specials().clone();
        let batch = e.encode_batch(&texts, &all, 2).unwrap();
        for (t, ids) in texts.iter().zip(batch) {
            assert_eq!(ids, e.encode(t, &all).unwrap());
        }
    }
}
