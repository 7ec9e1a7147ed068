//! Prints how many chunks a file is cut into for a file encode or a count, and the
//! sizes of the last ones (tapered for several threads): `chunk_sizes FILE
//! gpt2|cl100k|o200k TARGET THREADS`.
use bpekit::corpus::{Chunks, Source};
use bpekit::pretokenize::Kind;
use bpekit::specials::SpecialMatcher;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, path, kind, target, threads] = args.as_slice() else {
        return Err("usage: chunk_sizes FILE gpt2|cl100k|o200k TARGET THREADS".into());
    };
    let source = Source::open(std::path::Path::new(path))?;
    let kind = match kind.as_str() {
        "gpt2" => Kind::Gpt2,
        "cl100k" => Kind::Cl100k,
        "o200k" => Kind::O200k,
        other => {
            return Err(format!("unknown pattern kind {other:?}: gpt2, cl100k or o200k").into())
        }
    };
    let target: usize = target.parse()?;
    let threads: usize = threads.parse()?;
    let specials = SpecialMatcher::new(&["<|endoftext|>".to_string()])?;
    let sources = [source];
    let chunks = Chunks::new(&sources, &specials, target, kind).tapered(threads);
    let sizes: Vec<usize> = (0..)
        .map_while(|i| chunks.get(i))
        .map(|(_, r)| r.len())
        .collect();
    println!(
        "{} chunks; last 30: {:?}",
        sizes.len(),
        &sizes[sizes.len().saturating_sub(30)..]
    );
    Ok(())
}
