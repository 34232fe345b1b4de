//! [`UnionClusterResolver`]: several resolvers as one, as TensorFlow's `UnionResolver`.
//!
//! # Differences from TensorFlow
//!
//! - **Overrides are `Option`s**: an override of task id `0`, task type `""` or RPC layer `""`
//!   is used. TensorFlow's properties read `self._task_id or resolvers[0].task_id`, so a
//!   falsy override (`task_id=0`) silently falls through to the first resolver. The same
//!   holds for the `rpc_layer` argument of [`master`](ClusterResolver::master) with a task:
//!   `Some("")` means "no RPC layer" where TensorFlow's `rpc_layer or self._rpc_layer` falls
//!   through to the override (without a task the argument goes to the first resolver, whose
//!   own rule applies).
//! - **Each resolver's `cluster_spec` is called once per merge**; TensorFlow calls each twice
//!   (one pass to choose list or dict form, one to merge), so a resolver that changes between
//!   the calls can make it fail (`KeyError` on a job it did not see in the first pass).
//! - **A duplicate task index** is [`Error::DuplicateTasks`], with TensorFlow's wording
//!   followed by the job; TensorFlow raises `KeyError` without naming the job.
//! - There are no `**kwargs`, so TensorFlow's `Unexpected kwargs provided` and `TypeError`
//!   (argument not a resolver) cannot happen; "at least one resolver" is kept by the
//!   constructor taking the first one ([`UnionClusterResolver::new`]) or by
//!   [`UnionClusterResolver::from_resolvers`] returning [`Error::NoResolvers`].
//!
//! As in TensorFlow, [`master`](ClusterResolver::master) with both a task type and a task id
//! formats the merged spec's address with the `rpc_layer` argument, else the union's own
//! override — not the first resolver's RPC layer; without both, it is the first resolver's
//! `master` (given only the `rpc_layer` argument).

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use async_trait::async_trait;
use cluster_spec::ClusterSpec;

use crate::overrides::{Overrides, override_methods};
use crate::{ClusterResolver, format_master_url};

pub use crate::error::union::Error;

/// Several resolvers as one: their specs merged, the task, RPC layer, environment, master and
/// accelerators of the first, unless overridden (TensorFlow's `UnionClusterResolver`).
///
/// `with_task_type`, `with_task_id` and `with_rpc_layer` override the first resolver's; their
/// `set_*` with `None` give the first resolver's back. The environment cannot be overridden.
///
/// Merging, job by job, as TensorFlow: if every resolver that has the job gives it as a list
/// (dense, non-empty), the lists are concatenated in resolver order and re-indexed from 0;
/// if any gives it sparse or empty, every one is read by index (a list as `0..n`) and the
/// indices must not repeat ([`Error::DuplicateTasks`]). Jobs keep the order in which they
/// first appear.
///
/// ```
/// use cluster_resolver::{ClusterResolver, SimpleClusterResolver, UnionClusterResolver};
/// use cluster_spec::ClusterSpec;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let workers = ClusterSpec::builder().job("worker", ["w0:2222", "w1:2222"]).build()?;
/// let more = ClusterSpec::builder()
///     .job("worker", ["w2:2222"])
///     .job("ps", ["ps0:2222"])
///     .build()?;
/// let union = UnionClusterResolver::new(
///     SimpleClusterResolver::new(workers).with_task("worker", 1).with_rpc_layer("grpc"),
/// )
/// .with_resolver(SimpleClusterResolver::new(more))
/// .with_task_id(0); // an override of 0 is used (TensorFlow's `or` would drop it)
///
/// let spec = union.cluster_spec().await?;
/// assert_eq!(spec.task_address("worker", 2)?, "w2:2222");
/// assert_eq!(spec.jobs(), ["worker", "ps"]);
/// assert_eq!(union.task_type().as_deref(), Some("worker"));
/// assert_eq!(union.task_id(), Some(0));
/// assert_eq!(union.rpc_layer().as_deref(), Some("grpc"));
/// // As TensorFlow: an explicit task is formatted with the union's own override only.
/// assert_eq!(union.master(Some("ps"), Some(0), None).await?, "ps0:2222");
///
/// // Sparse jobs merge by index; a repeated index is an error naming job and index.
/// let a = ClusterSpec::builder().sparse_job("ps", [(1, "a:1")]).build()?;
/// let b = ClusterSpec::builder().job("ps", ["b:1", "c:1"]).build()?;
/// let clash = UnionClusterResolver::new(SimpleClusterResolver::new(a))
///     .with_resolver(SimpleClusterResolver::new(b));
/// assert_eq!(
///     clash.cluster_spec().await.unwrap_err().to_string(),
///     "Duplicate keys detected when merging two ClusterSpecs: {1} (job 'ps')"
/// );
/// # Ok(())
/// # }
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(run()).unwrap();
/// ```
pub struct UnionClusterResolver {
    /// Never empty: the constructors take at least one.
    resolvers: Vec<Box<dyn ClusterResolver>>,
    /// No environment override: the environment is always the first resolver's, as TF's.
    overrides: Overrides,
}

impl UnionClusterResolver {
    /// A union of `first` alone; add more with [`with_resolver`](Self::with_resolver).
    pub fn new(first: impl ClusterResolver + 'static) -> Self {
        Self::from_first(Box::new(first))
    }

    fn from_first(first: Box<dyn ClusterResolver>) -> Self {
        Self {
            resolvers: vec![first],
            overrides: Overrides::default(),
        }
    }

    /// A union of `resolvers`, in order; [`Error::NoResolvers`] if there are none.
    ///
    /// ```
    /// use cluster_resolver::ClusterResolver;
    /// use cluster_resolver::union::{Error, UnionClusterResolver};
    ///
    /// let none: Vec<Box<dyn ClusterResolver>> = Vec::new();
    /// assert!(matches!(UnionClusterResolver::from_resolvers(none), Err(Error::NoResolvers)));
    /// ```
    pub fn from_resolvers<I>(resolvers: I) -> Result<Self, Error>
    where
        I: IntoIterator<Item = Box<dyn ClusterResolver>>,
    {
        let mut resolvers = resolvers.into_iter();
        let mut union = Self::from_first(resolvers.next().ok_or(Error::NoResolvers)?);
        union.resolvers.extend(resolvers);
        Ok(union)
    }

    /// Adds a resolver after the others.
    pub fn with_resolver(self, resolver: impl ClusterResolver + 'static) -> Self {
        self.with_boxed(Box::new(resolver))
    }

    /// Adds an already boxed resolver (such as [`auto_detect`](crate::auto_detect())'s) after
    /// the others.
    pub fn with_boxed(mut self, resolver: Box<dyn ClusterResolver>) -> Self {
        self.resolvers.push(resolver);
        self
    }

    override_methods!(task_type, task_id, rpc_layer);

    /// The resolvers, in order.
    pub fn resolvers(&self) -> &[Box<dyn ClusterResolver>] {
        &self.resolvers
    }

    fn first(&self) -> &dyn ClusterResolver {
        // The constructors never leave the list empty.
        &*self.resolvers[0]
    }
}

impl fmt::Debug for UnionClusterResolver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UnionClusterResolver")
            .field("resolvers", &self.resolvers.len())
            .field("task_type", &self.overrides.task_type)
            .field("task_id", &self.overrides.task_id)
            .field("rpc_layer", &self.overrides.rpc_layer)
            .finish()
    }
}

#[async_trait]
impl ClusterResolver for UnionClusterResolver {
    async fn cluster_spec(&self) -> Result<ClusterSpec, crate::Error> {
        let mut specs = Vec::with_capacity(self.resolvers.len());
        for resolver in &self.resolvers {
            specs.push(resolver.cluster_spec().await?);
        }
        merge(&specs)
    }

    async fn master(
        &self,
        task_type: Option<&str>,
        task_id: Option<u32>,
        rpc_layer: Option<&str>,
    ) -> Result<String, crate::Error> {
        match (task_type, task_id) {
            (Some(job), Some(task)) => {
                let spec = self.cluster_spec().await?;
                let layer = rpc_layer.or(self.overrides.rpc_layer.as_deref());
                Ok(format_master_url(spec.task_address(job, task)?, layer))
            }
            _ => self.first().master(None, None, rpc_layer).await,
        }
    }

    fn task_type(&self) -> Option<String> {
        self.overrides.task_type_or(|| self.first().task_type())
    }

    fn task_id(&self) -> Option<u32> {
        self.overrides.task_id_or(|| self.first().task_id())
    }

    fn rpc_layer(&self) -> Option<String> {
        self.overrides.rpc_layer_or(|| self.first().rpc_layer())
    }

    fn environment(&self) -> String {
        self.first().environment()
    }

    async fn num_accelerators(
        &self,
        task_type: Option<&str>,
        task_id: Option<u32>,
    ) -> Result<BTreeMap<String, u32>, crate::Error> {
        self.first().num_accelerators(task_type, task_id).await
    }
}

/// One job of the merge: concatenated lists, or tasks by index.
enum Merged<'a> {
    List(Vec<&'a str>),
    ByIndex(BTreeMap<u32, &'a str>),
}

/// TensorFlow's merge (see [`UnionClusterResolver`]).
fn merge(specs: &[ClusterSpec]) -> Result<ClusterSpec, crate::Error> {
    // Pass 1: job order, and whether each job is merged as lists or by index. `as_dict` gives
    // a job as a list exactly when it is dense and has tasks.
    let mut order: Vec<&str> = Vec::new();
    let mut by_index: HashMap<&str, bool> = HashMap::new();
    for spec in specs {
        for job in spec.jobs() {
            let is_dict = spec.num_tasks(job)? == 0 || !spec.is_dense(job)?;
            by_index
                .entry(job)
                .and_modify(|dict| *dict |= is_dict)
                .or_insert_with(|| {
                    order.push(job);
                    is_dict
                });
        }
    }
    let mut merged: HashMap<&str, Merged<'_>> = by_index
        .iter()
        .map(|(&job, &dict)| {
            let empty = if dict {
                Merged::ByIndex(BTreeMap::new())
            } else {
                Merged::List(Vec::new())
            };
            (job, empty)
        })
        .collect();
    // Pass 2: merge, resolver by resolver.
    for spec in specs {
        for job in spec.jobs() {
            let tasks = spec.tasks(job)?;
            match merged.get_mut(job) {
                Some(Merged::List(list)) => list.extend(tasks.map(|(_, address)| address)),
                Some(Merged::ByIndex(map)) => {
                    let repeated: Vec<u32> = spec
                        .tasks(job)?
                        .map(|(index, _)| index)
                        .filter(|index| map.contains_key(index))
                        .collect();
                    if !repeated.is_empty() {
                        return Err(Error::DuplicateTasks {
                            job: job.to_owned(),
                            tasks: repeated,
                        }
                        .into());
                    }
                    map.extend(tasks);
                }
                // Every job was registered in pass 1.
                None => {}
            }
        }
    }
    let mut builder = ClusterSpec::builder();
    for job in order {
        builder = match merged.remove(job) {
            Some(Merged::List(list)) => builder.job(job, list),
            Some(Merged::ByIndex(map)) => builder.sparse_job(job, map),
            None => builder,
        };
    }
    Ok(builder.build()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SimpleClusterResolver;

    fn spec(json: &str) -> ClusterSpec {
        ClusterSpec::from_json(json).unwrap()
    }

    fn merged(jsons: &[&str]) -> Result<ClusterSpec, crate::Error> {
        merge(&jsons.iter().map(|j| spec(j)).collect::<Vec<_>>())
    }

    #[test]
    fn lists_concatenate_in_order() {
        let m = merged(&[
            r#"{"w": ["a:1", "b:1"]}"#,
            r#"{"p": ["x:1"], "w": ["c:1"]}"#,
        ])
        .unwrap();
        assert_eq!(
            m.job_tasks("w").unwrap(),
            [Some("a:1"), Some("b:1"), Some("c:1")]
        );
        assert_eq!(m.jobs(), ["w", "p"]);
    }

    #[test]
    fn any_dict_form_merges_by_index() {
        let m = merged(&[r#"{"w": ["a:1"]}"#, r#"{"w": {"3": "d:1"}}"#]).unwrap();
        assert_eq!(m.task_indices("w").unwrap(), [0, 3]);
        // An empty job is a dict in `as_dict`, so lists then collide at index 0.
        let e = merged(&[
            r#"{"w": ["a:1"]}"#,
            r#"{"w": []}"#,
            r#"{"w": ["b:1", "c:1"]}"#,
        ])
        .unwrap_err();
        assert!(
            matches!(
                &e,
                crate::Error::Union(Error::DuplicateTasks { job, tasks })
                    if job == "w" && tasks == &[0]
            ),
            "{e}"
        );
    }

    #[test]
    fn every_repeated_index_of_the_clashing_resolver_is_named() {
        let e = merged(&[
            r#"{"w": {"1": "a:1", "9": "b:1"}}"#,
            r#"{"w": {"1": "c:1", "9": "d:1", "4": "e:1"}}"#,
        ])
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "Duplicate keys detected when merging two ClusterSpecs: {1, 9} (job 'w')"
        );
    }

    #[tokio::test]
    async fn overrides_fall_back_to_the_first_resolver() {
        let first = SimpleClusterResolver::new(spec(r#"{"w": ["a:1", "b:1"]}"#))
            .with_task("w", 1)
            .with_rpc_layer("grpc")
            .with_environment("google")
            .with_num_accelerators([("GPU", 2)])
            .with_master("m:1");
        let union = UnionClusterResolver::new(first)
            .with_resolver(SimpleClusterResolver::new(spec(r#"{"p": ["c:1"]}"#)).with_task("p", 0));
        assert_eq!(union.task_type().as_deref(), Some("w"));
        assert_eq!(union.task_id(), Some(1));
        assert_eq!(union.rpc_layer().as_deref(), Some("grpc"));
        assert_eq!(union.environment(), "google");
        assert_eq!(union.num_accelerators(None, None).await.unwrap()["GPU"], 2);
        assert_eq!(union.master(None, None, None).await.unwrap(), "grpc://m:1");
        assert_eq!(union.master(Some("p"), Some(0), None).await.unwrap(), "c:1");
        let mut union = union.with_task_type("p").with_task_id(0).with_rpc_layer("");
        assert_eq!(union.task_type().as_deref(), Some("p"));
        assert_eq!(union.task_id(), Some(0));
        assert_eq!(union.rpc_layer().as_deref(), Some(""));
        union.set_rpc_layer(Some("x".into()));
        assert_eq!(
            union.master(Some("w"), Some(1), None).await.unwrap(),
            "x://b:1"
        );
        assert_eq!(
            union.master(None, Some(1), None).await.unwrap(),
            "grpc://m:1"
        );
        assert!(format!("{union:?}").contains("resolvers: 2"));
    }
}
