//! Many texts across threads: each thread leases a workspace, and when there are
//! several threads their workspaces share one short cache
//! ([`Workspaces::lease_shared`](crate::encode::engine::Workspaces::lease_shared)), so a
//! piece one thread has merged is a hit for the others. Runs on the process's pools
//! (`crate::pool`), never rayon's global pool.
//!
//! Three shapes: [`encode_texts`] returns every text's ids at the end;
//! [`encode_texts_in_order`] hands each text's ids to the calling thread, in order, as
//! soon as they and those before are done, while later texts are still being encoded;
//! [`encode_texts_flat`] puts them one after another in one vector that way. The second
//! is for results that only one thread may turn into their final form (Python lists,
//! made under the GIL): that work then overlaps the encoding instead of following it.

use rayon::prelude::*;

// Only the Python lists and flat arrays use them (and their tests).
#[cfg(any(feature = "python", test))]
mod flat;
#[cfg(any(feature = "python", test))]
mod in_order;

#[cfg(feature = "python")]
pub(crate) use flat::{encode_texts_flat, Flat};
#[cfg(feature = "python")]
pub(crate) use in_order::encode_texts_in_order;

use super::encoder::Encoder;
use super::engine::{Lease, Prefault};
#[cfg(any(feature = "python", test))]
use super::engine::{Span, Trim};
use super::text::{encode_wide_into, Text};
use crate::error::{Error, Result};
use crate::pool::run_in_pool;
use crate::specials::Specials;

/// One text's outcome: its ids, or `None` for code points without UTF-8 (the caller
/// converts such a text its own way), or the text's error.
pub(crate) type Encoded = Result<Option<Vec<u32>>>;

/// Encodes each text, in parallel on `num_threads` threads (0: all cores).
pub fn encode_batch<S: AsRef<str> + Sync>(
    encoder: &Encoder,
    texts: &[S],
    allowed: &Specials,
    num_threads: usize,
) -> Result<Vec<Vec<u32>>> {
    let texts: Vec<Text<'_>> = texts.iter().map(|t| Text::Utf8(t.as_ref())).collect();
    let ids = encode_texts(encoder, &texts, allowed, None, num_threads)?;
    // UTF-8 texts always give their ids (`None` is for code points without UTF-8).
    Ok(ids.into_iter().map(Option::unwrap_or_default).collect())
}

/// Each text's ids, in parallel on `num_threads` threads (0: all cores), as
/// [`encode_wide`](crate::encode::text::encode_wide) gives them for code points and `encode` (with the same
/// check of `disallowed`) for UTF-8. The error is that of the first text in order
/// that has one.
pub(crate) fn encode_texts(
    encoder: &Encoder,
    texts: &[Text<'_>],
    allowed: &Specials,
    disallowed: Option<&Specials>,
    num_threads: usize,
) -> Result<Vec<Option<Vec<u32>>>> {
    let work = || {
        if rayon::current_num_threads() > 1 {
            encoder
                .workspaces()
                .size_shared_for(texts.iter().map(Text::len).sum());
        }
        texts
            .par_iter()
            .map_init(
                || (lease(encoder, rayon::current_num_threads() > 1), Vec::new()),
                |(ws, buf), text| match ws {
                    Ok(ws) => encode_one(encoder, text, allowed, disallowed, ws, buf),
                    // A workspace that could not be made fails each of its texts.
                    Err(_) => Err(no_workspace()),
                },
            )
            .collect::<Vec<Result<Option<Vec<u32>>>>>()
            .into_iter()
            .collect()
    };
    run_in_pool(num_threads, work)?
}

/// Each text's ids and offsets ([`Encoder::encode_with_offsets`], after the check of
/// `disallowed`), in parallel on `num_threads` threads (0: all cores). The error is
/// that of the first text in order that has one.
#[cfg(any(feature = "python", test))]
pub(crate) fn encode_texts_with_offsets(
    encoder: &Encoder,
    texts: &[&str],
    allowed: &Specials,
    disallowed: Option<&Specials>,
    trim: Option<Trim>,
    num_threads: usize,
) -> Result<Vec<(Vec<u32>, Vec<Span>)>> {
    let one = |ws: &mut Lease<'_>, text: &str| {
        encoder.workspaces().refresh_shared(ws);
        disallowed.map_or(Ok(()), |d| d.refuse_in(text))?;
        let mut out = Vec::new();
        out.try_reserve(text.len() / 3 + 1)
            .map_err(|_| Error::out_of_memory::<u32>("token ids", text.len() / 3))?;
        encoder.encode_spans(text, allowed, trim, ws, out)
    };
    let work = || {
        let shared = rayon::current_num_threads() > 1;
        if shared {
            let total = texts.iter().map(|t| t.len()).sum();
            encoder.workspaces().size_shared_for(total);
        }
        texts
            .par_iter()
            .map_init(
                || lease(encoder, shared),
                |ws, text| match ws {
                    Ok(ws) => one(ws, text),
                    Err(_) => Err(no_workspace()),
                },
            )
            .collect::<Vec<Result<_>>>()
            .into_iter()
            .collect()
    };
    run_in_pool(num_threads, work)?
}

pub(super) fn no_workspace() -> Error {
    Error::out_of_memory::<u8>("a workspace", 1 << 22)
}

/// A workspace for one thread of a batch, its short cache shared where `shared`.
pub(super) fn lease(encoder: &Encoder, shared: bool) -> Result<Lease<'_>> {
    let ws = match shared {
        false => encoder.workspaces().lease(),
        true => encoder.workspaces().lease_shared(),
    };
    if let Ok(ws) = &ws {
        ws.short.populate();
    }
    ws
}

/// One text of a batch, on a thread's workspace (`buf` its transcoding buffer).
pub(super) fn encode_one(
    encoder: &Encoder,
    text: &Text<'_>,
    allowed: &Specials,
    disallowed: Option<&Specials>,
    ws: &mut Lease<'_>,
    buf: &mut Vec<u8>,
) -> Encoded {
    encoder.workspaces().refresh_shared(ws);
    let mut out = Vec::new();
    out.try_reserve(text.len() / 3 + 1)
        .map_err(|_| Error::out_of_memory::<u32>("token ids", text.len() / 3))?;
    ws.prefault = Prefault::new(&out);
    let done = match *text {
        Text::Utf8(t) => match disallowed.map_or(Ok(()), |d| d.refuse_in(t)) {
            Err(e) => Err(e),
            Ok(()) => encoder.encode_into(t, allowed, ws, &mut out).map(|()| true),
        },
        Text::Wide(w) => encode_wide_into(encoder, w, allowed, disallowed, ws, buf, &mut out),
    };
    ws.prefault = Prefault::default();
    Ok(done?.then_some(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::engine::{BIG_SHORT_LINES, SHORT_LINES};
    use crate::encode::text::Wide;
    use crate::testutil::{long_text, pattern_encoder, tiny_encoder as encoder};

    #[test]
    fn shared_table_is_sized_for_the_input_and_keeps_its_pieces() {
        let e = encoder(&[]);
        let all = e.specials().clone();
        assert_eq!(e.workspaces().shared_cache_lines(), 0);
        e.workspaces().size_shared_for(1000);
        assert_eq!(e.workspaces().shared_cache_lines(), SHORT_LINES.0);
        // Pieces a parallel encode put in the table survive the growth.
        let texts = vec![" the then thin"; 4];
        let before = encode_batch(&e, &texts, &all, 2).unwrap();
        let held = e.workspaces().shared_cache_len();
        e.workspaces().size_shared_for(40 << 20);
        assert_eq!(e.workspaces().shared_cache_lines(), (40 << 20) / 160);
        assert_eq!(e.workspaces().shared_cache_len(), held);
        // A smaller input never shrinks it.
        e.workspaces().size_shared_for(1000);
        // A huge one gets a table past the usual limit, up to the largest.
        e.workspaces().size_shared_for(usize::MAX / 2);
        assert_eq!(e.workspaces().shared_cache_lines(), BIG_SHORT_LINES);
        assert_eq!(encode_batch(&e, &texts, &all, 2).unwrap(), before);
    }

    #[test]
    fn offsets_of_a_batch_equal_those_of_each_text() {
        let e = pattern_encoder("o200k");
        let all = e.specials().clone();
        let docs: Vec<String> = (0..30)
            .map(|i| match i % 3 {
                0 => format!("the cat {i}\n"),
                1 => "été 🙃<|eot|> the\n".repeat(i * 30),
                _ => long_text().chars().take((i * 7919) % 20_000).collect(),
            })
            .collect();
        let texts: Vec<&str> = docs.iter().map(String::as_str).collect();
        let want: Vec<_> = texts
            .iter()
            .map(|t| e.encode_with_offsets(t, &all, None).unwrap())
            .collect();
        for threads in [1, 2] {
            let got = encode_texts_with_offsets(&e, &texts, &all, None, None, threads).unwrap();
            assert_eq!(got, want);
        }
        let err = encode_texts_with_offsets(&e, &texts, &Specials::default(), Some(&all), None, 2);
        assert!(matches!(err, Err(Error::DisallowedSpecial { .. })));
    }

    #[test]
    fn batch_equals_single() {
        let e = encoder(&[]);
        let texts = vec!["the the", " then", ""];
        let all = e.specials().clone();
        let batch = encode_batch(&e, &texts, &all, 2).unwrap();
        for (t, ids) in texts.iter().zip(batch) {
            assert_eq!(ids, e.encode(t, &all).unwrap());
        }
    }

    #[test]
    fn batches_of_both_forms_equal_encode_of_each() {
        let e = pattern_encoder("o200k");
        let all = e.specials().clone();
        let docs: Vec<String> = (0..40)
            .map(|i| match i % 4 {
                0 => format!("the cat {i}\n"),
                1 => "été 🙃<|eot|> the\n".repeat(i * 300),
                2 => long_text().chars().take((i * 7919) % 200_000).collect(),
                _ => String::new(),
            })
            .collect();
        let wides: Vec<Vec<u32>> = docs
            .iter()
            .map(|d| d.chars().map(u32::from).collect())
            .collect();
        let texts: Vec<Text<'_>> = docs
            .iter()
            .zip(&wides)
            .enumerate()
            .map(|(i, (d, w))| match i % 3 {
                0 => Text::Utf8(d),
                _ => Text::Wide(Wide::Ucs4(w)),
            })
            .collect();
        let want: Vec<Option<Vec<u32>>> = docs
            .iter()
            .map(|d| Some(e.encode(d, &all).unwrap()))
            .collect();
        for threads in [1, 2] {
            assert_eq!(encode_texts(&e, &texts, &all, None, threads).unwrap(), want);
        }
        // A text without UTF-8 gives None; the error is that of the first text with one
        // (texts[1] holds "<|eot|>", `double` the longer special).
        let mut bad = wides[4].clone();
        bad[3] = 0xDFFF;
        let none = Specials::default();
        let got = encode_texts(
            &e,
            &[texts[0], Text::Wide(Wide::Ucs4(&bad))],
            &none,
            None,
            2,
        )
        .unwrap();
        assert_eq!(got[1], None);
        let double = Text::Utf8("x<|eot|><|eot|>");
        for (order, named) in [
            ([texts[0], texts[1], double], "<|eot|>"),
            ([texts[0], double, texts[1]], "<|eot|><|eot|>"),
        ] {
            for threads in [1, 2] {
                let err = encode_texts(&e, &order, &none, Some(&all), threads).unwrap_err();
                assert!(
                    matches!(&err, Error::DisallowedSpecial { token } if token == named),
                    "{err}"
                );
            }
        }
    }
}
