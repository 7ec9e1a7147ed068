//! `pretokenize(text, pattern)`: the pieces a pattern cuts, for inspection and tests.

use pyo3::prelude::*;

use crate::pretokenize::{patterns, Pretokenizer};

#[pyfunction]
#[pyo3(signature = (text, pattern = "gpt2"))]
fn pretokenize(py: Python<'_>, text: &str, pattern: &str) -> PyResult<Vec<String>> {
    let p = Pretokenizer::new(pattern)?;
    let pieces = py.detach(|| {
        p.pieces(text)
            .map(|v| v.into_iter().map(str::to_owned).collect::<Vec<_>>())
    })?;
    Ok(pieces)
}

/// The engine that serves a pattern: "gpt2", "cl100k", "o200k" (scanners) or "regex".
#[pyfunction]
#[pyo3(signature = (pattern = "gpt2"))]
fn pretokenizer_engine(pattern: &str) -> PyResult<&'static str> {
    use crate::pretokenize::Kind;
    Ok(match Pretokenizer::new(pattern)?.kind() {
        Kind::Gpt2 => "gpt2",
        Kind::Cl100k => "cl100k",
        Kind::O200k => "o200k",
        Kind::Custom => "regex",
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(pretokenize, m)?)?;
    m.add_function(wrap_pyfunction!(pretokenizer_engine, m)?)?;
    m.add("GPT2_PATTERN", patterns::GPT2)?;
    m.add("CL100K_PATTERN", patterns::CL100K)?;
    m.add("O200K_PATTERN", patterns::O200K)?;
    Ok(())
}
