//! The first parts of a piece in a vocabulary of characters (SentencePiece-style BPE
//! in a `tokenizer.json`: `byte_fallback`, `unk_token`, `fuse_unk`), where merging
//! starts from one part per character, not per byte.
//!
//! A character is its own token when the vocabulary holds it; else, with byte
//! fallback, the tokens `<0xNN>` of its UTF-8 bytes (when all of them are in the
//! vocabulary); else the unknown token, one per run of such characters when
//! `fuse_unk`; else nothing. This is `tokenizers`' `BPE::merge_word` (0.22), quirk
//! included: an unknown token waiting to be fused is put down when the next character
//! with a token of its own comes, so byte-fallback tokens between go before it.

use rustc_hash::FxHashMap;

use crate::error::{Error, Result};
use crate::ids::NONE;

/// What a vocabulary of characters does with each character of a piece.
#[derive(Debug, Clone)]
pub struct CharModel {
    /// Id of each ASCII character's token (`NONE`: not in the vocabulary).
    ascii: [u32; 128],
    /// Id of every other character that is a token.
    others: FxHashMap<char, u32>,
    /// Id of `<0xNN>` for byte `NN` (`NONE`: not in the vocabulary, or no byte
    /// fallback).
    byte_tokens: [u32; 256],
    unk: Option<u32>,
    fuse_unk: bool,
}

/// How a `tokenizer.json` BPE model of characters treats characters it lacks.
#[derive(Clone, Debug, Default)]
pub struct CharSpec {
    pub byte_fallback: bool,
    /// The id of `unk_token`; `NONE` where the vocabulary lacks it, which is an error
    /// only when a character needs it, as in `tokenizers`.
    pub unk: Option<u32>,
    pub fuse_unk: bool,
}

/// The text of the byte-fallback token of `b`, as `tokenizers` spells it.
pub fn byte_token_text(b: u8) -> String {
    format!("<0x{b:02X}>")
}

impl CharModel {
    /// From the vocabulary's tokens (`id`, UTF-8 text) and `spec`; `id_of` finds the
    /// id of a token's text.
    pub fn new<'a>(
        tokens: impl Iterator<Item = (u32, &'a [u8])>,
        id_of: impl Fn(&[u8]) -> Option<u32>,
        spec: &CharSpec,
    ) -> Result<Self> {
        let mut ascii = [NONE; 128];
        let mut others = FxHashMap::default();
        for (_, bytes) in tokens {
            let Ok(text) = std::str::from_utf8(bytes) else {
                continue;
            };
            let mut chars = text.chars();
            if let (Some(c), None) = (chars.next(), chars.next()) {
                // The lowest id of the text (`id_of`), as the vocabulary maps it.
                if let Some(id) = id_of(bytes) {
                    match u8::try_from(c).ok().filter(u8::is_ascii) {
                        Some(b) => ascii[usize::from(b)] = id,
                        None => {
                            others.insert(c, id);
                        }
                    }
                }
            }
        }
        let mut byte_tokens = [NONE; 256];
        if spec.byte_fallback {
            for (b, slot) in byte_tokens.iter_mut().enumerate() {
                *slot = id_of(byte_token_text(b as u8).as_bytes()).unwrap_or(NONE);
            }
        }
        Ok(Self {
            ascii,
            others,
            byte_tokens,
            unk: spec.unk,
            fuse_unk: spec.fuse_unk,
        })
    }

    /// The id of character `c`'s own token.
    #[inline]
    pub fn char_id(&self, c: char) -> Option<u32> {
        let id = match u8::try_from(c).ok().filter(u8::is_ascii) {
            Some(b) => self.ascii[usize::from(b)],
            None => self.others.get(&c).copied().unwrap_or(NONE),
        };
        (id != NONE).then_some(id)
    }

    /// The ids of the byte-fallback tokens, for the merges that use them.
    pub fn byte_token_ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.byte_tokens.iter().copied().filter(|&i| i != NONE)
    }

    pub fn unk(&self) -> Option<u32> {
        self.unk
    }

    /// Appends the first parts of `piece` (UTF-8 text) to `parts`.
    pub fn first_parts(&self, piece: &[u8], parts: &mut Vec<u32>) -> Result<()> {
        self.for_each_part(piece, |id, _| parts.push(id))
    }

    /// Calls `emit(id, len)` for each first part of `piece` (UTF-8 text), in order,
    /// `len` being the bytes of the piece that `tokenizers`' `Word` gives the part
    /// (its offsets are these lengths added up): a character's, 1 for a byte token,
    /// the run of characters an unknown token stands for.
    pub fn for_each_part(&self, piece: &[u8], mut emit: impl FnMut(u32, usize)) -> Result<()> {
        let text = std::str::from_utf8(piece)
            .map_err(|e| Error::invalid(format!("a piece is not UTF-8 text: {e}")))?;
        let mut waiting: Option<(u32, usize)> = None;
        for c in text.chars() {
            let n = c.len_utf8();
            if let Some(id) = self.char_id(c) {
                if let Some((unk, len)) = waiting.take() {
                    emit(unk, len);
                }
                emit(id, n);
                continue;
            }
            let mut buf = [0u8; 4];
            let bytes = c.encode_utf8(&mut buf).as_bytes();
            if bytes
                .iter()
                .all(|&b| self.byte_tokens[usize::from(b)] != NONE)
            {
                for &b in bytes.iter() {
                    emit(self.byte_tokens[usize::from(b)], 1);
                }
                continue;
            }
            if let Some(unk) = self.unk {
                if unk == NONE {
                    return Err(Error::invalid(format!(
                        "{c:?} has no token, and the unk_token is not in the vocab"
                    )));
                }
                waiting = match waiting {
                    Some((prev, len)) if self.fuse_unk => Some((prev, len + n)),
                    Some((prev, len)) => {
                        emit(prev, len);
                        Some((unk, n))
                    }
                    None => Some((unk, n)),
                };
            }
        }
        if let Some((unk, len)) = waiting {
            emit(unk, len);
        }
        Ok(())
    }

    /// Whether a character may have no part at all (no token, no byte tokens, no
    /// `unk_token`), so that parts' lengths add up to less than their piece.
    pub fn drops_chars(&self) -> bool {
        self.unk.is_none()
    }

    /// A description for the encoder's fingerprint.
    pub fn describe(&self) -> String {
        format!(
            "chars: bytes {:?}, unk {:?}, fuse {}",
            self.byte_tokens.iter().filter(|&&i| i != NONE).count(),
            self.unk,
            self.fuse_unk
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(tokens: &[&str], spec: &CharSpec) -> CharModel {
        let list: Vec<(u32, &[u8])> = tokens
            .iter()
            .enumerate()
            .map(|(i, t)| (i as u32, t.as_bytes()))
            .collect();
        let id_of = |b: &[u8]| list.iter().find(|(_, t)| *t == b).map(|(i, _)| *i);
        CharModel::new(list.iter().copied(), id_of, spec).unwrap()
    }

    fn parts(m: &CharModel, text: &str) -> Vec<u32> {
        let mut out = Vec::new();
        m.first_parts(text.as_bytes(), &mut out).unwrap();
        out
    }

    #[test]
    fn chars_bytes_and_unknowns_as_tokenizers_starts_a_word() {
        let mut tokens = vec!["<unk>", "a", "\u{e9}", "\u{2581}"];
        let bytes: Vec<String> = (0..=255u8).map(byte_token_text).collect();
        tokens.extend(bytes.iter().map(String::as_str));
        let fallback = CharSpec {
            byte_fallback: true,
            unk: Some(0),
            fuse_unk: true,
        };
        let m = model(&tokens, &fallback);
        // "中" is E4 B8 AD: <0xE4> is id 4 + 0xE4.
        assert_eq!(
            parts(&m, "a\u{e9}中"),
            vec![1, 2, 4 + 0xE4, 4 + 0xB8, 4 + 0xAD]
        );
        let no_fallback = CharSpec {
            byte_fallback: false,
            unk: Some(0),
            fuse_unk: true,
        };
        let m = model(&tokens, &no_fallback);
        assert_eq!(parts(&m, "中中a中"), vec![0, 1, 0]);
        let unfused = CharSpec {
            fuse_unk: false,
            ..no_fallback
        };
        let m = model(&tokens, &unfused);
        assert_eq!(parts(&m, "中中a"), vec![0, 0, 1]);
        let nothing = CharSpec::default();
        let m = model(&tokens, &nothing);
        assert_eq!(parts(&m, "中a中"), vec![1]);
    }

    #[test]
    fn a_waiting_unknown_goes_after_byte_tokens() {
        // Only the bytes of "é" (C3 A9) have tokens: "中" is unknown, "é" falls back.
        let mut tokens = vec!["<unk>", "a", "<0xC3>", "<0xA9>"];
        tokens.push("b");
        let spec = CharSpec {
            byte_fallback: true,
            unk: Some(0),
            fuse_unk: true,
        };
        let m = model(&tokens, &spec);
        assert_eq!(parts(&m, "中\u{e9}a"), vec![2, 3, 0, 1]);
        assert_eq!(parts(&m, "中\u{e9}"), vec![2, 3, 0]);
        // Lengths follow the parts' order: the byte tokens of "é" first, then the
        // unknown "中中" (6 bytes) they were waiting behind.
        let mut lens = Vec::new();
        m.for_each_part("中中\u{e9}a".as_bytes(), |id, n| lens.push((id, n)))
            .unwrap();
        assert_eq!(lens, vec![(2, 1), (3, 1), (0, 6), (1, 1)]);
    }
}
