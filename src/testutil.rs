//! Helpers for the unit tests.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::encode::text::ROUND;
use crate::encode::Encoder;

/// `f()`, run on a thread of its own; panics naming `what` if it takes longer than
/// `limit` seconds, so that a test of a complexity bound fails rather than hangs when
/// the bound regresses (the runaway thread ends with the test process). Give a
/// generous limit: the tests run unoptimised and beside other tests.
pub(crate) fn finishes_within<T: Send + 'static>(
    limit: f64,
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    let start = Instant::now();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs_f64(limit)) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what} took over {limit} s"),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            panic!(
                "{what} panicked after {:.2} s",
                start.elapsed().as_secs_f64()
            )
        }
    }
}

/// Bytes and the merges of " the", with `specials`, pre-tokenized as gpt2.
pub(crate) fn tiny_encoder(specials: &[&str]) -> Encoder {
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

/// An encoder with merges across most of `long_text`, special tokens `<|eot|>` and
/// `<|eot|><|eot|>`, and the pre-tokenizer `pattern`.
pub(crate) fn pattern_encoder(pattern: &str) -> Encoder {
    let vocab: Vec<(u32, Vec<u8>)> = (0..=255u8).map(|b| (u32::from(b), vec![b])).collect();
    let mut merges = Vec::new();
    let mut vocab = vocab;
    let e_acute = [&b"\xc3"[..], b"\xa9"];
    // Merges across most of the test text, so that a cut inside a piece changes ids.
    let pairs: [(&[u8], &[u8]); 16] = [
        (b"t", b"h"),
        (b"th", b"e"),
        (b" ", b"a"),
        (b"\n", b"\n"),
        (e_acute[0], e_acute[1]),
        ("é".as_bytes(), b"t"),
        (b"c", b"a"),
        (b"ca", b"t"),
        (b"i", b"n"),
        (b"d", b"e"),
        (b"n", b"t"),
        (b"e", b"d"),
        (b"l", b"i"),
        (b"n", b"e"),
        (b"a", b"a"),
        (b"aa", b"aa"),
    ];
    for (a, b) in pairs {
        let id = vocab.len() as u32;
        vocab.push((id, [a, b].concat()));
        merges.push((a.to_vec(), b.to_vec()));
    }
    let specials = vec!["<|eot|>".to_string(), "<|eot|><|eot|>".to_string()];
    Encoder::from_merges(vocab, &merges, specials, pattern).unwrap()
}

/// Text over several rounds, with cuts, stretches without any, specials across
/// round ends, and characters of every width.
pub(crate) fn long_text() -> String {
    let mut text = String::new();
    for i in 0..40_000 {
        text.push_str(match i % 7 {
            0 => "the cat\n",
            1 => "été 🙃 日本\n",
            2 => "  indented line\n",
            3 => "<|eot|><|eot|>",
            4 => "x",
            5 => "\n\n",
            _ => "théâtre<|eot|>",
        });
    }
    text.push_str(&"a".repeat(3 * ROUND));
    text
}

/// 300 documents for batch tests: empty ones, short ones, special tokens and accents,
/// and stretches of [`long_text`] up to 20,000 characters.
pub(crate) fn mixed_docs() -> Vec<String> {
    (0..300)
        .map(|i| match i % 5 {
            0 => String::new(),
            1 => format!("the cat {i} sat\n"),
            2 => "été 🙃<|eot|> the\n".repeat(i % 37),
            _ => long_text()
                .chars()
                .skip(i * 101)
                .take((i * 7919) % 20_000)
                .collect(),
        })
        .collect()
}

/// A small xorshift generator: the tests stay deterministic and need no crate.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number below `n` (not 0).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}
