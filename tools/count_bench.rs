//! Counts the pre-tokens of a file, for profiling counting apart from Python:
//! `cargo run --release --example count_bench -- FILE [PATTERN] [THREADS] [RUNS]`.
//! Prints MB/s of wall time per run (`<|endoftext|>` is the special token). `CHUNK=n`
//! sets the chunk size in bytes (default: picked from the input size).

use bpekit::corpus::Source;
use bpekit::count::{count_sources, CountOptions};
use bpekit::pretokenize::Pretokenizer;
use bpekit::progress::Progress;
use bpekit::specials::SpecialMatcher;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let path = args
        .get(1)
        .ok_or("usage: count_bench FILE [PATTERN] [THREADS] [RUNS]")?;
    let pattern = args.get(2).map_or("gpt2", String::as_str);
    let threads: usize = args.get(3).map_or(Ok(1), |s| s.parse())?;
    let runs: usize = args.get(4).map_or(Ok(5), |s| s.parse())?;
    let specials = SpecialMatcher::new(&["<|endoftext|>".to_string()])?;
    let pretok = Pretokenizer::new(pattern)?;
    for _ in 0..runs {
        let sources = vec![Source::open(path.as_ref())?];
        let t0 = std::time::Instant::now();
        let options = CountOptions {
            num_threads: threads,
            chunk_size: std::env::var("CHUNK")
                .ok()
                .and_then(|c| c.parse().ok())
                .unwrap_or(0),
            ..CountOptions::default()
        };
        let counts = count_sources(&sources, &specials, &pretok, options, &Progress::new())?;
        let s = t0.elapsed().as_secs_f64();
        let mb = sources[0].bytes().len() as f64 / 1e6;
        println!("{:.1} MB/s, {} distinct", mb / s, counts.len());
    }
    Ok(())
}
