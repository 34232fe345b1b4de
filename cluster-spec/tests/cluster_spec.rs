//! Integration tests of cluster-spec: one binary, one module per concern.

// Counts each thread's heap, so the `memory` tests can hold every parser to its stated factor.
#[global_allocator]
static METER: memory_meter::Meter = memory_meter::Meter;

mod cluster_spec {
    pub(crate) mod strategies;

    mod memory;
    mod messages;
    mod properties;
    mod semantics;
    mod tensorflow;
}
