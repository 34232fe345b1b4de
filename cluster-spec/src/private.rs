//! What every crate of the workspace shares but is no crate's API: how an error is worded.
//! Reached from the other crates as `cluster_spec::__private` (see CONTRIBUTING.md, "API
//! style"); cluster-spec holds it because every other crate depends on it.

pub mod error_chain;
pub mod quote;
