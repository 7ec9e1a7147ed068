//! Times loading a rank file into an encoder: `load_bench RANKS [ROUNDS]` (a
//! `.tiktoken` file, or GPT-2's `vocab.bpe` when the name ends in `.bpe`). Prints the
//! whole load as `get_encoding` does it (`Encoder::from_rank_file`) and, apart, the
//! parse alone (with its check for tokens given twice, which the load leaves to the
//! build).

use std::time::Instant;

use bpekit::encode::{Encoder, RankFormat as Format};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).ok_or("usage: load_bench RANKS [ROUNDS]")?;
    let rounds: usize = args.get(2).map_or(Ok(3), |r| r.parse())?;
    let format = match path.ends_with(".bpe") {
        true => Format::Gpt2,
        false => Format::Tiktoken,
    };
    for _ in 0..rounds {
        let t0 = Instant::now();
        let data = std::fs::read(path)?;
        let t1 = Instant::now();
        let ranks = format.parse(&data, path)?;
        let t2 = Instant::now();
        drop(ranks);
        let t3 = Instant::now();
        let pattern = std::env::var("PATTERN").unwrap_or_else(|_| "gpt2".into());
        let encoder = Encoder::from_rank_file(format, &data, path, Vec::new(), &pattern)?;
        let t4 = Instant::now();
        println!(
            "read {:.1} ms, parse {:.1} ms; load {:.1} ms",
            (t1 - t0).as_secs_f64() * 1e3,
            (t2 - t1).as_secs_f64() * 1e3,
            (t4 - t3).as_secs_f64() * 1e3,
        );
        drop(encoder);
    }
    Ok(())
}
