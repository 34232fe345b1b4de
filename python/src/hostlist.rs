//! Slurm hostlists: `cluster_resolver::hostlist`'s expand and compress.

use pyo3::prelude::*;

use crate::errors::invalid_input;

/// The hosts of a Slurm hostlist, in order, as Slurm expands it: zero padding kept per range
/// endpoint (`n[009-011]` is n009, n010, n011), several bracket groups (`rack[1-2]-n[1-2]`)
/// and commas inside brackets. Raises `ValueError` naming the byte where the list breaks.
#[pyfunction]
pub(crate) fn hostlist_expand(py: Python<'_>, hostlist: &str) -> PyResult<Vec<String>> {
    py.detach(|| cluster_resolver::hostlist::expand(hostlist))
        .map_err(|e| invalid_input(&e))
}

/// The shortest Slurm hostlist naming `hosts`, in their order (`["n1", "n2", "n3"]` is
/// `n[1-3]`); `expand(compress(hosts)) == hosts`.
#[pyfunction]
pub(crate) fn hostlist_compress(hosts: Vec<String>) -> String {
    cluster_resolver::hostlist::compress(&hosts)
}
