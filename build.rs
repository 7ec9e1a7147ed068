//! With the `python` feature: the `Py_3_*` cfgs of the interpreter being built for,
//! which `src/py/text.rs` needs to read a `str`'s storage as that version lays it out,
//! and `kept_ints` where `src/py/ints.rs` may keep ints of its own.

fn main() {
    #[cfg(feature = "python")]
    {
        pyo3_build_config::use_pyo3_cfgs();
        kept_ints();
    }
}

/// Sets `kept_ints` for the interpreters whose int objects `src/py/ints.rs` copies:
/// CPython 3.11-3.13, 64-bit, with the GIL, its full API and release reference counts
/// (not the limited API, PyPy, GraalPy, free-threaded or `Py_REF_DEBUG` builds).
#[cfg(feature = "python")]
fn kept_ints() {
    use pyo3_build_config::{BuildFlag, GilUsed, PythonAbiKind, PythonImplementation};
    println!("cargo:rustc-check-cfg=cfg(kept_ints)");
    let config = pyo3_build_config::get();
    let abi = config.target_abi();
    let version = (abi.version().major, abi.version().minor);
    let flags = &config.build_flags().0;
    let wide = std::env::var("CARGO_CFG_TARGET_POINTER_WIDTH").is_ok_and(|w| w == "64");
    if wide
        && abi.implementation() == PythonImplementation::CPython
        && abi.kind() == PythonAbiKind::VersionSpecific(GilUsed::GilEnabled)
        && ((3, 11)..(3, 14)).contains(&version)
        && !flags.contains(&BuildFlag::Py_GIL_DISABLED)
        && !flags.contains(&BuildFlag::Py_REF_DEBUG)
    {
        println!("cargo:rustc-cfg=kept_ints");
    }
}
