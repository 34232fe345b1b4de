//! Integration tests of `cluster-resolver`: the crate's one test binary, one module per area.

// Counts each thread's heap, so the `memory` tests can hold every parser to its stated factor.
#[global_allocator]
static METER: memory_meter::Meter = memory_meter::Meter;

// The inline module makes `mod x;` resolve to `tests/cluster_resolver/x.rs` (and its
// submodules to `tests/cluster_resolver/x/`) without `#[path]` attributes.
mod cluster_resolver {
    mod auto_detect;
    mod cluster_file;
    #[cfg(feature = "gce")]
    mod gce;
    mod hostlist;
    mod k8s_indexed;
    #[cfg(feature = "kubernetes")]
    mod kubernetes;
    mod memory;
    mod messages;
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
    #[cfg(feature = "watch")]
    mod watch;
}
