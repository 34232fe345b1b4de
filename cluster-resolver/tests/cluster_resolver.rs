//! Integration tests of `cluster-resolver`: the crate's one test binary, one module per area.

// The inline module makes `mod x;` resolve to `tests/cluster_resolver/x.rs` (and its
// submodules to `tests/cluster_resolver/x/`) without `#[path]` attributes.
mod cluster_resolver {
    mod auto_detect;
    #[cfg(feature = "gce")]
    mod gce;
    mod hostlist;
    #[cfg(any(feature = "kubernetes", feature = "gce"))]
    mod http_server;
    #[cfg(feature = "kubernetes")]
    mod kubernetes;
    mod multi_worker;
    mod runtime;
    mod sagemaker;
    mod slurm;
    mod strategies;
    mod tf_cases;
    mod tf_config;
    #[cfg(feature = "gce")]
    mod tpu;
    mod union;
}
