//! [`ConnectTarget`]: what to connect to, a spec or a resolver, as TensorFlow's
//! `cluster_spec_or_resolver`.

use cluster_resolver::ClusterResolver;
use cluster_spec::ClusterSpec;

/// A cluster to connect to: a [`ClusterSpec`], or any [`ClusterResolver`] (whose master, when
/// `""` or `"local"`, makes the connect a no-op, as in TensorFlow).
///
/// Built with `From`: `ctx.connect_to_cluster(spec, opts)` or
/// `ctx.connect_to_cluster(&resolver, opts)`.
#[non_exhaustive]
pub enum ConnectTarget<'a> {
    /// A fixed cluster.
    Spec(ClusterSpec),
    /// A resolver, asked for the cluster and its master.
    Resolver(&'a dyn ClusterResolver),
}

impl From<ClusterSpec> for ConnectTarget<'_> {
    fn from(spec: ClusterSpec) -> Self {
        ConnectTarget::Spec(spec)
    }
}

impl<'a, R: ClusterResolver + 'a> From<&'a R> for ConnectTarget<'a> {
    fn from(resolver: &'a R) -> Self {
        ConnectTarget::Resolver(resolver)
    }
}

impl std::fmt::Debug for ConnectTarget<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnectTarget::Spec(spec) => f.debug_tuple("Spec").field(&spec.to_string()).finish(),
            ConnectTarget::Resolver(r) => {
                f.debug_tuple("Resolver").field(&r.environment()).finish()
            }
        }
    }
}

impl<'a> From<&'a dyn ClusterResolver> for ConnectTarget<'a> {
    fn from(resolver: &'a dyn ClusterResolver) -> Self {
        ConnectTarget::Resolver(resolver)
    }
}
