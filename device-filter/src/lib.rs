//! # device-filter — TensorFlow device names and per-task device filters
//!
//! Depends on `cluster-proto` and `cluster-spec`. Work in progress.
