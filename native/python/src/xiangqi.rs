//! `moddesk_native.xiangqi`: the engine functions Python calls (see `moddesk.xiangqi.core`).

use pyo3::prelude::*;

pub fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let module = crate::add_submodule(parent, "xiangqi")?;
    module.add("VERSION", moddesk_xiangqi::VERSION)?;
    Ok(())
}
