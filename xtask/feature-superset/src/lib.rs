//! Nothing: a crate whose manifest depends on every registry crate the workspace compiles,
//! with the features the whole workspace turns on, so that each per-feature clippy run that
//! selects it checks those dependencies as every other run does, and cargo checks them once.
//! `cargo xtask codegen` writes the manifest; `xtask/src/feature_superset.rs` says why.
