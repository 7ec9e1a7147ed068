//! Encodes a text file with a `.tiktoken` rank file, for profiling the encoder apart
//! from Python: `cargo run --release --example encode_bench -- RANKS PATTERN TEXT [RUNS]`
//! (PATTERN: gpt2, cl100k or o200k). Prints MB/s of thread CPU time per run; the
//! first run fills the piece caches. `SCAN=n` also times the pre-tokenizer alone, n times;
//! `THREADS=n` encodes `n` parts on `n` threads (`encode_batch`, whose threads share
//! one short cache) and prints wall-clock MB/s.

use bpekit::encode::{encode_batch, Encoder, Specials};

#[path = "common/ranks.rs"]
mod ranks;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        return Err("usage: encode_bench RANKS PATTERN TEXT [RUNS]".into());
    }
    let ranks = ranks::load(&args[1])?;
    let text = std::fs::read_to_string(&args[3])?;
    let runs: usize = args.get(4).map_or(Ok(5), |s| s.parse())?;
    if std::env::var_os("SCAN").is_some() {
        scan_only(&text, &args[2])?;
    }
    let encoder = Encoder::from_ranks(ranks, Vec::new(), &args[2])?;
    let none = Specials::default();
    let mb = text.len() as f64 / 1e6;
    if let Some(threads) = std::env::var("THREADS").ok().and_then(|t| t.parse().ok()) {
        return parallel(&encoder, &text, threads, runs);
    }
    for _ in 0..runs {
        let t0 = cpu_seconds();
        let ids = encoder.encode(&text, &none)?;
        let s = cpu_seconds() - t0;
        println!("{:.1} MB/s, {} ids", mb / s, ids.len());
    }
    Ok(())
}

/// `THREADS=n`: the text cut at newlines into `n` parts, encoded together by
/// `encode_batch` on `n` threads, every run; prints wall-clock MB/s of all parts
/// together, to tell the encoder's own scaling from the file pipeline's.
fn parallel(
    encoder: &Encoder,
    text: &str,
    threads: usize,
    runs: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut parts = Vec::new();
    let mut rest = text;
    for k in (1..=threads).rev() {
        let want = rest.len() / k;
        let cut = rest[want..].find('\n').map_or(rest.len(), |i| want + i + 1);
        parts.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    let none = Specials::default();
    for _ in 0..runs {
        let t0 = std::time::Instant::now();
        encode_batch(encoder, &parts, &none, threads)?;
        let secs = t0.elapsed().as_secs_f64();
        println!(
            "{:.1} MB/s wall, {threads} threads",
            text.len() as f64 / 1e6 / secs
        );
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
    let runs: usize = std::env::var("SCAN")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    for _ in 0..runs {
        let t0 = cpu_seconds();
        let (mut pieces, mut sum) = (0usize, 0usize);
        pretok.for_each_span(text, |start, end| {
            pieces += 1;
            sum ^= start.wrapping_mul(31) ^ end;
        })?;
        std::hint::black_box(sum);
        let s = cpu_seconds() - t0;
        println!(
            "scan only: {:.1} MB/s, {pieces} pieces",
            text.len() as f64 / 1e6 / s
        );
    }
    Ok(())
}
