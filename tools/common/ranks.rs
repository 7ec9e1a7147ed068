//! Reads a `.tiktoken` rank file (shared by the examples).

/// Decodes standard base64 (the `.tiktoken` token column).
pub fn base64(s: &str) -> Result<Vec<u8>, String> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => Ok(c - b'A'),
        b'a'..=b'z' => Ok(c - b'a' + 26),
        b'0'..=b'9' => Ok(c - b'0' + 52),
        b'+' => Ok(62),
        b'/' => Ok(63),
        _ => Err(format!("bad base64 {s:?}")),
    };
    let digits = s.trim_end_matches('=').as_bytes();
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for &c in digits {
        acc = (acc << 6) | u32::from(val(c)?);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Ok(out)
}

/// `(token bytes, rank)` pairs.
pub type Ranks = Vec<(Vec<u8>, u32)>;

/// `(token bytes, rank)` of each line of the `.tiktoken` file at `path`.
pub fn load(path: &str) -> Result<Ranks, Box<dyn std::error::Error>> {
    let mut ranks = Vec::new();
    for line in std::fs::read_to_string(path)?.lines() {
        let (tok, rank) = line.split_once(' ').ok_or("bad rank line")?;
        ranks.push((base64(tok)?, rank.parse::<u32>()?));
    }
    Ok(ranks)
}
