//! What a [`ConnectTarget`] names: a spec as given, or a resolver's cluster, asked for its
//! master first (TensorFlow's handling of a resolver in `connect_to_cluster`).

use cluster_resolver::ClusterResolver;
use cluster_spec::ClusterSpec;

use super::{ConnectOptions, ConnectTarget, master};
use crate::error::Error;

/// The cluster and default device a target names; `None` for a resolver whose master is
/// `""` or `"local"` (TensorFlow then does nothing).
pub(super) async fn resolve(
    target: ConnectTarget<'_>,
    options: &ConnectOptions,
) -> Result<Option<(ClusterSpec, Option<String>)>, Error> {
    match target {
        ConnectTarget::Spec(spec) => Ok(Some((spec, None))),
        ConnectTarget::Resolver(resolver) => resolve_resolver(resolver, options).await,
    }
}

async fn resolve_resolver(
    resolver: &dyn ClusterResolver,
    options: &ConnectOptions,
) -> Result<Option<(ClusterSpec, Option<String>)>, Error> {
    let master = resolver.master(None, None, None).await?;
    if master.is_empty() || master == "local" {
        return Ok(None);
    }
    let spec = resolver.cluster_spec().await?;
    // Checked before connecting, so a wrong master leaves nothing half done (TensorFlow
    // raises only after connecting).
    let default_device = if options.make_master_device_default {
        Some(master::default_device(&master::find(&spec, &master)?))
    } else {
        None
    };
    Ok(Some((spec, default_device)))
}
