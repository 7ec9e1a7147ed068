//! Parsing a `.tiktoken` rank file (one `base64-token rank` per line) for the encoder.
//!
//! Why here and not only in Python (`bpekit.formats.tiktoken`, which stays the
//! format's reference and public API): parsing o200k's 200K lines in Python took
//! 0.16 s and building the `(bytes, rank)` list for the core 0.04 s more, the
//! larger part of `get_encoding("o200k_base")` and of every `bpekit encode` start.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

use rustc_hash::{FxBuildHasher, FxHashSet};

use crate::error::{Error, Result};

/// The `(token bytes, rank)` of each line of `data`, a `.tiktoken` file named `name`
/// (for errors); blank lines are skipped. A line that is not a base64 token and a
/// rank, or a token given twice, is an error naming the line.
pub fn parse(data: &[u8], name: &str) -> Result<Vec<(Vec<u8>, u32)>> {
    let mut ranks = Vec::with_capacity(data.len() / 16);
    let mut lines = Vec::with_capacity(data.len() / 16);
    let mut scratch = Vec::new();
    for (i, line) in data.split(|&b| b == b'\n').enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let bad = |why: &str| bad_line(name, i, line, why);
        let mut fields = line
            .split(u8::is_ascii_whitespace)
            .filter(|f| !f.is_empty());
        let (Some(token), Some(rank), None) = (fields.next(), fields.next(), fields.next()) else {
            return Err(bad("not two fields"));
        };
        scratch.clear();
        STANDARD
            .decode_vec(token, &mut scratch)
            .map_err(|e| bad(&e.to_string()))?;
        let rank = std::str::from_utf8(rank)
            .ok()
            .and_then(|r| r.parse::<u32>().ok())
            .ok_or_else(|| bad("the rank is not a number"))?;
        // An exact-size copy: the core keeps each token as a boxed slice, and a
        // spare capacity would be reallocated away token by token.
        ranks.push((scratch.to_vec(), rank));
        lines.push(i);
    }
    // Looked for once all are decoded, over borrowed tokens: a set of owned copies
    // cost a fifth of the loading time in allocations.
    let mut seen = FxHashSet::with_capacity_and_hasher(ranks.len(), FxBuildHasher);
    for ((token, _), &i) in ranks.iter().zip(&lines) {
        if !seen.insert(token.as_slice()) {
            let line = data.split(|&b| b == b'\n').nth(i).unwrap_or_default();
            return Err(bad_line(
                name,
                i,
                line,
                "this token was given on an earlier line",
            ));
        }
    }
    Ok(ranks)
}

fn bad_line(name: &str, i: usize, line: &[u8], why: &str) -> Error {
    let shown = String::from_utf8_lossy(&line[..line.len().min(80)]).into_owned();
    Error::invalid(format!(
        "{name}:{}: expected 'base64-token rank', got {shown:?} ({why})",
        i + 1
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lines_and_names_the_bad_one() {
        let ranks = parse(b"IQ== 0\r\nIg== 1\n\n  \naGk= 2", "t.tiktoken").unwrap();
        assert_eq!(
            ranks,
            vec![(b"!".to_vec(), 0), (b"\"".to_vec(), 1), (b"hi".to_vec(), 2)]
        );
        for (data, line) in [
            (&b"IQ== 0\nnot-base64! 1\n"[..], 2),
            (b"IQ== 0\nIg==\n", 2),
            (b"IQ== x\n", 1),
            (b"IQ== 0 extra\n", 1),
            (b"IQ== 0\n\nIQ== 1\n", 3),
        ] {
            let err = parse(data, "t.tiktoken").unwrap_err().to_string();
            assert!(err.contains(&format!("t.tiktoken:{line}:")), "{err}");
        }
    }
}
