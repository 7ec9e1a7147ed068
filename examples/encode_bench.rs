//! Encodes a text file with a `.tiktoken` rank file, for profiling the encoder apart
//! from Python: `cargo run --release --example encode_bench -- RANKS PATTERN TEXT [RUNS]`
//! (PATTERN: gpt2, cl100k or o200k). Prints MB/s of thread CPU time per run; the
//! first run fills the piece caches. `SCAN=1` also times the pre-tokenizer alone.

use bpekit::encode::encoder::{Encoder, Specials};

/// Decodes standard base64 (the `.tiktoken` token column).
fn base64(s: &str) -> Result<Vec<u8>, String> {
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

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        return Err("usage: encode_bench RANKS PATTERN TEXT [RUNS]".into());
    }
    let mut ranks = Vec::new();
    for line in std::fs::read_to_string(&args[1])?.lines() {
        let (tok, rank) = line.split_once(' ').ok_or("bad rank line")?;
        ranks.push((base64(tok)?, rank.parse::<u32>()?));
    }
    let text = std::fs::read_to_string(&args[3])?;
    let runs: usize = args.get(4).map_or(Ok(5), |s| s.parse())?;
    if std::env::var_os("SCAN").is_some() {
        scan_only(&text, &args[2])?;
    }
    let encoder = Encoder::from_ranks(ranks, Vec::new(), &args[2])?;
    let none = Specials::default();
    let mb = text.len() as f64 / 1e6;
    for _ in 0..runs {
        let t0 = cpu_seconds();
        let ids = encoder.encode(&text, &none)?;
        let s = cpu_seconds() - t0;
        println!("{:.1} MB/s, {} ids", mb / s, ids.len());
    }
    Ok(())
}

fn cpu_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Times the pre-tokenizer alone (`SCAN=1`), for comparison with the whole encoder.
fn scan_only(text: &str, pattern: &str) -> bpekit::Result<()> {
    let pretok = bpekit::pretokenize::Pretokenizer::new(pattern)?;
    for _ in 0..3 {
        let t0 = cpu_seconds();
        let mut pieces = 0usize;
        pretok.for_each_piece(text, |_| pieces += 1)?;
        let s = cpu_seconds() - t0;
        println!(
            "scan only: {:.1} MB/s, {pieces} pieces",
            text.len() as f64 / 1e6 / s
        );
    }
    Ok(())
}
