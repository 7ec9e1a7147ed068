//! Times loading a `.tiktoken` rank file into an encoder, by phase:
//! `load_bench RANKS [ROUNDS]`.

use std::time::Instant;

use bpekit::encode::{rankfile, Bpe};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).ok_or("usage: load_bench RANKS [ROUNDS]")?;
    let rounds: usize = args.get(2).map_or(Ok(3), |r| r.parse())?;
    for _ in 0..rounds {
        let t0 = Instant::now();
        let data = std::fs::read(path)?;
        let t1 = Instant::now();
        let ranks = rankfile::parse(&data, path)?;
        let t2 = Instant::now();
        let bpe = Bpe::from_ranks(ranks)?;
        let t3 = Instant::now();
        println!(
            "read {:.1} ms, parse {:.1} ms, build {:.1} ms",
            (t1 - t0).as_secs_f64() * 1e3,
            (t2 - t1).as_secs_f64() * 1e3,
            (t3 - t2).as_secs_f64() * 1e3,
        );
        drop(bpe);
    }
    Ok(())
}
