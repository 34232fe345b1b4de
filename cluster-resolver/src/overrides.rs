//! [`Overrides`]: the task type, task id, RPC layer and environment a resolver was told;
//! [`override_methods!`], the `with_*`/`set_*` methods that tell it; and
//! [`override_accessors!`], the trait's accessors of a resolver that has no other source for
//! them: each written once.
//!
//! The methods are inherent methods generated into each resolver's `impl` rather than a trait's
//! default methods, so callers keep writing `SimpleClusterResolver::new(spec).with_task(..)`
//! without importing anything. Each resolver lists only the methods it has: GCE fixes its task
//! type when built, Kubernetes and Simple take the job and index together, and Slurm and TPU
//! keep their own rules (an empty RPC layer is none; the task type is the job name).

use crate::TfConfig;

/// What a resolver was told, each in place of what its source says (`None`: the source's, or
/// nothing where the resolver has no source for it).
///
/// `Option`s, so that a task id of 0, or a task type or RPC layer of `""`, is an override like
/// any other; TensorFlow's `override or source` drops those.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Overrides {
    pub(crate) task_type: Option<String>,
    pub(crate) task_id: Option<u32>,
    pub(crate) rpc_layer: Option<String>,
    pub(crate) environment: Option<String>,
}

impl Overrides {
    /// The task type override, else what `source` reads (only read without one, as reading may
    /// parse a document or ask another resolver).
    pub(crate) fn task_type_or(&self, source: impl FnOnce() -> Option<String>) -> Option<String> {
        self.task_type.clone().or_else(source)
    }

    /// The task id override, else what `source` reads.
    pub(crate) fn task_id_or(&self, source: impl FnOnce() -> Option<u32>) -> Option<u32> {
        self.task_id.or_else(source)
    }

    /// The RPC layer override, else what `source` reads.
    pub(crate) fn rpc_layer_or(&self, source: impl FnOnce() -> Option<String>) -> Option<String> {
        self.rpc_layer.clone().or_else(source)
    }

    /// The environment override, else `""` (where TensorFlow returns `None`).
    pub(crate) fn environment(&self) -> String {
        self.environment.clone().unwrap_or_default()
    }

    /// The RPC layer `master` formats with: `argument`, else the override. As TensorFlow's
    /// `rpc_layer or self.rpc_layer`, an empty argument falls through too.
    // Only the network resolvers take an argument over their own layer this way.
    #[cfg(any(feature = "gce", feature = "kubernetes"))]
    pub(crate) fn master_rpc_layer<'a>(&'a self, argument: Option<&'a str>) -> Option<&'a str> {
        argument
            .filter(|layer| !layer.is_empty())
            .or(self.rpc_layer.as_deref())
    }

    /// `config` with the task type, task id and RPC layer overrides in place of its own.
    pub(crate) fn apply(&self, mut config: TfConfig) -> TfConfig {
        config.task_type = self.task_type_or(|| config.task_type.take());
        config.task_id = self.task_id_or(|| config.task_id);
        config.rpc_layer = self.rpc_layer_or(|| config.rpc_layer.take());
        config
    }
}

/// The override methods, as inherent methods over the resolver's field `overrides:
/// Overrides`, named by what they override; used inside the resolver's `impl` block:
///
/// ```text
/// impl TfConfigClusterResolver {
///     override_methods!(task_type, task_id, rpc_layer, environment);
/// }
/// ```
///
/// `task_type`, `task_id` and `rpc_layer` each give `with_*` and `set_*`; `task` gives
/// `with_task` and `set_task`, for resolvers that take the job and index together; and
/// `environment` gives `with_environment` (no resolver replaces it once built). What an
/// override takes the place of, and the resolver's defaults, are in each resolver's type docs;
/// the methods' docs say only what every resolver shares.
macro_rules! override_methods {
    ($($overridden:ident),+ $(,)?) => {
        $($crate::overrides::override_methods!(@ $overridden);)+
    };
    (@ task_type) => {
        /// Sets this process's job, which [`task_type`](crate::ClusterResolver::task_type)
        /// returns instead of the source's (see the type's docs).
        pub fn with_task_type(mut self, task_type: impl Into<String>) -> Self {
            self.overrides.task_type = Some(task_type.into());
            self
        }

        /// Replaces the job set with `with_task_type` (`None`: the source's, where the
        /// resolver reads one).
        pub fn set_task_type(&mut self, task_type: Option<String>) {
            self.overrides.task_type = task_type;
        }
    };
    (@ task_id) => {
        /// Sets this process's task index, which [`task_id`](crate::ClusterResolver::task_id)
        /// returns instead of the source's (see the type's docs); 0 is kept, where
        /// TensorFlow's `or` would drop it.
        pub fn with_task_id(mut self, task_id: u32) -> Self {
            self.overrides.task_id = Some(task_id);
            self
        }

        /// Replaces the task index set with `with_task_id` (`None`: the source's, where the
        /// resolver reads one).
        pub fn set_task_id(&mut self, task_id: Option<u32>) {
            self.overrides.task_id = task_id;
        }
    };
    (@ task) => {
        /// Sets this process's job and task index (see the type's docs); an index of 0 is
        /// kept, where TensorFlow's `or` would drop it.
        pub fn with_task(mut self, task_type: impl Into<String>, task_id: u32) -> Self {
            self.overrides.task_type = Some(task_type.into());
            self.overrides.task_id = Some(task_id);
            self
        }

        /// Replaces the job and task index set with `with_task` (either may be cleared).
        pub fn set_task(&mut self, task_type: Option<String>, task_id: Option<u32>) {
            self.overrides.task_type = task_type;
            self.overrides.task_id = task_id;
        }
    };
    (@ rpc_layer) => {
        /// Sets the RPC layer, e.g. `"grpc"`, which [`rpc_layer`](crate::ClusterResolver::rpc_layer)
        /// returns instead of the source's (see the type's docs).
        pub fn with_rpc_layer(mut self, rpc_layer: impl Into<String>) -> Self {
            self.overrides.rpc_layer = Some(rpc_layer.into());
            self
        }

        /// Replaces the RPC layer set with `with_rpc_layer` (`None`: the source's, where the
        /// resolver reads one).
        pub fn set_rpc_layer(&mut self, rpc_layer: Option<String>) {
            self.overrides.rpc_layer = rpc_layer;
        }
    };
    (@ environment) => {
        /// Sets what [`environment`](crate::ClusterResolver::environment) returns (TensorFlow's
        /// `environment` argument; `""` without it).
        pub fn with_environment(mut self, environment: impl Into<String>) -> Self {
            self.overrides.environment = Some(environment.into());
            self
        }
    };
}

/// The named [`ClusterResolver`](crate::ClusterResolver) accessors, answering with the field
/// `overrides: Overrides` alone; used inside the trait's `impl` block for what a resolver's
/// source does not say (anything of a given spec, pods or an instance group; SageMaker's RPC
/// layer; every environment), so what was set is all there is.
macro_rules! override_accessors {
    ($($method:ident),+ $(,)?) => {
        $($crate::overrides::override_accessors!(@ $method);)+
    };
    (@ task_type) => {
        fn task_type(&self) -> Option<String> {
            self.overrides.task_type.clone()
        }
    };
    (@ task_id) => {
        fn task_id(&self) -> Option<u32> {
            self.overrides.task_id
        }
    };
    (@ rpc_layer) => {
        fn rpc_layer(&self) -> Option<String> {
            self.overrides.rpc_layer.clone()
        }
    };
    (@ environment) => {
        fn environment(&self) -> String {
            self.overrides.environment()
        }
    };
}

pub(crate) use {override_accessors, override_methods};
