//! [`encode_texts_flat`]: a batch's ids in one vector, copied into place by the calling
//! thread as the texts are done, in order, while the other threads go on encoding.
//!
//! Why: gathered after the whole batch (`encode_texts`, then one copy of every id),
//! the copy and the faults of the new vector were a serial tail. On 2 threads the flat
//! ids of en-small (o200k) took as long as the batch of Python lists, which makes its
//! lists this way.

use super::in_order::encode_texts_in_order;
use crate::encode::encoder::Encoder;
use crate::encode::text::Text;
use crate::error::{Error, Result};
use crate::specials::Specials;

/// Every text's ids in one vector, each text's followed by `eos` where given, and the
/// offset where each text's ids start, ending with the total.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct FlatIds {
    pub(crate) ids: Vec<u32>,
    pub(crate) offsets: Vec<u64>,
}

/// How [`encode_texts_flat`] ended: its ids, or the first text (in order) with code
/// points that have no UTF-8, which the caller converts its own way.
#[derive(Debug, PartialEq)]
pub(crate) enum Flat {
    Done(FlatIds),
    NoUtf8(usize),
}

/// The ids of `texts` as [`encode_texts`](super::encode_texts) gives them, one text
/// after another in one vector, on `num_threads` threads (0: all cores) of which the
/// calling thread is one. The error is that of the first text in order that has one.
pub(crate) fn encode_texts_flat(
    encoder: &Encoder,
    texts: &[Text<'_>],
    allowed: &Specials,
    disallowed: Option<&Specials>,
    num_threads: usize,
    eos: Option<u32>,
) -> Result<Flat> {
    let mut flat = FlatIds::default();
    // Room for English's ~0.3 ids a byte; more is reserved as the ids come.
    let guess = texts.iter().map(Text::len).sum::<usize>() / 3 + texts.len() + 1;
    reserve(&mut flat.ids, guess, "token ids")?;
    reserve(&mut flat.offsets, texts.len() + 1, "offsets")?;
    let taken = encode_texts_in_order(encoder, texts, allowed, disallowed, num_threads, |ready| {
        for (i, outcome) in ready {
            // A text without UTF-8 stops the batch: the caller converts it its own way.
            let ids = outcome?.ok_or(Stop::NoUtf8(i))?;
            flat.offsets.push(flat.ids.len() as u64);
            reserve(&mut flat.ids, ids.len() + 1, "token ids")?;
            flat.ids.extend_from_slice(&ids);
            flat.ids.extend(eos);
        }
        Ok(())
    });
    match taken {
        Ok(()) => {}
        Err(Stop::NoUtf8(i)) => return Ok(Flat::NoUtf8(i)),
        Err(Stop::Failed(e)) => return Err(e),
    }
    flat.offsets.push(flat.ids.len() as u64);
    // The array keeps the vector's allocation: none of it unused.
    flat.ids.shrink_to_fit();
    Ok(Flat::Done(flat))
}

/// Why the batch stopped early: a text's error, or the first text without UTF-8.
enum Stop {
    Failed(Error),
    NoUtf8(usize),
}

impl From<Error> for Stop {
    fn from(e: Error) -> Self {
        Stop::Failed(e)
    }
}

/// Room for `more` items, or an out-of-memory error naming them (`what`).
fn reserve<T>(v: &mut Vec<T>, more: usize, what: &'static str) -> Result<()> {
    v.try_reserve(more)
        .map_err(|_| Error::out_of_memory::<T>(what, v.len() + more))
}

#[cfg(test)]
mod tests {
    use super::super::encode_texts;
    use super::*;
    use crate::testutil::{mixed_docs, pattern_encoder};

    #[test]
    fn flat_ids_are_the_texts_ids_one_after_another() {
        let e = pattern_encoder("o200k");
        let all = e.specials().clone();
        let docs = mixed_docs();
        let texts: Vec<Text<'_>> = docs.iter().map(|d| Text::Utf8(d)).collect();
        let each = encode_texts(&e, &texts, &all, None, 1).unwrap();
        for eos in [None, Some(7)] {
            let mut want = FlatIds::default();
            for ids in &each {
                want.offsets.push(want.ids.len() as u64);
                want.ids.extend(ids.as_ref().unwrap());
                want.ids.extend(eos);
            }
            want.offsets.push(want.ids.len() as u64);
            for threads in [1, 2, 3, 8] {
                let got = encode_texts_flat(&e, &texts, &all, None, threads, eos).unwrap();
                assert_eq!(got, Flat::Done(want.clone()), "{threads}");
            }
        }
        let none = encode_texts_flat(&e, &[], &all, None, 2, Some(1)).unwrap();
        assert_eq!(
            none,
            Flat::Done(FlatIds {
                ids: vec![],
                offsets: vec![0]
            })
        );
    }

    #[test]
    fn the_first_error_or_text_without_utf8_in_order_ends_it() {
        let e = pattern_encoder("o200k");
        let all = e.specials().clone();
        let surrogate = [0x61u16, 0xD800, 0x62];
        let docs: Vec<String> = (0..120).map(|i| "the cat sat ".repeat(i + 1)).collect();
        let mut texts: Vec<Text<'_>> = docs.iter().map(|d| Text::Utf8(d)).collect();
        texts[70] = Text::Wide(crate::encode::Wide::Ucs2(&surrogate));
        texts[90] = Text::Wide(crate::encode::Wide::Ucs2(&surrogate));
        for threads in [1, 2, 4] {
            let got = encode_texts_flat(&e, &texts, &all, None, threads, None).unwrap();
            assert_eq!(got, Flat::NoUtf8(70));
        }
        // A text without UTF-8 before a text with an error: the first in order ends it.
        let bad = "x<|eot|>".to_string();
        texts[100] = Text::Utf8(&bad);
        for threads in [1, 2, 4] {
            let got =
                encode_texts_flat(&e, &texts, &Specials::default(), Some(&all), threads, None);
            assert_eq!(got.unwrap(), Flat::NoUtf8(70));
        }
        texts[40] = Text::Utf8(&bad);
        for threads in [1, 2, 4] {
            let err =
                encode_texts_flat(&e, &texts, &Specials::default(), Some(&all), threads, None)
                    .unwrap_err();
            assert!(
                matches!(&err, Error::DisallowedSpecial { token } if token == "<|eot|>"),
                "{err}"
            );
        }
    }
}
