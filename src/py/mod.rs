//! PyO3 bindings: argument conversion, error mapping and Python-facing wording only.
//! Work runs with the GIL released, except calls of a few microseconds (a stream's
//! small `feed`), where releasing it would cost more than the work; long jobs report
//! progress and honour Ctrl-C via `progress`.

mod dataset;
mod encode;
mod encode_files;
mod errors;
mod inputs;
mod ints;
mod iterable;
mod load;
mod offsets;
mod options;
mod pretok;
mod progress;
mod text;
mod train;

use pyo3::prelude::*;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    pretok::register(m)?;
    inputs::register(m)?;
    train::register(m)?;
    encode::register(m)?;
    dataset::register(m)?;
    ints::register(m)?;
    Ok(())
}
