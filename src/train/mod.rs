//! The merge loop: `WordCounts` -> `(vocab, merges)` with CS336 semantics.
//!
//! Each merge touches only the words that hold the chosen pair (found through
//! postings) and only the pair counts that actually change; the best pair comes
//! from a max-queue with lazy invalidation (see `queue`). Large merges run on the
//! pool's threads: the words in runs (`words`), the counts' changes a shard per
//! thread (`pairs`).

mod pairs;
mod queue;
mod words;

use crate::count::WordCounts;
use crate::error::{Error, Result};
use crate::ids::unpack;
use crate::ids::MAX_IDS;
use crate::progress::Progress;
use crate::specials::SpecialMatcher;
use pairs::{Deltas, PairCounts};
use queue::{Candidate, PairQueue, Tokens};
use words::{Merge, Words};

/// A trained vocabulary. `vocab[id]` is the token's bytes: ids 0..256 are the
/// bytes by value, then the special tokens in the order given, then the merges in
/// creation order. `merges[i]` are the ids of the pair merged into token
/// `256 + n_specials + i`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trained {
    pub vocab: Vec<Vec<u8>>,
    pub merges: Vec<(u32, u32)>,
}

impl Trained {
    pub fn merge_bytes(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.merges.iter().map(|&(a, b)| {
            (
                self.vocab[a as usize].as_slice(),
                self.vocab[b as usize].as_slice(),
            )
        })
    }
}

/// An error if a pair count could pass `u64::MAX`. A pair's count is the sum, over
/// the words holding it, of the word's count times its occurrences there, so no pair
/// count ever passes the sum of `count * (length - 1)` over all words (merging only
/// shortens words); checking that bound once keeps the merge loop's additions plain.
/// Word counts that fit (their total does) could otherwise wrap a pair count:
/// `"aaa"` counted 2**63 times holds `(a, a)` 2**64 times.
fn check_pair_counts(counts: &WordCounts) -> Result<()> {
    let bound = counts.iter().try_fold(0u64, |sum, (word, count)| {
        let pairs = u64::try_from(word.len().saturating_sub(1)).ok()?;
        sum.checked_add(count.checked_mul(pairs)?)
    });
    match bound {
        Some(_) => Ok(()),
        None => Err(Error::Overflow(
            "the word counts are too large to train on: the pairs in the words, each counted \
             as often as its word, number more than 2**64-1, so a pair's count could wrap"
                .into(),
        )),
    }
}

/// How often the loop reports progress and checks for cancellation.
const REPORT_EVERY: usize = 64;

/// Trains on `counts` on a pool of `num_threads` threads (0: all cores); the result
/// does not depend on the thread count.
pub fn train(
    counts: &WordCounts,
    vocab_size: usize,
    special_tokens: &[String],
    num_threads: usize,
    progress: &Progress,
) -> Result<Trained> {
    crate::pool::run_in_pool(num_threads, || {
        train_here(counts, vocab_size, special_tokens, progress)
    })?
}

/// [`train`] on the calling thread's pool.
fn train_here(
    counts: &WordCounts,
    vocab_size: usize,
    special_tokens: &[String],
    progress: &Progress,
) -> Result<Trained> {
    SpecialMatcher::new(special_tokens)?;
    let base = 256 + special_tokens.len();
    if vocab_size < base {
        return Err(Error::invalid(format!(
            "vocab_size {vocab_size} is too small: it must be at least 256 byte tokens + {} special tokens = {base}",
            special_tokens.len()
        )));
    }
    if vocab_size > MAX_IDS {
        return Err(Error::invalid(format!(
            "vocab_size {vocab_size} is too large: the encoder holds at most {MAX_IDS} tokens"
        )));
    }
    check_pair_counts(counts)?;
    let wanted = vocab_size - base;
    // The merge loop's word arena, pair counts, postings and queue are made of many
    // allocations sized by the counts and the merges: where they cannot all be had (a
    // memory limit), fail now rather than abort partway. Peaks measured above the
    // counts: kjv 14K words, 1K merges: 7 MB; linux docs 102K words,
    // 32K merges: 58 MB; gcide 331K words, 10K merges: 83 MB. This asks for more.
    let word_bytes: usize = counts.iter().map(|(w, _)| w.len()).sum();
    // The merge loop places words by u32 offsets into one arena.
    if word_bytes > u32::MAX as usize {
        return Err(Error::invalid(format!(
            "the distinct words hold {word_bytes} bytes in all; training holds at most \
             {} (4 GiB) of them",
            u32::MAX
        )));
    }
    let need = (64usize << 20)
        .saturating_add(counts.len().saturating_mul(256))
        .saturating_add(word_bytes.saturating_mul(32))
        .saturating_add(vocab_size.saturating_mul(256));
    if !crate::hugemem::probe(need) {
        return Err(Error::OutOfMemory {
            what: "training on these counts",
            bytes: need,
        });
    }
    progress.reset(wanted as u64);

    // Internal ids: bytes 0..256, then merges; specials are slotted in at the end.
    let mut tokens = Tokens::default();
    for b in 0..=255u8 {
        tokens.push(vec![b]);
    }
    let threads = rayon::current_num_threads();
    let mut words = Words::new(counts.iter());
    let mut pairs = words.count_pairs(pairs::shards_for(threads));
    let entries = pairs
        .counts()
        .map(|(pair, count)| Candidate { count, pair })
        .collect();
    let mut queue = PairQueue::from_candidates(entries, &tokens);
    // The loop may stop long before `wanted` (no pair left), so the list grows.
    let mut merges: Vec<(u32, u32)> = Vec::with_capacity(wanted.min(1 << 16));
    let mut grown = Vec::new();
    // One per thread, kept between merges for their tables' capacity.
    let mut deltas: Vec<Deltas> = (0..threads).map(|_| Deltas::default()).collect();

    while merges.len() < wanted {
        let Some(best) = pop_best(&mut queue, &pairs, &tokens) else {
            break;
        };
        let (a, b) = unpack(best);
        let new = tokens.len() as u32;
        let mut bytes = tokens.get(a).to_vec();
        bytes.extend_from_slice(tokens.get(b));
        tokens.push(bytes);
        merges.push((a, b));
        let postings = pairs.remove(best).map(|s| s.postings).unwrap_or_default();
        grown.clear();
        let no = merges.len() as u32;
        words.merge(
            &postings,
            Merge { a, b, new, no },
            &mut pairs,
            &mut deltas,
            &mut grown,
        );
        grown.sort_unstable();
        grown.dedup();
        for &p in &grown {
            if let Some(s) = pairs.get(p) {
                queue.push(
                    Candidate {
                        count: s.count,
                        pair: p,
                    },
                    &tokens,
                );
            }
        }
        if merges.len().is_multiple_of(REPORT_EVERY) {
            progress.set_done(merges.len() as u64);
            progress.check()?;
        }
    }
    progress.set_done(merges.len() as u64);

    let n_special = special_tokens.len() as u32;
    let to_final = |id: u32| if id < 256 { id } else { id + n_special };
    let mut vocab: Vec<Vec<u8>> = Vec::with_capacity(base + merges.len());
    let mut tokens = tokens.into_bytes();
    vocab.extend(tokens.drain(..256));
    vocab.extend(special_tokens.iter().map(|t| t.as_bytes().to_vec()));
    vocab.extend(tokens);
    let merges = merges
        .into_iter()
        .map(|(a, b)| (to_final(a), to_final(b)))
        .collect();
    Ok(Trained { vocab, merges })
}

/// The best live pair, skipping entries whose pair has gone and re-queuing those
/// whose count has fallen since they were pushed.
fn pop_best(
    queue: &mut PairQueue,
    pairs: &PairCounts,
    tokens: &Tokens,
) -> Option<crate::ids::Pair> {
    while let Some(e) = queue.pop(tokens) {
        match pairs.get(e.pair) {
            None => continue,
            Some(s) if s.count == e.count => return Some(e.pair),
            Some(s) => queue.push(
                Candidate {
                    count: s.count,
                    pair: e.pair,
                },
                tokens,
            ),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> WordCounts {
        let mut pairs: Vec<(Vec<u8>, u64)> = Vec::new();
        for w in text.split(' ') {
            pairs.push((w.as_bytes().to_vec(), 1));
        }
        WordCounts::from_pairs(pairs, "test").unwrap()
    }

    #[test]
    fn handout_example() {
        // CS336 handout §2.4: low low low low low lower lower widest widest widest
        // newest newest newest newest newest newest, whitespace pre-tokenizer.
        let mut text = String::new();
        for (w, n) in [("low", 5), ("lower", 2), ("widest", 3), ("newest", 6)] {
            for _ in 0..n {
                text.push_str(w);
                text.push(' ');
            }
        }
        let counts = words(text.trim_end());
        let t = train(
            &counts,
            256 + 1 + 12,
            &["<|endoftext|>".into()],
            0,
            &Progress::new(),
        )
        .unwrap();
        let got: Vec<String> = t
            .merge_bytes()
            .map(|(a, b)| {
                format!(
                    "{} {}",
                    String::from_utf8_lossy(a),
                    String::from_utf8_lossy(b)
                )
            })
            .collect();
        let want = [
            "s t", "e st", "o w", "l ow", "w est", "n e", "ne west", "w i", "wi d", "wid est",
            "low e", "lowe r",
        ];
        assert_eq!(got, want);
        assert_eq!(t.vocab[256], b"<|endoftext|>");
        assert_eq!(t.vocab[257], b"st");
    }

    #[test]
    fn pair_counts_that_would_wrap_are_an_error() {
        // (a, a) occurs 2**63 * 2 = 2**64 times: wrapped to 0, (b, c) won the merge.
        let pairs = [(b"aaa".to_vec(), 1 << 63), (b"bc".to_vec(), 1)];
        let counts = WordCounts::from_pairs(pairs, "t").unwrap();
        let err = train(&counts, 257, &[], 0, &Progress::new()).unwrap_err();
        assert!(matches!(err, Error::Overflow(_)), "{err:?}");
        // Up to the bound is fine: (a, b) occurs u64::MAX times.
        let counts = WordCounts::from_pairs([(b"ab".to_vec(), u64::MAX)], "t").unwrap();
        let t = train(&counts, 257, &[], 0, &Progress::new()).unwrap();
        assert_eq!(t.vocab[256], b"ab");
    }

    #[test]
    fn overlapping_runs_count_every_pair() {
        // "aaaa" holds (a,a) three times: one merge gives aa aa, the next aaaa.
        let counts = WordCounts::from_pairs([(b"aaaa".to_vec(), 1)], "t").unwrap();
        let t = train(&counts, 258, &[], 0, &Progress::new()).unwrap();
        assert_eq!(t.vocab[256], b"aa");
        assert_eq!(t.vocab[257], b"aaaa");
    }

    /// Words over a few letters, so that the early merges each touch thousands of
    /// words (the threads share those merges) and counts tie often.
    fn many_words(n: usize, seed: u64) -> WordCounts {
        let mut x = seed;
        let mut next = move |m: u64| {
            // xorshift64: a fixed sequence, the same on every machine.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        let mut words = std::collections::BTreeMap::new();
        while words.len() < n {
            let len = 2 + next(11) as usize;
            let word: Vec<u8> = (0..len)
                .map(|_| b"abcde\xc3\xa9"[next(7) as usize])
                .collect();
            words.insert(word, [1, 1, 2, 3, 7, 40][next(6) as usize]);
        }
        WordCounts::from_pairs(words, "t").unwrap()
    }

    #[test]
    fn threads_do_not_change_the_result() {
        // 70K words: more than one run of words when counting pairs and filling the
        // arena, and merges of up to tens of thousands of words.
        let counts = many_words(70_000, 0x2545_f491_4f6c_dd1d);
        let one = train(&counts, 256 + 300, &[], 1, &Progress::new()).unwrap();
        assert_eq!(one.merges.len(), 300);
        for threads in [2, 3, 4, 8] {
            let t = train(&counts, 256 + 300, &[], threads, &Progress::new()).unwrap();
            assert_eq!(t, one, "{threads} threads");
        }
    }

    #[test]
    fn stops_when_no_pairs_remain_and_rejects_small_vocab() {
        let counts = WordCounts::from_pairs([(b"ab".to_vec(), 1)], "t").unwrap();
        let t = train(&counts, 1000, &[], 0, &Progress::new()).unwrap();
        assert_eq!(t.merges.len(), 1);
        assert!(train(&counts, 256, &["x".into()], 0, &Progress::new()).is_err());
    }
}
