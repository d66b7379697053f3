//! `moddesk_native.pvf`: the PVF functions Python calls (see `moddesk.pvf` for the reference).

use pyo3::prelude::*;

pub fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let module = crate::add_submodule(parent, "pvf")?;
    module.add("VERSION", moddesk_pvf::VERSION)?;
    Ok(())
}
