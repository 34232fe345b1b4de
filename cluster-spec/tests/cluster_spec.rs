//! Integration tests of cluster-spec: one binary, one module per concern.

mod cluster_spec {
    pub(crate) mod strategies;

    mod properties;
    mod semantics;
    mod tensorflow;
}
