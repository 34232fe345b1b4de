//! # remote-connect — the distributed connect layer (not yet implemented)
//!
//! This crate will hold `TaskServer` (the subset of TensorFlow's `WorkerService` and
//! `EagerService` that `tf.config.experimental_connect_to_cluster` needs) and
//! `Context::connect_to_cluster`. It is the only crate of the workspace that pulls tokio and
//! tonic. Until it lands it exports nothing; depend on `cluster-spec`, `device-filter` or
//! `cluster-resolver` for the layers that exist.
