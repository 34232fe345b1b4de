//! # cluster-spec
