//! With the `python` feature: the `Py_3_*` cfgs of the interpreter being built for,
//! which `src/py/text.rs` needs to read a `str`'s storage as that version lays it out.

fn main() {
    #[cfg(feature = "python")]
    pyo3_build_config::use_pyo3_cfgs();
}
