//! datatrove's files beside a shard's ids (`.ds`, raw little-endian), as its
//! `TokenizedFile` writes them (`datatrove/pipeline/tokens/tokenizer.py`):
//!
//! - `.ds.index`: where each document ends, in tokens from the file's start, as
//!   little-endian u64, no count or leading 0 (an empty document repeats the end
//!   before it);
//! - `.ds.metadata`: three lines without a final newline: `{tokenizer}|{token size}`,
//!   the token count, and that count as `humanize.metric(count, unit="T")` writes it.
//!
//! A document continued from the shard before is one document of this shard.

/// The `.ds.index` of a shard of `tokens` ids whose documents (or parts) start at `starts`.
pub(super) fn index(starts: &[u64], tokens: u64) -> Vec<u8> {
    let ends = starts.iter().skip(1).chain(std::iter::once(&tokens));
    ends.flat_map(|e| e.to_le_bytes()).collect()
}

/// The `.ds.metadata` of a shard of `tokens` ids of `width` bytes, encoded with the
/// tokenizer named `tokenizer`. datatrove's merger splits the first line at `|` into
/// the name and the size, so a `|` or a line break in the name becomes `_`.
pub(super) fn metadata(tokenizer: &str, width: usize, tokens: u64) -> String {
    let name: String = tokenizer
        .chars()
        .map(|c| {
            if matches!(c, '|' | '\n' | '\r') {
                '_'
            } else {
                c
            }
        })
        .collect();
    let name = if name.is_empty() {
        "bpekit".into()
    } else {
        name
    };
    format!("{name}|{width}\n{tokens}\n{}", metric(tokens))
}

/// `humanize.metric(n, unit="T")` (precision 3) for a count: three significant digits
/// and an SI prefix, `"1.23 kT"`, `"268 MT"`, `"0.00 T"`. Rust's and Python's fixed
/// formatting both round the float's exact value half to even, as the tests check.
fn metric(n: u64) -> String {
    let value = n as f64;
    let mut exponent = if n == 0 {
        0
    } else {
        value.log10().floor() as i32
    };
    let old_bucket = exponent.div_euclid(3) * 3;
    let mut scaled = value / 10f64.powi(old_bucket);
    let mut digits = (2 - exponent.rem_euclid(3)).max(0) as usize;
    // A rounding carry (9.999 -> 10.0) moves to the next prefix.
    let rounded: f64 = format!("{scaled:.digits$}").parse().unwrap_or(scaled);
    if exponent < 30 && rounded >= 10f64.powi(exponent.rem_euclid(3) + 1) {
        exponent += 1;
        let new_bucket = exponent.div_euclid(3) * 3;
        scaled /= 10f64.powi(new_bucket - old_bucket);
        digits = (2 - exponent.rem_euclid(3)).max(0) as usize;
    }
    let prefix = match exponent / 3 {
        0 => String::new(),
        k => "kMGTPEZYRQ"
            .chars()
            .nth(k as usize - 1)
            .map(String::from)
            .unwrap_or_default(),
    };
    format!("{scaled:.digits$} {prefix}T")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_is_humanize_s() {
        // humanize 4.17.0's `metric(n, unit="T")` of each.
        let cases = [
            (0, "0.00 T"),
            (1, "1.00 T"),
            (10, "10.0 T"),
            (125, "125 T"),
            (999, "999 T"),
            (1000, "1.00 kT"),
            (1005, "1.00 kT"),
            (1125, "1.12 kT"),
            (1234, "1.23 kT"),
            (2125, "2.12 kT"),
            (9995, "9.99 kT"),
            (9999, "10.0 kT"),
            (12500, "12.5 kT"),
            (99949, "99.9 kT"),
            (99950, "100 kT"),
            (100500, "100 kT"),
            (999499, "999 kT"),
            (999500, "1.00 MT"),
            (999950, "1.00 MT"),
            (16777216, "16.8 MT"),
            (268435456, "268 MT"),
            (2147483647, "2.15 GT"),
            (1_000_000_000_000_000, "1.00 PT"),
            (1 << 63, "9.22 ET"),
        ];
        for (n, want) in cases {
            assert_eq!(metric(n), want, "{n}");
        }
    }

    #[test]
    fn index_and_metadata() {
        let idx = index(&[0, 3, 3], 5);
        let ends: Vec<u64> = idx
            .chunks(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(ends, [3, 3, 5]);
        assert_eq!(metadata("gpt2", 2, 1234), "gpt2|2\n1234\n1.23 kT");
        assert_eq!(metadata("a|b", 4, 0), "a_b|4\n0\n0.00 T");
    }
}
