//! The vocabulary and the pair table that drives merging.
//!
//! Merging works on token ids: two adjacent parts `(left, right)` merge into
//! `new_id` when the pair table holds them, lowest `rank` first. The same engine
//! serves both kinds of vocabulary:
//!
//! - CS336 / GPT-2 `vocab` + `merges`: merge `i` `(a, b)` is the pair
//!   `(id(a), id(b)) -> (i, id(a + b))`.
//! - tiktoken ranks (`token bytes -> rank`, rank = id): every split of every token
//!   `t` into two tokens `t[..k]`, `t[k..]` is the pair `-> (rank(t), id(t))`. Merging
//!   by pairs then gives exactly tiktoken's byte-based result, which merges any two
//!   adjacent parts whose concatenation is a token, lowest rank and leftmost first.
//!   Such vocabularies also look a whole piece up first, as tiktoken does. Their
//!   pair table is built in `ranks`.

use std::hash::BuildHasher;

use hashbrown::hash_table::Entry;
use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;

use super::chars::{CharModel, CharSpec};
use super::cuts::Cuts;
use super::longtokens::LongTokens;
use super::pairs::PairTable;
use super::shortids::ShortIds;
use crate::count::FxMap;
use crate::error::{Error, Result};
use crate::ids::MAX_IDS;
use crate::piecekey::{self, key_of, KEY_LEN};

use crate::ids::NONE;

mod ranks;

/// A byte-level BPE vocabulary ready to merge.
#[derive(Debug)]
pub struct Bpe {
    /// Bytes of each id (special tokens included); `None` for ids the vocab skips.
    tokens: Vec<Option<Box<[u8]>>>,
    /// Ordinary (non-special) tokens by bytes: their ids, hashed by `bytes_hash` of
    /// their bytes in `tokens` (a map keyed by copies of the bytes cost a tenth of
    /// loading o200k in allocations).
    ids: HashTable<u32>,
    /// Id of each single byte.
    byte_ids: [u32; 256],
    /// `(left, right)` -> rank, and rank -> merged id.
    pairs: PairTable,
    /// Look a whole piece up before merging it (tiktoken's rule).
    whole_piece_lookup: bool,
    /// The ordinary tokens of 1 to 15 bytes by `piecekey` key (hashed with
    /// `piecekey::hash`), filled only with `whole_piece_lookup`: the miss path has the
    /// piece's key and hash already, and a hit reads one bucket, where `ids` hashed
    /// the bytes again and compared them with a boxed key elsewhere in memory (a
    /// fifth of a cold o200k encode's miss path).
    short_ids: ShortIds,
    /// The merges list this table came from, as ids `(left, right)` in rank order
    /// (only for vocab + merges; ranks recover it on demand).
    merges: Option<Vec<(u32, u32)>>,
    /// A vocabulary of characters (SentencePiece-style): merging starts from one part
    /// per character, and tokens are the UTF-8 of their text.
    chars: Option<Box<CharModel>>,
    /// Where pieces may be cut ([`Bpe::cuts`]), made when first asked for: a few ms
    /// for o200k, which only text that is not ASCII needs.
    cuts: std::sync::OnceLock<Cuts>,
    /// The tokens of more than `KEY_LEN` bytes, filled with `short_ids`
    /// ([`Bpe::id_of_long`]).
    long_tokens: LongTokens,
}

/// The hash of a token's bytes in [`Bpe`]'s `ids`.
fn bytes_hash(bytes: &[u8]) -> u64 {
    FxBuildHasher.hash_one(bytes)
}

pub(super) fn show(bytes: &[u8]) -> String {
    format!("{:?}", String::from_utf8_lossy(bytes))
}

impl Bpe {
    /// From a CS336 vocab (`id -> bytes`) and merges (`(a, b)` in creation order).
    /// Every token of the vocab, special tokens included, is a token its bytes may
    /// become (the lowest id when bytes repeat), as in the reference encoder: a
    /// special token that is also an ordinary token ("hello", or " ") stays one.
    pub fn from_merges(vocab: Vec<(u32, Vec<u8>)>, merges: &[(Vec<u8>, Vec<u8>)]) -> Result<Self> {
        let bpe = Self::from_vocab(vocab, false, true)?;
        bpe.with_merges(merges)
    }

    /// A vocabulary of characters (a SentencePiece-style `tokenizer.json`): tokens are
    /// the UTF-8 of their text, `<0xNN>` byte-fallback tokens included, and a piece
    /// starts as one part per character ([`CharModel`]); merges as in
    /// [`Bpe::from_merges`]. No byte needs a token of its own.
    pub fn from_char_merges(
        vocab: Vec<(u32, Vec<u8>)>,
        merges: &[(Vec<u8>, Vec<u8>)],
        spec: &CharSpec,
    ) -> Result<Self> {
        let mut bpe = Self::from_vocab(vocab, false, false)?.with_merges(merges)?;
        let model = CharModel::new(bpe.tokens(), |b| bpe.id_of(b), spec)?;
        bpe.chars = Some(Box::new(model));
        Ok(bpe)
    }

    /// Where a piece of a byte-level vocabulary may be cut into parts that merge on
    /// their own ([`Cuts`]); `None` for a vocabulary of characters, whose pieces
    /// start as characters already.
    pub fn cuts(&self) -> Option<&Cuts> {
        if self.chars.is_some() {
            return None;
        }
        Some(
            self.cuts
                .get_or_init(|| Cuts::new(self.tokens().map(|(_, t)| t))),
        )
    }

    /// The characters' first parts, for a vocabulary of characters.
    #[inline]
    pub fn chars(&self) -> Option<&CharModel> {
        self.chars.as_deref()
    }

    /// The characters `c` that some token holds just before `r`, or `None` where no
    /// cut before `r` is safe at all. Merges never join the text on the two sides of
    /// an `r` whose previous character is not one of them (a token spanning it would
    /// hold both characters), so a text cut there merges as the whole does: only for a
    /// vocabulary of characters where `r` is a token and no merge uses a byte-fallback
    /// or unknown token (whose text is not the text it stands for).
    pub fn joins_before(&self, r: char) -> Option<Vec<char>> {
        let model = self.chars()?;
        model.char_id(r)?;
        let odd: std::collections::HashSet<u32> =
            model.byte_token_ids().chain(model.unk()).collect();
        if let Some(merges) = &self.merges {
            if merges
                .iter()
                .any(|(l, r)| odd.contains(l) || odd.contains(r))
            {
                return None;
            }
        }
        let mut joins = std::collections::BTreeSet::new();
        for (_, bytes) in self.tokens() {
            let Ok(text) = std::str::from_utf8(bytes) else {
                continue;
            };
            let mut prev = None;
            for c in text.chars() {
                if let (Some(p), true) = (prev, c == r) {
                    joins.insert(p);
                }
                prev = Some(c);
            }
        }
        Some(joins.into_iter().collect())
    }

    fn with_merges(mut self, merges: &[(Vec<u8>, Vec<u8>)]) -> Result<Self> {
        let bpe = &mut self;
        let mut merge_ids = Vec::with_capacity(merges.len());
        let mut merged_ids = Vec::with_capacity(merges.len());
        let mut pairs = FxMap::with_capacity_and_hasher(merges.len(), FxBuildHasher);
        for (rank, (a, b)) in merges.iter().enumerate() {
            let find = |bytes: &[u8], what: &str| {
                bpe.id_of(bytes).ok_or_else(|| {
                    Error::invalid(format!(
                        "merge #{rank} ({} {}): its {what} {} is not in the vocabulary",
                        show(a),
                        show(b),
                        show(bytes)
                    ))
                })
            };
            let left = find(a, "left part")?;
            let right = find(b, "right part")?;
            let merged = find(&[a.as_slice(), b.as_slice()].concat(), "result")?;
            let rank = u32::try_from(rank).map_err(|_| Error::invalid("too many merges"))?;
            // A repeated merge keeps its first (lowest) rank.
            pairs.entry(crate::ids::pack(left, right)).or_insert(rank);
            merge_ids.push((left, right));
            merged_ids.push(merged);
        }
        let pairs: Vec<(u32, u32, u32)> = pairs
            .into_iter()
            .map(|(k, rank)| ((k >> 32) as u32, k as u32, rank))
            .collect();
        bpe.pairs = PairTable::new(&pairs, Some(merged_ids), &bpe.byte_ids)?;
        bpe.merges = Some(merge_ids);
        Ok(self)
    }

    /// Looks a whole piece up before merging it, as tiktoken does and as HF
    /// `tokenizers` does under `ignore_merges` (Llama 3's tokenizer): a piece that is a
    /// token is that token even where its merges would not make it.
    pub fn look_up_whole_pieces(&mut self) {
        if !self.whole_piece_lookup {
            self.whole_piece_lookup = true;
            self.fill_short_ids(true);
        }
    }

    /// Fills `short_ids` with the tokens of up to `KEY_LEN` bytes; `repeats`: bytes
    /// may repeat, and only the id `ids` holds for them goes in (ranks cannot repeat,
    /// and checking cost a fresh load of o200k a lookup per token).
    fn fill_short_ids(&mut self, repeats: bool) {
        self.long_tokens = LongTokens::new(&self.tokens);
        let n_short = self.tokens().filter(|(_, t)| t.len() <= KEY_LEN).count();
        self.short_ids = ShortIds::with_capacity(n_short);
        for (id, t) in self.tokens.iter().enumerate() {
            if let Some(t) = t.as_deref().filter(|t| t.len() <= KEY_LEN) {
                if !repeats || self.id_of(t) == Some(id as u32) {
                    let key = key_of(t);
                    self.short_ids.insert(key, piecekey::hash(key), id as u32);
                }
            }
        }
    }

    /// The ordinary tokens in id order. A byte string given twice (which a vocab +
    /// merges vocabulary may hold; ranks may not) counts once, under the id `ids`
    /// keeps.
    pub(super) fn distinct_tokens(&self) -> impl Iterator<Item = (u32, &[u8])> {
        let unique = self.ids.len() == self.tokens().count();
        self.tokens()
            .filter(move |&(id, t)| unique || self.id_of(t) == Some(id))
    }

    /// `bytes`: every byte must have a token (byte-level vocabularies); else a byte
    /// without one has id `NONE`, never read.
    fn from_vocab(vocab: Vec<(u32, Vec<u8>)>, whole: bool, bytes: bool) -> Result<Self> {
        let max_id = vocab.iter().map(|(i, _)| *i).max().unwrap_or(0);
        if max_id as usize >= MAX_IDS {
            return Err(Error::invalid(format!(
                "token id {max_id} is too large: vocabularies of up to {MAX_IDS} tokens are supported"
            )));
        }
        let mut tokens: Vec<Option<Box<[u8]>>> = vec![None; max_id as usize + 1];
        for (id, bytes) in vocab {
            let slot = &mut tokens[id as usize];
            if slot.is_some() {
                return Err(Error::invalid(format!("token id {id} is given twice")));
            }
            *slot = Some(bytes.into_boxed_slice());
        }
        let mut ids: HashTable<u32> = HashTable::with_capacity(tokens.len());
        let bytes_of = |id: u32| tokens[id as usize].as_deref().unwrap_or_default();
        for (id, bytes) in tokens.iter().enumerate() {
            let id = id as u32;
            if let Some(b) = bytes {
                let eq = |&i: &u32| bytes_of(i) == &**b;
                let rehash = |&i: &u32| bytes_hash(bytes_of(i));
                // The lowest id wins when two ids hold the same bytes.
                if let Entry::Vacant(slot) = ids.entry(bytes_hash(b), eq, rehash) {
                    slot.insert(id);
                }
            }
        }
        let mut byte_ids = [NONE; 256];
        for (b, slot) in byte_ids.iter_mut().enumerate() {
            let b = [b as u8];
            let found = ids.find(bytes_hash(&b), |&i| bytes_of(i) == b);
            if !bytes {
                *slot = found.copied().unwrap_or(NONE);
                continue;
            }
            *slot = found.copied().ok_or_else(|| {
                Error::invalid(format!(
                    "the vocabulary has no token for byte 0x{:02x}; a byte-level BPE vocabulary needs all 256 bytes",
                    b[0]
                ))
            })?;
        }
        Ok(Self {
            tokens,
            ids,
            byte_ids,
            pairs: PairTable::new(&[], None, &byte_ids)?,
            whole_piece_lookup: whole,
            short_ids: ShortIds::empty(),
            merges: None,
            chars: None,
            cuts: std::sync::OnceLock::new(),
            long_tokens: LongTokens::default(),
        })
    }

    /// Adds a special token's bytes at `id` (it must be free or hold the same bytes).
    pub fn set_special(&mut self, id: u32, bytes: &[u8]) -> Result<()> {
        let idx = id as usize;
        if idx >= MAX_IDS {
            return Err(Error::invalid(format!(
                "special token {}: id {id} is too large (ids must be below {MAX_IDS})",
                show(bytes)
            )));
        }
        if idx >= self.tokens.len() {
            self.tokens.resize(idx + 1, None);
        }
        match &self.tokens[idx] {
            Some(b) if &**b != bytes => Err(Error::invalid(format!(
                "special token {} wants id {id}, which already holds {}",
                show(bytes),
                show(b)
            ))),
            _ => {
                self.tokens[idx] = Some(bytes.into());
                self.cuts = std::sync::OnceLock::new();
                Ok(())
            }
        }
    }

    /// One past the highest id (the vocabulary may have unused ids below it).
    pub fn id_limit(&self) -> usize {
        self.tokens.len()
    }

    pub fn token(&self, id: u32) -> Option<&[u8]> {
        self.tokens.get(id as usize).and_then(|t| t.as_deref())
    }

    pub fn tokens(&self) -> impl Iterator<Item = (u32, &[u8])> {
        self.tokens
            .iter()
            .enumerate()
            .filter_map(|(i, t)| t.as_deref().map(|b| (i as u32, b)))
    }

    pub fn id_of(&self, bytes: &[u8]) -> Option<u32> {
        self.ids
            .find(bytes_hash(bytes), |&i| self.token(i) == Some(bytes))
            .copied()
    }

    /// [`Bpe::id_of`] a whole piece, for pieces of more than 15 bytes: only for
    /// vocabularies with [`Bpe::whole_piece_lookup`], whose long tokens it filters
    /// first.
    #[inline]
    pub fn id_of_long(&self, piece: &[u8]) -> Option<u32> {
        match self.long_tokens.may_hold(piece) {
            true => self.id_of(piece),
            false => None,
        }
    }

    /// [`Bpe::id_of`] a whole piece of 1 to 15 bytes by its `piecekey` key and that
    /// key's `piecekey::hash`; only for vocabularies with [`Bpe::whole_piece_lookup`].
    #[inline]
    pub fn id_of_short(&self, key: u128, hash: u64) -> Option<u32> {
        self.short_ids.get(key, hash)
    }

    /// Starts loading what [`Bpe::id_of_short`] of `hash` reads first.
    #[inline]
    pub fn prefetch_short(&self, hash: u64) {
        self.short_ids.prefetch_tag(hash);
    }

    #[inline]
    pub fn byte_id(&self, b: u8) -> u32 {
        self.byte_ids[b as usize]
    }

    /// `(rank, merged id)` of merging `left` and `right`, if they merge.
    pub fn pair(&self, left: u32, right: u32) -> Option<(u32, u32)> {
        match self.pairs.rank(left, right) {
            NONE => None,
            rank => Some((rank, self.pairs.merged_id(rank))),
        }
    }

    #[inline]
    pub fn pairs(&self) -> &PairTable {
        &self.pairs
    }

    pub fn whole_piece_lookup(&self) -> bool {
        self.whole_piece_lookup
    }

    /// The merges list this table was built from, if it was built from one.
    pub(super) fn merges_given(&self) -> Option<&Vec<(u32, u32)>> {
        self.merges.as_ref()
    }

    pub fn is_ranks(&self) -> bool {
        self.merges.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn byte_ranks() -> Vec<(Vec<u8>, u32)> {
        (0..=255u8).map(|b| (vec![b], u32::from(b))).collect()
    }

    pub fn byte_vocab() -> Vec<(u32, Vec<u8>)> {
        (0..=255u8).map(|b| (u32::from(b), vec![b])).collect()
    }

    #[test]
    fn merges_build_pairs() {
        let mut vocab = byte_vocab();
        vocab.push((256, b"ab".to_vec()));
        vocab.push((257, b"abc".to_vec()));
        let merges = vec![
            (b"a".to_vec(), b"b".to_vec()),
            (b"ab".to_vec(), b"c".to_vec()),
        ];
        let bpe = Bpe::from_merges(vocab, &merges).unwrap();
        assert_eq!(bpe.pair(97, 98), Some((0, 256)));
        assert_eq!(bpe.pair(256, 99), Some((1, 257)));
        assert_eq!(bpe.pair(97, 99), None);
        assert_eq!(
            super::super::recover_merges(&bpe).unwrap(),
            vec![(97, 98), (256, 99)]
        );
    }

    #[test]
    fn missing_merge_part_is_an_error() {
        let merges = vec![(b"a".to_vec(), b"b".to_vec())];
        let e = Bpe::from_merges(byte_vocab(), &merges).unwrap_err();
        assert!(e.to_string().contains("merge #0"), "{e}");
    }

    /// `id_of_long` finds every long token, and answers as `id_of` for any piece,
    /// filtered or not: of a token's length and ends, longer than any, or short.
    #[test]
    fn long_lookup_finds_the_long_tokens_and_only_them() {
        let long: Vec<Vec<u8>> = (16..=40)
            .map(|n| (0..n).map(|i| b'a' + (i * 7 % 26) as u8).collect())
            .collect();
        let mut ranks = byte_ranks();
        ranks.push((b"ab".to_vec(), 256));
        ranks.extend(long.iter().cloned().zip(257..));
        let bpe = Bpe::from_ranks(ranks).unwrap();
        for t in &long {
            assert_eq!(bpe.id_of_long(t), bpe.id_of(t));
            assert!(bpe.id_of_long(t).is_some());
            let mut other = t.clone();
            other[t.len() / 2] ^= 1;
            assert_eq!(bpe.id_of_long(&other), None, "same length and ends");
            assert_eq!(bpe.id_of_long(&[&t[..], b"!"].concat()), None);
        }
        assert_eq!(bpe.id_of_long(&[b'a'; 41]), None, "longer than any token");
        assert_eq!(
            bpe.id_of_long(b"ab"),
            Some(256),
            "short pieces are not filtered"
        );
        assert_eq!(bpe.id_of_long(b""), bpe.id_of(b""));
    }

    #[test]
    fn short_ids_equal_ids_for_every_length() {
        let mut ranks: Vec<(Vec<u8>, u32)> = (0..=255u8).map(|b| (vec![b], u32::from(b))).collect();
        // Tokens of 2 to 20 bytes (past the 15 of a key), some ending in NUL bytes,
        // which a key must tell apart from shorter tokens.
        let mut next = 256;
        for n in 2..=20usize {
            for tail in [b'x', 0] {
                let mut token: Vec<u8> = (0..n as u8).map(|i| b'a' + i % 26).collect();
                token[n - 1] = tail;
                ranks.push((token, next));
                next += 1;
            }
        }
        let bpe = Bpe::from_ranks(ranks.clone()).unwrap();
        for (token, id) in &ranks {
            let key = key_of(token);
            if token.len() <= KEY_LEN {
                assert_eq!(
                    bpe.id_of_short(key, piecekey::hash(key)),
                    Some(*id),
                    "{token:?}"
                );
            }
            assert_eq!(bpe.id_of(token), Some(*id));
            let mut absent = token.clone();
            absent.push(0);
            let key = key_of(&absent);
            if absent.len() <= KEY_LEN && bpe.id_of(&absent).is_none() {
                assert_eq!(
                    bpe.id_of_short(key, piecekey::hash(key)),
                    None,
                    "{absent:?}"
                );
            }
        }
    }
}
