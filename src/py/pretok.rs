//! `pretokenize(text, pattern)`: the pieces a pattern cuts, for inspection and tests.

use std::time::Instant;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::pretokenize::{patterns, unicode, Pretokenizer};

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

/// The block kernel the scanners use in this process: "avx512", "avx2" or "baseline"
/// (SSE2 on x86_64); `BPEKIT_SIMD=baseline` in the environment forces the baseline,
/// and `BPEKIT_SIMD=avx2` AVX2 on a CPU with AVX-512.
#[pyfunction]
fn scanner_kernel() -> &'static str {
    crate::pretokenize::Simd::detect().name()
}

/// The scanners' class of each code point in `start..stop`, as `regex` names them:
/// one little-endian u16 per code point, bit 0 `\p{L}`, 1 `\p{N}`, 2 `\p{Lu}`,
/// 3 `\p{Ll}`, 4 `\p{Lt}`, 5 `\p{Lm}`, 6 `\p{Lo}`, 7 `\p{M}`, 8 `\s`. For the
/// test that checks the generated tables against `regex` on all 1.1M code points.
/// `stop` is capped at 0x110000, one past the last code point.
#[pyfunction]
#[pyo3(signature = (start = 0, stop = 0x110000))]
fn _char_classes<'py>(py: Python<'py>, start: u32, stop: u32) -> Bound<'py, PyBytes> {
    let stop = stop.min(0x110000);
    let out: Vec<u8> = (start..stop.max(start))
        .flat_map(|cp| unicode::regex_classes(cp).to_le_bytes())
        .collect();
    PyBytes::new(py, &out)
}

/// Benchmark helper: splits `data` (UTF-8) with `pattern` `repeat` times, the GIL
/// released, and returns the piece count and the fastest run's seconds (the split
/// alone: no decoding, no Python objects). A named pattern uses its scanner; wrap
/// its text in `(?:...)` to time the regex engine on the same pattern.
#[pyfunction]
#[pyo3(signature = (data, pattern = "gpt2", repeat = 3))]
fn _time_pretokenize(
    py: Python<'_>,
    data: &[u8],
    pattern: &str,
    repeat: usize,
) -> PyResult<(usize, f64)> {
    let text = std::str::from_utf8(data)
        .map_err(|e| PyValueError::new_err(format!("data is not UTF-8: {e}")))?;
    let p = Pretokenizer::new(pattern)?;
    let result = py.detach(|| -> crate::Result<(usize, f64)> {
        let mut best = f64::INFINITY;
        let mut count = 0;
        for _ in 0..repeat.max(1) {
            let t0 = Instant::now();
            count = 0;
            p.for_each_piece(text, |piece| {
                count += 1;
                std::hint::black_box(piece);
            })?;
            best = best.min(t0.elapsed().as_secs_f64());
        }
        Ok((count, best))
    })?;
    Ok(result)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(pretokenize, m)?)?;
    m.add_function(wrap_pyfunction!(pretokenizer_engine, m)?)?;
    m.add_function(wrap_pyfunction!(scanner_kernel, m)?)?;
    m.add_function(wrap_pyfunction!(_char_classes, m)?)?;
    m.add_function(wrap_pyfunction!(_time_pretokenize, m)?)?;
    m.add("UNICODE_VERSION", unicode::UNICODE_VERSION)?;
    m.add("GPT2_PATTERN", patterns::GPT2)?;
    m.add("CL100K_PATTERN", patterns::CL100K)?;
    m.add("O200K_PATTERN", patterns::O200K)?;
    m.add("LLAMA3_PATTERN", patterns::LLAMA3)?;
    Ok(())
}
