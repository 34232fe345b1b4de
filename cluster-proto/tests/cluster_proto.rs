//! Integration tests of cluster-proto: one binary, one module per concern.

mod cluster_proto {
    mod golden;
    mod tensorflow_descriptors;
}
