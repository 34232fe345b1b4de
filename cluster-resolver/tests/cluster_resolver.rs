//! Integration tests of `cluster-resolver`: the crate's one test binary, one module per area.

// The inline module makes `mod x;` resolve to `tests/cluster_resolver/x.rs` (and its
// submodules to `tests/cluster_resolver/x/`) without `#[path]` attributes.
mod cluster_resolver {
    mod hostlist;
    mod slurm;
}
