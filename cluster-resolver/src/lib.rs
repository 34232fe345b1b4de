//! # cluster-resolver — find the cluster from the environment
//!
//! Depends on `cluster-spec`. Work in progress: the [`ClusterResolver`] trait, [`Env`],
//! [`SimpleClusterResolver`] and the Slurm [`hostlist`] grammar are here; the TF_CONFIG, Slurm,
//! SageMaker, Union, Kubernetes, GCE and TPU resolvers follow.

mod env;
mod error;
pub mod hostlist;
mod resolver;
mod simple;

pub use env::Env;
pub use error::Error;
pub use resolver::{ClusterResolver, format_master_url};
pub use simple::SimpleClusterResolver;
