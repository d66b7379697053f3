//! `moddesk_native`: the Python face of the native core. The edge is deliberately small and
//! boring: functions that take buffers or plain values and return results, never one Python
//! object per archive entry. Each system registers its functions in a submodule of its own
//! (`moddesk_native.pvf`, `moddesk_native.xiangqi`), written in `pvf.rs` / `xiangqi.rs`.

use pyo3::prelude::*;

mod pvf;
mod pvf_index;
mod pvf_table;
mod pvf_text;
mod xiangqi;

#[pymodule]
fn moddesk_native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    pvf::register(module)?;
    xiangqi::register(module)?;
    Ok(())
}

/// Adds `child` to `parent` as the attribute `name` (`moddesk_native.<name>`).
fn add_submodule<'py>(parent: &Bound<'py, PyModule>, name: &str) -> PyResult<Bound<'py, PyModule>> {
    let child = PyModule::new(parent.py(), name)?;
    parent.add_submodule(&child)?;
    Ok(child)
}
