//! The decoders of SentencePiece-style `tokenizer.json` files, as `tokenizers` (0.22)
//! runs them on the tokens' texts: each step maps the list of token texts to a new
//! list, and the last list is joined.
//!
//! - `Replace`: a string in each token replaced (`▁` -> space).
//! - `ByteFallback`: each run of `<0xNN>` tokens becomes the text of its bytes, or,
//!   where they are not UTF-8, one U+FFFD per token of the run (not per invalid
//!   sequence, as a lossy UTF-8 decode gives).
//! - `Fuse`: all tokens joined into one.
//! - `Strip`: up to `start` leading and `stop` trailing `content` characters cut off
//!   each token.
//! - `Metaspace`: `▁` -> space in each token; in the first token it is dropped
//!   instead, unless the prepend scheme is `"never"`.

use crate::error::{Error, Result};

/// One decoder step, as the Python side describes it.
#[derive(Clone, Debug)]
pub enum DecodeStep {
    Replace {
        pattern: String,
        content: String,
    },
    ByteFallback,
    Fuse,
    Strip {
        content: char,
        start: usize,
        stop: usize,
    },
    Metaspace {
        replacement: char,
        prepend: bool,
    },
}

/// A `Sequence` of decoder steps.
#[derive(Clone, Debug, Default)]
pub struct TextDecoder {
    steps: Vec<DecodeStep>,
}

/// The byte a `<0xNN>` token stands for, read as `tokenizers` reads it: six bytes,
/// `<0x`, two characters `u8::from_str_radix` takes, `>`.
pub(crate) fn byte_of(token: &str) -> Option<u8> {
    if token.len() != 6 || !token.starts_with("<0x") || !token.ends_with('>') {
        return None;
    }
    u8::from_str_radix(token.get(3..5)?, 16).ok()
}

impl TextDecoder {
    pub(crate) fn new(steps: Vec<DecodeStep>) -> Result<Self> {
        for step in &steps {
            if let DecodeStep::Replace { pattern, .. } = step {
                if pattern.is_empty() {
                    return Err(Error::invalid("a Replace decoder's pattern is empty"));
                }
            }
        }
        Ok(Self { steps })
    }

    /// The text of `tokens` (the token texts of the ids, in order).
    pub(crate) fn decode(&self, mut tokens: Vec<String>) -> String {
        for step in &self.steps {
            tokens = match step {
                DecodeStep::Replace { pattern, content } => tokens
                    .into_iter()
                    .map(|t| t.replace(pattern.as_str(), content))
                    .collect(),
                DecodeStep::ByteFallback => byte_fallback(tokens),
                DecodeStep::Fuse => vec![tokens.concat()],
                DecodeStep::Strip {
                    content,
                    start,
                    stop,
                } => tokens
                    .into_iter()
                    .map(|t| strip(&t, *content, *start, *stop))
                    .collect(),
                DecodeStep::Metaspace {
                    replacement,
                    prepend,
                } => tokens
                    .into_iter()
                    .enumerate()
                    .map(|(i, t)| {
                        t.chars()
                            .filter_map(|c| match c == *replacement {
                                true if i == 0 && *prepend => None,
                                true => Some(' '),
                                false => Some(c),
                            })
                            .collect()
                    })
                    .collect(),
            };
        }
        tokens.concat()
    }

    /// The bytes one token stands for on its own, inside a text: the per-token steps
    /// (`Replace`, `Metaspace` as for a token after the first), and a `<0xNN>` token's
    /// byte where `ByteFallback` is a step. `Strip` and `Fuse` act on whole texts.
    pub(crate) fn token_bytes(&self, token: &str) -> Vec<u8> {
        let mut text = token.to_owned();
        for step in &self.steps {
            match step {
                DecodeStep::Replace { pattern, content } => {
                    text = text.replace(pattern.as_str(), content)
                }
                DecodeStep::ByteFallback => {
                    if let Some(b) = byte_of(&text) {
                        return vec![b];
                    }
                }
                DecodeStep::Metaspace { replacement, .. } => text = text.replace(*replacement, " "),
                DecodeStep::Fuse | DecodeStep::Strip { .. } => {}
            }
        }
        text.into_bytes()
    }
}

fn byte_fallback(tokens: Vec<String>) -> Vec<String> {
    let mut out = Vec::with_capacity(tokens.len());
    let mut run: Vec<u8> = Vec::new();
    let flush = |run: &mut Vec<u8>, out: &mut Vec<String>| {
        if run.is_empty() {
            return;
        }
        match String::from_utf8(std::mem::take(run)) {
            Ok(text) => out.push(text),
            Err(e) => out.extend((0..e.as_bytes().len()).map(|_| "\u{fffd}".to_owned())),
        }
    };
    for t in tokens {
        match byte_of(&t) {
            Some(b) => run.push(b),
            None => {
                flush(&mut run, &mut out);
                out.push(t);
            }
        }
    }
    flush(&mut run, &mut out);
    out
}

/// `tokenizers`' `Strip` of one token: up to `start` leading and `stop` trailing
/// `content` characters cut (what it would panic on, a cut past the other, is empty).
fn strip(token: &str, content: char, start: usize, stop: usize) -> String {
    let chars: Vec<char> = token.chars().collect();
    let start_cut = chars
        .iter()
        .take(start)
        .take_while(|&&c| c == content)
        .count();
    let stop_cut = chars.len()
        - chars
            .iter()
            .rev()
            .take(stop)
            .take_while(|&&c| c == content)
            .count();
    chars
        .get(start_cut..stop_cut.max(start_cut))
        .map_or_else(String::new, |c| c.iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn llama() -> TextDecoder {
        TextDecoder::new(vec![
            DecodeStep::Replace {
                pattern: "▁".into(),
                content: " ".into(),
            },
            DecodeStep::ByteFallback,
            DecodeStep::Fuse,
            DecodeStep::Strip {
                content: ' ',
                start: 1,
                stop: 0,
            },
        ])
        .unwrap()
    }

    fn texts(t: &[&str]) -> Vec<String> {
        t.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn llama_decodes_as_tokenizers() {
        let d = llama();
        assert_eq!(d.decode(texts(&["▁Hello", "▁wor", "ld"])), "Hello world");
        assert_eq!(
            d.decode(texts(&["<0xE4>", "<0xB8>", "<0xAD>", "▁x"])),
            "中 x"
        );
        // A run that is not UTF-8 is one U+FFFD per token, even its valid prefix.
        assert_eq!(
            d.decode(texts(&["<0xE4>", "<0xB8>", "<0xAD>", "<0xFF>", "a"])),
            "\u{fffd}\u{fffd}\u{fffd}\u{fffd}a"
        );
        assert_eq!(d.decode(texts(&["▁▁a"])), " a");
        assert_eq!(d.token_bytes("<0xE4>"), [0xE4]);
        assert_eq!(d.token_bytes("▁a"), b" a");
        assert_eq!(byte_of("<0xe4>"), Some(0xE4));
        assert_eq!(byte_of("<0xZZ>"), None);
    }

    #[test]
    fn metaspace_and_strip_edges() {
        let m = TextDecoder::new(vec![DecodeStep::Metaspace {
            replacement: '▁',
            prepend: true,
        }])
        .unwrap();
        assert_eq!(m.decode(texts(&["▁a▁b", "▁c"])), "ab c");
        assert_eq!(strip("  a  ", ' ', 1, 5), " a");
        assert_eq!(strip(" ", ' ', 1, 1), "");
    }
}
