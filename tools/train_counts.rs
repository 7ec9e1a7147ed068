//! Trains from a saved WordCounts file: `cargo run --release --example train_counts -- COUNTS VOCAB`.
//! For profiling the merge loop apart from counting.

use bpekit::count::WordCounts;
use bpekit::progress::Progress;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 {
        return Err("usage: train_counts COUNTS_FILE VOCAB_SIZE".into());
    }
    let counts = WordCounts::load(args[1].as_ref())?;
    let vocab: usize = args[2].parse()?;
    let start = std::time::Instant::now();
    let trained = bpekit::train::train(
        &counts,
        vocab,
        &["<|endoftext|>".to_string()],
        0,
        &Progress::new(),
    )?;
    eprintln!(
        "{} merges in {:.3} s",
        trained.merges.len(),
        start.elapsed().as_secs_f64()
    );
    Ok(())
}
