//! Parsing rank files for the encoder: a `.tiktoken` file (one `base64-token rank`
//! per line), or GPT-2's `vocab.bpe` (a version line, then one merge a line).
//!
//! Why here and not only in Python (`bpekit.formats.tiktoken` and
//! `bpekit.encodings._gpt2_ranks` stay the formats' readable references): parsing
//! o200k's 200K lines in Python took 0.16 s and building the `(bytes, rank)` list
//! for the core 0.04 s more, the larger part of `get_encoding("o200k_base")` and of
//! every `bpekit encode` start; GPT-2's 50K merges took ~0.1 s.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

use rayon::prelude::*;
use rustc_hash::{FxBuildHasher, FxHashSet};

use crate::error::{Error, Result};
use crate::pool::run_in_pool;

/// `(token bytes, rank)` pairs, and the line index each came from.
type Ranks = (Vec<(Vec<u8>, u32)>, Vec<usize>);

/// The kinds of rank file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `.tiktoken`: one `base64-token rank` per line; blank lines are skipped. A line
    /// that is not a base64 token and a rank, or a token given twice, is an error
    /// naming the line.
    Tiktoken,
    /// GPT-2's `vocab.bpe`, read as tiktoken's `data_gym_to_mergeable_bpe_ranks`
    /// reads it: the 256 bytes in GPT-2's byte order (printable ones first), then the
    /// joined bytes of each merge, in order. The first line (`#version`) and the text
    /// after the last newline are not merges. A merge that is not two GPT-2 byte
    /// strings, or one made twice, is an error naming the line.
    Gpt2,
}

impl Format {
    /// The ranks of `data` without the check that each token is given once, which
    /// [`Bpe::from_ranks`](super::Bpe::from_ranks) makes anyway (then [`Self::parse`]
    /// finds the line to name).
    pub(crate) fn parse_unchecked(self, data: &[u8], name: &str) -> Result<Vec<(Vec<u8>, u32)>> {
        self.parse_lines(data, name).map(|(ranks, _)| ranks)
    }

    fn parse_lines(self, data: &[u8], name: &str) -> Result<Ranks> {
        match self {
            Format::Tiktoken => parse_tiktoken(data, name),
            Format::Gpt2 => parse_gpt2(data, name),
        }
    }

    /// The ranks of `data`, a file of this format named `name` (for errors).
    pub fn parse(self, data: &[u8], name: &str) -> Result<Vec<(Vec<u8>, u32)>> {
        let (ranks, lines) = self.parse_lines(data, name)?;
        check_distinct(&ranks, &lines, data, name)?;
        Ok(ranks)
    }
}

/// Bytes of `.tiktoken` text each parallel task parses (cut at a line end): o200k's
/// 3.6 MB make ~14 tasks.
const SEGMENT_BYTES: usize = 256 << 10;

/// [`Format::Tiktoken`]'s parse without the check for a token given twice, and the line index of each
/// rank. Parsed in parallel, in stretches of whole lines; the first bad line of the
/// file is the one reported.
fn parse_tiktoken(data: &[u8], name: &str) -> Result<Ranks> {
    let mut segments: Vec<(&[u8], usize)> = Vec::new();
    let (mut rest, mut first_line) = (data, 0);
    while !rest.is_empty() {
        let cut = match rest
            .get(SEGMENT_BYTES..)
            .and_then(|tail| memchr::memchr(b'\n', tail))
        {
            Some(i) => SEGMENT_BYTES + i + 1,
            None => rest.len(),
        };
        let (segment, tail) = rest.split_at(cut);
        segments.push((segment, first_line));
        first_line += memchr::memchr_iter(b'\n', segment).count();
        rest = tail;
    }
    let parsed: Vec<Result<Ranks>> = run_in_pool(0, || {
        segments
            .par_iter()
            .map(|&(segment, first_line)| parse_lines(segment, first_line, name))
            .collect()
    })?;
    let mut ranks = Vec::with_capacity(data.len() / 16);
    let mut lines = Vec::with_capacity(data.len() / 16);
    for part in parsed {
        let (r, l) = part?;
        ranks.extend(r);
        lines.extend(l);
    }
    Ok((ranks, lines))
}

/// The parse of the whole lines in `segment`, whose first line is line index
/// `first_line` of the file: the ranks and the line index of each.
fn parse_lines(segment: &[u8], first_line: usize, name: &str) -> Result<Ranks> {
    let mut ranks = Vec::with_capacity(segment.len() / 16);
    let mut lines = Vec::with_capacity(segment.len() / 16);
    let mut scratch = Vec::new();
    for (i, line) in segment.split(|&b| b == b'\n').enumerate() {
        let i = first_line + i;
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
            .ok_or_else(|| bad("the rank is not a whole number in 0..2**32-1"))?;
        // An exact-size copy: the core keeps each token as a boxed slice, and a
        // spare capacity would be reallocated away token by token.
        ranks.push((scratch.to_vec(), rank));
        lines.push(i);
    }
    Ok((ranks, lines))
}

/// [`Format::Gpt2`]'s parse without the check for a token made twice, and the line index
/// of each rank (0 for the bytes).
fn parse_gpt2(data: &[u8], name: &str) -> Result<Ranks> {
    let text = std::str::from_utf8(data).map_err(|e| {
        Error::invalid(format!(
            "{name}: not UTF-8 (byte offset {})",
            e.valid_up_to()
        ))
    })?;
    let (order, char_of) = gpt2_bytes();
    let mut byte_of = [None; 256 + 68];
    for b in 0..=255u8 {
        byte_of[char_of[usize::from(b)] as usize] = Some(b);
    }
    let mut ranks: Vec<(Vec<u8>, u32)> = Vec::with_capacity(data.len() / 10);
    let mut lines: Vec<usize> = Vec::with_capacity(data.len() / 10);
    for (rank, &b) in (0..).zip(&order) {
        ranks.push((vec![b], rank));
        lines.push(0);
    }
    let all: Vec<&str> = text.split('\n').collect();
    let merges = all.get(1..all.len().saturating_sub(1)).unwrap_or_default();
    for (i, line) in merges.iter().enumerate() {
        let i = i + 1;
        let bad = |why: &str| bad_merge(name, i, line, why);
        let mut token = Vec::with_capacity(line.len());
        let mut fields = 0;
        for field in line.split_whitespace() {
            fields += 1;
            for c in field.chars() {
                let b = byte_of.get(c as usize).copied().flatten();
                token.push(b.ok_or_else(|| bad(&format!("{c:?} is not a GPT-2 byte character")))?);
            }
        }
        if fields != 2 {
            return Err(bad("not two fields"));
        }
        let rank = u32::try_from(ranks.len()).map_err(|_| bad("too many merges"))?;
        ranks.push((token, rank));
        lines.push(i);
    }
    Ok((ranks, lines))
}

/// GPT-2's bytes (`bpekit.formats.gpt2.bytes_to_unicode`): the order of the byte
/// tokens' ranks in `vocab.bpe` (the printable Latin-1 bytes first, then the others,
/// each group in byte order), and the character that stands for each byte (a
/// printable byte stands for itself, the others are U+0100 onward, in byte order).
fn gpt2_bytes() -> ([u8; 256], [u32; 256]) {
    let printable = |b: u8| (0x21..=0x7e).contains(&b) || (0xa1..=0xac).contains(&b) || b >= 0xae;
    let mut order = [0u8; 256];
    let mut char_of = [0u32; 256];
    let (mut rank, mut extra) = (0, 256);
    for b in (0..=255u8).filter(|&b| printable(b)) {
        order[rank] = b;
        char_of[usize::from(b)] = u32::from(b);
        rank += 1;
    }
    for b in (0..=255u8).filter(|&b| !printable(b)) {
        order[rank] = b;
        char_of[usize::from(b)] = extra;
        rank += 1;
        extra += 1;
    }
    (order, char_of)
}

/// Errors at the second line holding the same token bytes as an earlier one.
/// `lines[k]` is the line index of `ranks[k]`.
fn check_distinct(
    ranks: &[(Vec<u8>, u32)],
    lines: &[usize],
    data: &[u8],
    name: &str,
) -> Result<()> {
    // Looked for once all are decoded, over borrowed tokens: a set of owned copies
    // cost a fifth of the loading time in allocations.
    let mut seen = FxHashSet::with_capacity_and_hasher(ranks.len(), FxBuildHasher);
    for ((token, _), &i) in ranks.iter().zip(lines) {
        if !seen.insert(token.as_slice()) {
            let line = data.split(|&b| b == b'\n').nth(i).unwrap_or_default();
            let shown = String::from_utf8_lossy(&line[..line.len().min(80)]).into_owned();
            return Err(Error::invalid(format!(
                "{name}:{}: {shown:?}: this token was given on an earlier line",
                i.saturating_add(1)
            )));
        }
    }
    Ok(())
}

fn bad_merge(name: &str, i: usize, line: &str, why: &str) -> Error {
    let shown: String = line.chars().take(80).collect();
    Error::invalid(format!(
        "{name}:{}: expected a merge 'left right', got {shown:?} ({why})",
        i + 1
    ))
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
    use crate::encode::Encoder;

    #[test]
    fn parses_lines_and_names_the_bad_one() {
        let ranks = Format::Tiktoken
            .parse(b"IQ== 0\r\nIg== 1\n\n  \naGk= 2", "t.tiktoken")
            .unwrap();
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
            let err = Format::Tiktoken
                .parse(data, "t.tiktoken")
                .unwrap_err()
                .to_string();
            assert!(err.contains(&format!("t.tiktoken:{line}:")), "{err}");
        }
    }

    #[test]
    fn gpt2_merges_follow_gpt2_byte_order() {
        let ranks = Format::Gpt2
            .parse("#version: 0.2\nĠ t\nĠt h\nĊ Ā\n".as_bytes(), "v.bpe")
            .unwrap();
        assert_eq!(ranks.len(), 259);
        // Printable bytes first, in byte order; then the others, from 0x00.
        assert_eq!(ranks[0], (b"!".to_vec(), 0));
        assert_eq!(ranks[93], (b"~".to_vec(), 93));
        assert_eq!(ranks[94], (vec![0xa1], 94));
        assert_eq!(ranks[188], (vec![0x00], 188));
        assert_eq!(ranks[255], (vec![0xad], 255));
        assert_eq!(ranks[256], (b" t".to_vec(), 256));
        assert_eq!(ranks[257], (b" th".to_vec(), 257));
        // Ċ is 0x0a, Ā (U+0100) is 0x00.
        assert_eq!(ranks[258], (vec![0x0a, 0x00], 258));
        // No line after the version line: only the bytes.
        assert_eq!(
            Format::Gpt2
                .parse(b"#version: 0.2\n", "v.bpe")
                .unwrap()
                .len(),
            256
        );
        assert_eq!(Format::Gpt2.parse(b"", "v.bpe").unwrap().len(), 256);
    }

    /// A file of all 256 bytes and `n` more two-byte tokens, as `.tiktoken` lines.
    fn tiktoken_lines(n: u32) -> Vec<String> {
        let mut lines: Vec<String> = (0..=255u8)
            .map(|b| format!("{} {b}", STANDARD.encode([b])))
            .collect();
        for r in 0..n {
            let token = [(r % 200) as u8 + 32, (r / 200) as u8 + 32];
            lines.push(format!("{} {}", STANDARD.encode(token), 256 + r));
        }
        lines
    }

    #[test]
    fn lines_past_the_first_stretch_keep_their_numbers() {
        // ~40K lines of ~10 bytes: several parallel stretches.
        let mut lines = tiktoken_lines(40_000);
        let n = lines.len();
        let ranks = Format::Tiktoken
            .parse(lines.join("\r\n").as_bytes(), "t.tiktoken")
            .unwrap();
        assert_eq!(ranks.len(), n);
        assert!(ranks.iter().zip(0..).all(|((_, r), i)| *r == i));
        let good = lines.join("\n");
        let encoder = Encoder::from_rank_file(
            Format::Tiktoken,
            good.as_bytes(),
            "t.tiktoken",
            Vec::new(),
            "gpt2",
        );
        assert_eq!(encoder.unwrap().bpe().id_limit(), n);
        // A bad line far into the file, then a token given twice far apart: both are
        // named by their line, through the parse and through the encoder.
        lines[39_000] = "not-base64!! 7".into();
        let err = Format::Tiktoken
            .parse(lines.join("\n").as_bytes(), "t.tiktoken")
            .unwrap_err();
        assert!(err.to_string().contains("t.tiktoken:39001:"), "{err}");
        let token_300 = lines[300].split(' ').next().unwrap_or_default().to_owned();
        lines[39_000] = format!("{token_300} 39000");
        let twice = lines.join("\n");
        for err in [
            Format::Tiktoken
                .parse(twice.as_bytes(), "t.tiktoken")
                .unwrap_err(),
            Encoder::from_rank_file(
                Format::Tiktoken,
                twice.as_bytes(),
                "t.tiktoken",
                Vec::new(),
                "gpt2",
            )
            .unwrap_err(),
        ] {
            let err = err.to_string();
            assert!(err.contains("t.tiktoken:39001:"), "{err}");
            assert!(err.contains("given on an earlier line"), "{err}");
        }
    }
}
