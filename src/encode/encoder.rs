//! [`Encoder`]: a vocabulary, a pre-tokenizer and special tokens. Text -> ids (split
//! on the special tokens a call allows, pre-tokenize, then each piece from the caches
//! or merged: `engine`), and ids -> bytes. Drivers for iterables of text, code-point
//! text, many texts and files build on `encode` and `encode_into` (`text`,
//! `parallel`, and `crate::dataset` above).

use hashbrown::hash_map::Entry;
use rustc_hash::{FxBuildHasher, FxHashSet};

use super::engine::{
    output_buffer, short_lines_for, trim, Chars, Engine, Lease, Prefault, Span, Spans, TokenLens,
    Trim, Workspace, Workspaces,
};
use super::hf::{Front, FrontSpec};
use super::vocab::{merge_piece, recover_merges, Bpe, CharSpec, RankFormat, Scratch};
use crate::count::FxMap;
use crate::error::{Error, Result};
use crate::ids::NONE;
use crate::pretokenize::{Kind, Pretokenizer, StepSpec};
use crate::specials::Specials;

/// A SentencePiece-style BPE model of a `tokenizer.json` (a vocabulary of characters)
/// and, where the file has no pre-tokenizer steps, how its words are found.
#[derive(Clone, Debug, Default)]
pub struct CharWords {
    pub chars: CharSpec,
    /// The replacement character (`▁`) of `Metaspace`, or of the normalizer that puts
    /// it for spaces.
    pub rep: Option<char>,
    /// `Metaspace`'s `split`: a word starts at each `rep`. Else the whole text is the
    /// model's word, which is cut before a `rep` where no token joins the two sides
    /// (`Bpe::joins_before`), so that its pieces are cached.
    pub split: bool,
}

/// A vocabulary, a pre-tokenizer and special tokens: text -> ids -> bytes.
#[derive(Debug)]
pub struct Encoder {
    engine: Engine,
    /// Every special token of the encoder (a call recognises a subset of them).
    specials: Specials,
    workspaces: Workspaces,
    /// Added tokens, normalizers and the prefix space of a `tokenizer.json`.
    front: Option<Front>,
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
            // A special token of one byte that the vocabulary holds under a second id
            // too (CS336 training with special_tokens=["|"] gives byte token 124 and
            // special token 256 the same bytes): ordinary text takes the byte's token,
            // the lowest id, and the special token the lowest of the others, so that
            // an allowed "|" encodes to the id training gave it.
            let mut second_byte_id: [Option<u32>; 256] = [None; 256];
            for (id, bytes) in &vocab {
                if let [b] = bytes.as_slice() {
                    if lowest.get(bytes.as_slice()) != Some(id) {
                        let slot = &mut second_byte_id[usize::from(*b)];
                        *slot = Some(slot.map_or(*id, |s| s.min(*id)));
                    }
                }
            }
            let mut ids = Vec::with_capacity(special_tokens.len());
            for (k, tok) in special_tokens.iter().enumerate() {
                if let Some(id) = match tok.as_bytes() {
                    [b] => second_byte_id[usize::from(*b)],
                    _ => None,
                } {
                    ids.push(id);
                    continue;
                }
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

    /// Special tokens may share an id, as tiktoken allows (o200k_harmony gives 200018
    /// to `<|endofprompt|>` and `<|reserved_200018|>`): each encodes to it, and it
    /// decodes to the first of them, as tiktoken decodes it.
    fn new(mut bpe: Bpe, pattern: &str, specials: Vec<(String, u32)>) -> Result<Self> {
        let mut taken = std::collections::HashSet::new();
        for (tok, id) in &specials {
            if *id == NONE {
                return Err(Error::invalid(format!(
                    "special token {tok:?}: id {id} is too large"
                )));
            }
            if taken.insert(*id) {
                bpe.set_special(*id, tok.as_bytes())?;
            }
        }
        Ok(Self {
            engine: Engine {
                bpe,
                pretok: Pretokenizer::new(pattern)?,
                lens: TokenLens::default(),
            },
            specials: Specials::new(specials)?,
            workspaces: Workspaces::default(),
            front: None,
        })
    }

    /// From an HF `tokenizer.json`'s BPE model (vocab and merges as bytes; the merges
    /// by rank, `ignore_merges` looking whole pieces up first), its chain of
    /// pre-tokenizers, and its front (added tokens, normalizers, prefix space).
    ///
    /// An added token's id holds the bytes it decodes to (`decode`), which the Python
    /// side gives, since `tokenizers`' `ByteLevel` decoder reads its text as byte-level
    /// characters where it can. The encoder's special tokens are the added tokens
    /// matched in the raw text, special or not: what a file may be cut before.
    ///
    /// With `chars`, the model is SentencePiece-style: tokens are their texts' UTF-8,
    /// a word starts as its characters (byte fallback, unknown tokens), and an added
    /// token's id holds its text; decoding runs the front's decoders.
    pub fn from_hf(
        vocab: Vec<(u32, Vec<u8>)>,
        merges: &[(Vec<u8>, Vec<u8>)],
        ignore_merges: bool,
        steps: &[StepSpec],
        mut front: FrontSpec,
        decode: &[(u32, Vec<u8>)],
        chars: Option<CharWords>,
    ) -> Result<Self> {
        // Whether the model's word is a whole text, which the engine gets in pieces.
        let mut whole_text = false;
        let (mut bpe, pretok) = match chars {
            None => (
                Bpe::from_merges(vocab, merges)?,
                Pretokenizer::from_steps(steps)?,
            ),
            Some(words) => {
                let bpe = Bpe::from_char_merges(vocab, merges, &words.chars)?;
                let pretok = match (steps.is_empty(), words.split, words.rep) {
                    (false, _, _) => Pretokenizer::from_steps(steps)?,
                    (true, true, Some(rep)) => Pretokenizer::cuts_before(Some(rep), Vec::new()),
                    (true, true, None) => {
                        return Err(Error::invalid("a Metaspace split needs its replacement"))
                    }
                    (true, false, rep) => {
                        whole_text = true;
                        match rep.and_then(|r| bpe.joins_before(r)) {
                            Some(joins) => Pretokenizer::cuts_before(rep, joins),
                            None => Pretokenizer::cuts_before(None, Vec::new()),
                        }
                    }
                };
                (bpe, pretok)
            }
        };
        if ignore_merges {
            match whole_text {
                true => front.whole_text_lookup = true,
                false => bpe.look_up_whole_pieces(),
            }
        }
        for (id, bytes) in decode {
            bpe.set_special(*id, bytes)?;
        }
        let front = Front::new(front)?;
        let specials = front.raw_specials();
        Ok(Self {
            engine: Engine {
                bpe,
                pretok,
                lens: TokenLens::default(),
            },
            specials,
            workspaces: Workspaces::default(),
            front: Some(front),
        })
    }

    /// The pre-tokenizer kind whose line cuts files are cut at: `Custom` (none) where
    /// an HF front would not give the same ids on both sides of one.
    pub fn cut_kind(&self) -> Kind {
        match &self.front {
            Some(front) if !front.line_cuts() => Kind::Custom,
            _ => self.pretokenizer().kind(),
        }
    }

    /// Whether files may be cut before the special tokens this encoder recognises.
    pub fn cuts_at_specials(&self) -> bool {
        self.front.as_ref().is_none_or(Front::special_cuts)
    }

    /// An encoder for the rank file `data` (named `name`, for errors), with
    /// `specials` and the pre-tokenizer `pattern`.
    ///
    /// A token given twice is found by the build (`Bpe::from_ranks` errors on it),
    /// and only then looked for line by line to name the line: checking every file
    /// first with a set of all tokens cost o200k's load ~10 ms.
    pub fn from_rank_file(
        format: RankFormat,
        data: &[u8],
        name: &str,
        specials: Vec<(String, u32)>,
        pattern: &str,
    ) -> Result<Self> {
        let ranks = format.parse_unchecked(data, name)?;
        Self::from_ranks(ranks, specials, pattern).map_err(|e| match format.parse(data, name) {
            Err(located) => located,
            Ok(_) => e,
        })
    }

    /// The ids of one piece of bytes, not pre-tokenized: merged by rank, after looking
    /// the whole piece up in the vocabulary when `whole` (tiktoken's
    /// `encode_single_piece`; without it, its `byte_pair_encode`).
    pub fn encode_single_piece(&self, piece: &[u8], whole: bool) -> Result<Vec<u32>> {
        if let Some(id) = whole.then(|| self.bpe().id_of(piece)).flatten() {
            return Ok(vec![id]);
        }
        let mut out = Vec::new();
        merge_piece(self.bpe(), piece, NONE, &mut Scratch::default(), &mut out)?;
        Ok(out)
    }

    pub fn bpe(&self) -> &Bpe {
        &self.engine.bpe
    }

    pub fn pretokenizer(&self) -> &Pretokenizer {
        &self.engine.pretok
    }

    /// The merges list as ids `(left, right)`, in rank order (recovered from the
    /// ranks of a tiktoken vocabulary).
    pub fn merges(&self) -> Result<Vec<(u32, u32)>> {
        recover_merges(&self.engine.bpe)
    }

    /// The sha256 (hex) of what this encoder encodes with: its pattern, special tokens
    /// and their ids, every token's bytes by id and, where they are not ranks, its
    /// merges. Two encoders with one fingerprint give the same ids; a dataset records
    /// it to tell whether it may go on with a tokenizer (5 ms for o200k_base, where the
    /// same hash in Python took ~40 ms for GPT-2's 50K tokens).
    pub fn fingerprint(&self) -> Result<String> {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        let mut field = |bytes: &[u8]| {
            h.update((bytes.len() as u64).to_le_bytes());
            h.update(bytes);
        };
        field(self.pretokenizer().pattern().as_bytes());
        if let Some(front) = &self.front {
            field(front.description().as_bytes());
        }
        let bpe = self.bpe();
        field(&[u8::from(bpe.is_ranks())]);
        if let Some(model) = bpe.chars() {
            field(model.describe().as_bytes());
        }
        let mut specials: Vec<(&String, &u32)> = self
            .specials
            .matcher
            .tokens()
            .iter()
            .zip(&self.specials.ids)
            .collect();
        specials.sort_unstable();
        for (name, id) in specials {
            field(name.as_bytes());
            field(&id.to_le_bytes());
        }
        for (id, bytes) in bpe.tokens() {
            field(&id.to_le_bytes());
            field(bytes);
        }
        // Ranks are the tokens' ids; recovering their merges would take ~0.2 s for
        // o200k_base. So a tokenizer saved as vocab.json + merges.txt has another
        // fingerprint than its ranks, and a dataset refuses to switch between them.
        if !bpe.is_ranks() {
            for (l, r) in self.merges()? {
                field(&l.to_le_bytes());
                field(&r.to_le_bytes());
            }
        }
        Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
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
    pub(crate) fn lease(&self) -> Result<Lease<'_>> {
        self.workspaces.lease()
    }

    /// The encoder's workspaces, for drivers that share a cache between threads.
    pub(crate) fn workspaces(&self) -> &Workspaces {
        &self.workspaces
    }

    /// Appends the ids of `text`, recognising the special tokens in `allowed`.
    pub(crate) fn encode_into(
        &self,
        text: &str,
        allowed: &Specials,
        ws: &mut Workspace,
        out: &mut Vec<u32>,
    ) -> Result<()> {
        match &self.front {
            Some(front) => front.encode_into(&self.engine, text, allowed, ws, out),
            None => self.engine.encode_into(text, allowed, ws, out),
        }
    }

    /// The ids of `text`, recognising the special tokens in `allowed`.
    pub fn encode(&self, text: &str, allowed: &Specials) -> Result<Vec<u32>> {
        let mut ws = self.lease()?;
        ws.short.reserve_lines(short_lines_for(text.len()));
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

    /// The bytes id `id` stands for (a SentencePiece-style token's as it reads inside a
    /// decoded text: `▁` a space, `<0xNN>` its byte), or `None` for an id the vocabulary
    /// lacks.
    pub fn token_bytes(&self, id: u32) -> Option<std::borrow::Cow<'_, [u8]>> {
        let bytes = self.engine.bpe.token(id)?;
        let front = self.front.as_ref();
        Some(
            match front.and_then(|f| f.token_bytes(&String::from_utf8_lossy(bytes))) {
                Some(decoded) => std::borrow::Cow::Owned(decoded),
                None => std::borrow::Cow::Borrowed(bytes),
            },
        )
    }

    /// The ids of `text` (as [`Encoder::encode`] gives them) and each one's `(start,
    /// end)` in characters (code points) of `text`: the offsets `tokenizers` gives for
    /// the same `tokenizer.json`, `trim` being its `ByteLevel` post-processor's
    /// `trim_offsets`. Without a `tokenizer.json`, the same rule: a token spans the
    /// characters its bytes touch, a special token its text.
    pub fn encode_with_offsets(
        &self,
        text: &str,
        allowed: &Specials,
        trim: Option<Trim>,
    ) -> Result<(Vec<u32>, Vec<Span>)> {
        let mut ws = self.lease()?;
        ws.short.reserve_lines(short_lines_for(text.len()));
        ws.short.populate();
        self.encode_spans(text, allowed, trim, &mut ws, output_buffer(text.len())?)
    }

    /// [`Encoder::encode_with_offsets`] into `out`, a fresh buffer, with `ws`.
    pub(crate) fn encode_spans(
        &self,
        text: &str,
        allowed: &Specials,
        how: Option<Trim>,
        ws: &mut Workspace,
        mut out: Vec<u32>,
    ) -> Result<(Vec<u32>, Vec<Span>)> {
        // No room is taken ahead: each run of ids reserves its spans, so a text of one
        // run gets one allocation of its size (ahead, at one per two bytes as the ids
        // get, the allocator's time was ~10% of a document's offsets).
        let mut spans = Spans::default();
        ws.prefault = Prefault::new(&out);
        let mut chars = Chars::new(text);
        let encoded = match &self.front {
            Some(front) => {
                let engine = &self.engine;
                front.encode_spans(engine, text, allowed, ws, &mut out, &mut spans, &mut chars)
            }
            None => {
                let spans = &mut spans.spans;
                (self.engine).encode_spans(text, allowed, ws, &mut out, spans, &mut chars)
            }
        };
        ws.prefault = Prefault::default();
        encoded?;
        if let Some(how) = how {
            trim(self.bpe(), &self.engine.lens, &out, &mut spans, how);
        }
        Ok((out, spans.spans))
    }

    /// Times pre-tokenizing and merging `text` apart, for benchmarks:
    /// `(pre-tokenize seconds, merge seconds, token count)` in thread CPU time.
    pub fn profile(&self, text: &str) -> Result<(f64, f64, usize)> {
        self.engine.profile(text)
    }

    /// The bytes of `ids`, joined. An id the vocabulary does not hold is an error naming it.
    /// A SentencePiece-style tokenizer's are the UTF-8 of its decoders' text.
    pub fn decode_bytes(&self, ids: &[u32]) -> Result<Vec<u8>> {
        let bpe = &self.engine.bpe;
        let text = |id: u32| {
            let bytes = bpe.token(id).ok_or(Error::UnknownTokenId { id })?;
            Ok(String::from_utf8_lossy(bytes).into_owned())
        };
        if let Some(decoded) = self.front.as_ref().and_then(|f| f.decode_text(ids, text)) {
            return decoded.map(String::into_bytes);
        }
        let mut out = Vec::with_capacity(ids.len() * 4);
        for &id in ids {
            let bytes = self
                .engine
                .bpe
                .token(id)
                .ok_or(Error::UnknownTokenId { id })?;
            out.extend_from_slice(bytes);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::finishes_within;
    use crate::testutil::tiny_encoder as encoder;

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
    fn a_one_byte_special_token_with_its_own_id_keeps_it() {
        // CS336 training with special_tokens=["|"]: byte token 124 and special token
        // 256 hold the same bytes. An allowed "|" is the special id, ordinary text the
        // byte's; both decode to "|".
        let mut vocab: Vec<(u32, Vec<u8>)> = (0..=255u8).map(|b| (u32::from(b), vec![b])).collect();
        vocab.push((256, b"|".to_vec()));
        vocab.push((257, b"ab".to_vec()));
        let merges = vec![(b"a".to_vec(), b"b".to_vec())];
        let e = Encoder::from_merges(vocab, &merges, vec!["|".into()], "gpt2").unwrap();
        let all = e.specials().clone();
        assert_eq!(all.ids, vec![256]);
        assert_eq!(e.encode("ab|ab", &all).unwrap(), vec![257, 256, 257]);
        let none = Specials::default();
        assert_eq!(e.encode("ab|ab", &none).unwrap(), vec![257, 124, 257]);
        assert_eq!(e.decode_bytes(&[256, 124]).unwrap(), b"||");
    }

    #[test]
    fn special_tokens_may_share_an_id_which_decodes_to_the_first() {
        let ranks: Vec<(Vec<u8>, u32)> = (0..=255u8).map(|b| (vec![b], u32::from(b))).collect();
        let specials = vec![("<|a|>".to_string(), 300), ("<|b|>".to_string(), 300)];
        let e = Encoder::from_ranks(ranks, specials, "gpt2").unwrap();
        let all = e.specials().clone();
        assert_eq!(e.encode("<|b|>x<|a|>", &all).unwrap(), vec![300, 120, 300]);
        assert_eq!(e.bpe().token(300), Some(&b"<|a|>"[..]));
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
    fn offsets_span_the_characters_each_token_touches() {
        // "é" is two byte tokens, both spanning it; special tokens span their text.
        let e = encoder(&["<|a|>", "<|a|><|a|>"]);
        let all = e.specials().clone();
        let text = "a é the<|a|><|a|> th<|a|>";
        let (ids, spans) = e.encode_with_offsets(text, &all, None).unwrap();
        assert_eq!(ids, e.encode(text, &all).unwrap());
        assert_eq!(ids, [97, 32, 195, 169, 258, 260, 257, 259]);
        let want = [
            [0, 1],
            [1, 2],
            [2, 3],
            [2, 3],
            [3, 7],
            [7, 17],
            [17, 20],
            [20, 25],
        ];
        assert_eq!(spans, want);
        assert_eq!(
            e.encode_with_offsets("", &all, None).unwrap(),
            (vec![], vec![])
        );
    }

    #[test]
    fn offsets_of_special_tokens_that_share_an_id_are_their_own_texts() {
        let ranks: Vec<(Vec<u8>, u32)> = (0..=255u8).map(|b| (vec![b], u32::from(b))).collect();
        let specials = vec![("<|a|>".to_string(), 300), ("<|bb|>".to_string(), 300)];
        let e = Encoder::from_ranks(ranks, specials, "gpt2").unwrap();
        let all = e.specials().clone();
        let (ids, spans) = e.encode_with_offsets("<|bb|>x<|a|>", &all, None).unwrap();
        assert_eq!(
            (ids, spans),
            (vec![300, 120, 300], vec![[0, 6], [6, 7], [7, 12]])
        );
    }

    #[test]
    fn encode_piece_handles_spilled_ids() {
        // Regression: a cached piece of more than three ids (spilled) made the
        // unbatched path slice past the slot's inline ids and panic.
        let e = encoder(&[]);
        let mut ws = Workspace::new().unwrap();
        for _ in 0..2 {
            let mut out = Vec::new();
            e.engine.encode_piece(b"abcdef", &mut ws, &mut out);
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
        let batch = crate::encode::encode_batch(&e, &[&text, &text], &all, 2).unwrap();
        assert!(batch.iter().all(|ids| *ids == plain));
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
}
