//! Times the encoder's miss path on the distinct pieces of a text, in first-seen
//! order (what a cold encode pays per new piece): `miss_bench RANKS PATTERN TEXT`.
//! `BUCKETS=1` also times the merges by the pieces' length.

use std::collections::HashSet;

use bpekit::encode::{merge_piece, Bpe, Scratch};
use bpekit::ids::NONE;

#[path = "common/ranks.rs"]
mod ranks;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        return Err("usage: miss_bench RANKS PATTERN TEXT".into());
    }
    let bpe = Bpe::from_ranks(ranks::load(&args[1])?)?;
    let text = std::fs::read_to_string(&args[3])?;
    let pretok = bpekit::pretokenize::Pretokenizer::new(&args[2])?;
    let mut seen = HashSet::new();
    let mut pieces: Vec<&[u8]> = Vec::new();
    pretok.for_each_piece(&text, |p| {
        if seen.insert(p) {
            pieces.push(p.as_bytes());
        }
    })?;
    let short = pieces.iter().filter(|p| p.len() <= 15).count();
    println!("{} distinct pieces, {short} of 1-15 bytes", pieces.len());
    for _ in 0..3 {
        let t0 = std::time::Instant::now();
        let whole = pieces.iter().filter(|p| bpe.id_of(p).is_some()).count();
        let t_whole = t0.elapsed().as_secs_f64();
        let keys: Vec<(u128, u64)> = pieces
            .iter()
            .filter(|p| p.len() <= 15)
            .map(|p| {
                let key = bpekit::piecekey::key_of(p);
                (key, bpekit::piecekey::hash(key))
            })
            .collect();
        let t0 = std::time::Instant::now();
        let found = keys
            .iter()
            .filter(|&&(k, h)| bpe.id_of_short(k, h).is_some())
            .count();
        println!(
            "by key: {:.0} ns/piece ({found} of {} found)",
            t0.elapsed().as_secs_f64() / keys.len() as f64 * 1e9,
            keys.len()
        );
        let mut scratch = Scratch::default();
        let mut out = Vec::new();
        let mut n_ids = 0;
        let t0 = std::time::Instant::now();
        for p in &pieces {
            out.clear();
            merge_piece(&bpe, p, NONE, &mut scratch, &mut out).expect("memory");
            n_ids += out.len();
        }
        let t_merge = t0.elapsed().as_secs_f64();
        let n = pieces.len() as f64;
        println!(
            "whole lookup {:.0} ns/piece ({whole} whole), merge {:.0} ns/piece",
            t_whole / n * 1e9,
            t_merge / n * 1e9
        );
        if std::env::var_os("BUCKETS").is_some() {
            for (lo, hi) in [
                (1, 8),
                (9, 16),
                (17, 32),
                (33, 64),
                (65, 128),
                (129, 1 << 30),
            ] {
                let some: Vec<&[u8]> = pieces
                    .iter()
                    .copied()
                    .filter(|p| p.len() >= lo && p.len() <= hi)
                    .collect();
                let t0 = std::time::Instant::now();
                for p in &some {
                    out.clear();
                    merge_piece(&bpe, p, NONE, &mut scratch, &mut out).expect("memory");
                }
                let t = t0.elapsed().as_secs_f64();
                println!(
                    "  {lo}-{hi} bytes: {} pieces, {:.0} ns/piece, {:.1} ms",
                    some.len(),
                    t / some.len().max(1) as f64 * 1e9,
                    t * 1e3
                );
            }
        }
        let bytes: usize = pieces.iter().map(|p| p.len()).sum();
        println!(
            "{:.2} bytes, {:.2} ids per piece",
            bytes as f64 / n,
            n_ids as f64 / n
        );
    }
    Ok(())
}
