//! # cluster-resolver — find the cluster from the environment
//!
//! Depends on `cluster-spec`. Work in progress: the Slurm `hostlist` grammar lands first.

mod error;
pub mod hostlist;

pub use error::Error;
