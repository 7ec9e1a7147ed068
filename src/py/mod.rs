//! PyO3 bindings: argument conversion and error mapping only. All work runs with
//! the GIL released; long jobs report progress and honour Ctrl-C via `progress`.

mod encode;
mod errors;
mod pretok;
mod progress;
mod text;
mod train;

use pyo3::prelude::*;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    pretok::register(m)?;
    train::register(m)?;
    encode::register(m)?;
    Ok(())
}
