//! [`auto_detect`]: find which launcher started this process and build its resolver.
//!
//! Sources are checked in this order, and the first **complete** one wins:
//!
//! | Source | Complete when | Resolver |
//! |---|---|---|
//! | TF_CONFIG | `TF_CONFIG` set and not blank | [`TfConfigClusterResolver`] |
//! | Slurm | `SLURM_PROCID`, `SLURM_STEP_NUM_TASKS`, `SLURM_STEP_NODELIST`, `SLURM_STEP_TASKS_PER_NODE` all set (and, under Open MPI, describing the MPI ranks) | [`SlurmClusterResolver`] |
//! | SageMaker | `SM_HOSTS` and `SM_CURRENT_HOST` set | [`SageMakerClusterResolver`] |
//! | Open MPI | `OMPI_COMM_WORLD_SIZE`, `OMPI_COMM_WORLD_RANK`, `OMPI_COMM_WORLD_LOCAL_SIZE` set, all ranks on this node | [`SimpleClusterResolver`] |
//! | Kubernetes Indexed Job | `JOB_COMPLETION_INDEX`, and `TFCLUSTER_K8S_COMPLETIONS` or `TFCLUSTER_K8S_REPLICATED_JOBS` (JobSet), set | [`KubernetesIndexedJobClusterResolver`] |
//! | Kubernetes (feature `kubernetes`) | `KUBERNETES_SERVICE_HOST` set | `KubernetesClusterResolver` |
//!
//! When none is complete, [`Error::NoClusterFound`] says what each source lacks.
//!
//! **Partial environments do not count.** A shell on an allocated Slurm node has some
//! `SLURM_*` variables but no step (jax-ml/jax#30073); every variable the resolver needs must
//! be there. **A source that is complete but invalid is an error**, not a reason to try the
//! next: a `TF_CONFIG` that is not valid JSON must not silently become a Slurm cluster.
//!
//! **Open MPI.** `mpirun` tells each rank its rank, the number of ranks and how many run on its
//! node, but not where the others run, so a spec can only be built when all ranks share this
//! node: job `worker` with rank `i` at `localhost:8888+i` (Slurm's default port base), this
//! process `worker`/rank, RPC layer `grpc`, and as master its own address (as the Slurm
//! resolver's). The spec is read once, when detected. Across nodes, set `TF_CONFIG` (or launch with
//! `srun`). When `mpirun` runs inside a Slurm allocation, its ranks inherit the variables of
//! the Slurm step that started Open MPI's daemons (one task per node), not of the ranks;
//! a Slurm step whose task count or rank disagrees with `OMPI_COMM_WORLD_SIZE` /
//! `OMPI_COMM_WORLD_RANK` is therefore not used (with `srun --mpi=pmix` both agree).
//!
//! **Kubernetes Indexed Jobs** need both Kubernetes' index and the size the manifest passes
//! down ([`k8s_indexed`]): a plain Indexed Job's pod (the index alone) is
//! not this source, and a pod with the size but no index is no Indexed Job's; the message
//! names the one missing. It comes before the API resolver, whose variable every pod has.
//!
//! **Kubernetes** gives TensorFlow's defaults: job `worker` is the pods labelled
//! `job-name=tensorflow`, port 8470, and no task of its own (a pod cannot tell its task;
//! wrap the resolver or build `KubernetesClusterResolver` yourself to set it).
//!
//! # Differences from TensorFlow
//!
//! TensorFlow has no auto-detection: its strategies default to [`TfConfigClusterResolver`].
//! The detection order and the Open MPI rule are this crate's.

pub use crate::cluster_source::ClusterSource;
use crate::k8s_indexed::{self, KubernetesIndexedJobClusterResolver};
use crate::sagemaker::SageMakerClusterResolver;
use crate::{ClusterResolver, Env, Error, SimpleClusterResolver, SlurmClusterResolver};
use crate::{TfConfig, TfConfigClusterResolver};

const SLURM_VARS: [&str; 4] = [
    "SLURM_PROCID",
    "SLURM_STEP_NUM_TASKS",
    "SLURM_STEP_NODELIST",
    "SLURM_STEP_TASKS_PER_NODE",
];
const SAGEMAKER_VARS: [&str; 2] = ["SM_HOSTS", "SM_CURRENT_HOST"];
const OMPI_SIZE: &str = "OMPI_COMM_WORLD_SIZE";
const OMPI_RANK: &str = "OMPI_COMM_WORLD_RANK";
const OMPI_LOCAL_SIZE: &str = "OMPI_COMM_WORLD_LOCAL_SIZE";
const OMPI_VARS: [&str; 3] = [OMPI_SIZE, OMPI_RANK, OMPI_LOCAL_SIZE];
const KUBERNETES_VAR: &str = "KUBERNETES_SERVICE_HOST";

/// The port of Open MPI rank 0 on one node; rank `i` uses `OMPI_PORT_BASE + i`.
pub const OMPI_PORT_BASE: u16 = 8888;

/// Which source describes this process: the first complete one, in the order of
/// [`ClusterSource::ALL`]. [`Error::NoClusterFound`] lists what each source lacks.
///
/// ```
/// use cluster_resolver::{ClusterSource, Env, detect};
///
/// let env = Env::from_iter([("SLURM_PROCID", "0"), ("SLURM_JOB_ID", "42")]);
/// let err = detect(&env).unwrap_err().to_string();
/// assert!(err.starts_with(
///     "no cluster found: TF_CONFIG: not set; Slurm: SLURM_STEP_NUM_TASKS, \
///      SLURM_STEP_NODELIST, SLURM_STEP_TASKS_PER_NODE not set; SageMaker: SM_HOSTS, \
///      SM_CURRENT_HOST not set; Open MPI: OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_RANK, \
///      OMPI_COMM_WORLD_LOCAL_SIZE not set; Kubernetes Indexed Job: JOB_COMPLETION_INDEX not \
///      set; Kubernetes: "
/// ), "{err}");
///
/// let env = Env::from_iter([("SM_HOSTS", r#"["algo-1"]"#), ("SM_CURRENT_HOST", "algo-1")]);
/// assert_eq!(detect(&env)?, ClusterSource::SageMaker);
/// # Ok::<(), cluster_resolver::Error>(())
/// ```
pub fn detect(env: &Env) -> Result<ClusterSource, Error> {
    let mut checked = Vec::with_capacity(ClusterSource::ALL.len());
    for source in ClusterSource::ALL {
        match why_not(source, env) {
            None => {
                tracing::debug!(%source, "auto-detect: this source describes the process");
                return Ok(source);
            }
            Some(reason) => {
                tracing::debug!(%source, %reason, "auto-detect: source incomplete, skipped");
                checked.push((source, reason));
            }
        }
    }
    Err(Error::NoClusterFound { checked })
}

/// The resolver of the source that describes this process (see [`detect`] and the table
/// above), checked once so that a broken `TF_CONFIG` or SageMaker variable is reported here
/// rather than at first use. The Slurm resolver is not resolved here (that may run
/// `nvidia-smi`); its errors come from its first call.
///
/// ```
/// use cluster_resolver::{Env, auto_detect};
///
/// # async fn run() -> Result<(), cluster_resolver::Error> {
/// let env = Env::from_iter([
///     ("OMPI_COMM_WORLD_SIZE", "2"),
///     ("OMPI_COMM_WORLD_RANK", "1"),
///     ("OMPI_COMM_WORLD_LOCAL_SIZE", "2"),
/// ]);
/// let resolver = auto_detect(&env).await?;
/// assert_eq!(resolver.cluster_spec().await?.to_json(), r#"{"worker":["localhost:8888","localhost:8889"]}"#);
/// assert_eq!(resolver.master(None, None, None).await?, "grpc://localhost:8889"); // this rank
/// assert_eq!(resolver.master(Some("worker"), Some(0), None).await?, "grpc://localhost:8888");
///
/// let env = Env::from_iter([("TF_CONFIG", "{not json")]);
/// let Err(err) = auto_detect(&env).await else { panic!("TF_CONFIG is not JSON") };
/// assert!(err.to_string().starts_with("environment variable TF_CONFIG is invalid at line 1, column 2"));
/// # Ok(())
/// # }
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(run()).unwrap();
/// ```
pub async fn auto_detect(env: &Env) -> Result<Box<dyn ClusterResolver>, Error> {
    Ok(match detect(env)? {
        ClusterSource::TfConfig => {
            TfConfig::from_env(env)?;
            Box::new(TfConfigClusterResolver::new(env.clone()))
        }
        ClusterSource::Slurm => Box::new(SlurmClusterResolver::new(env.clone())),
        ClusterSource::SageMaker => {
            let resolver = SageMakerClusterResolver::new(env.clone());
            resolver.tf_config()?;
            Box::new(resolver)
        }
        ClusterSource::OpenMpi => Box::new(open_mpi(env)?),
        ClusterSource::KubernetesIndexedJob => {
            let resolver = KubernetesIndexedJobClusterResolver::new(env.clone());
            resolver.tf_config()?;
            Box::new(resolver)
        }
        #[cfg(feature = "kubernetes")]
        ClusterSource::Kubernetes => Box::new(crate::KubernetesClusterResolver::new()),
        // `detect` never picks a source that is compiled out.
        #[cfg(not(feature = "kubernetes"))]
        ClusterSource::Kubernetes => {
            return Err(Error::NoClusterFound {
                checked: vec![(
                    ClusterSource::Kubernetes,
                    kubernetes(env).unwrap_or_default(),
                )],
            });
        }
    })
}

/// What `source` lacks in `env`, or `None` when it is complete.
fn why_not(source: ClusterSource, env: &Env) -> Option<String> {
    match source {
        ClusterSource::TfConfig => match env.get("TF_CONFIG") {
            Ok(None) => Some("not set".to_owned()),
            Ok(Some(v)) if v.trim().is_empty() => Some("set but empty".to_owned()),
            // Set but not UTF-8 is complete, so resolving it reports the error rather than
            // another source being picked.
            Ok(Some(_)) | Err(_) => None,
        },
        ClusterSource::Slurm => missing(env, &SLURM_VARS).or_else(|| slurm_is_not_the_mpi_job(env)),
        ClusterSource::SageMaker => missing(env, &SAGEMAKER_VARS),
        ClusterSource::OpenMpi => missing(env, &OMPI_VARS).or_else(|| ompi_spans_nodes(env)),
        ClusterSource::KubernetesIndexedJob => indexed_job(env),
        ClusterSource::Kubernetes => kubernetes(env),
    }
}

/// `"A, B not set"` for the variables of `vars` that are unset.
fn missing(env: &Env, vars: &[&str]) -> Option<String> {
    let unset: Vec<&str> = vars.iter().copied().filter(|v| !env.contains(v)).collect();
    (!unset.is_empty()).then(|| format!("{} not set", unset.join(", ")))
}

/// Under `mpirun`, a Slurm step whose size or rank differs from Open MPI's is the step of Open
/// MPI's daemons, which every rank of a node inherits.
fn slurm_is_not_the_mpi_job(env: &Env) -> Option<String> {
    let pairs = [
        ("SLURM_STEP_NUM_TASKS", OMPI_SIZE),
        ("SLURM_PROCID", OMPI_RANK),
    ];
    pairs.iter().find_map(|&(slurm, ompi)| {
        // Unreadable values are the source's own error, reported when it is built.
        let (s, o) = (env.get(slurm).ok()??, env.get(ompi).ok()??);
        (s.trim() != o.trim()).then(|| {
            format!(
                "{slurm}={s:?} but {ompi}={o:?}: the processes were started by mpirun, and the \
                 Slurm step is that of Open MPI's daemons"
            )
        })
    })
}

/// Open MPI gives no addresses, so only ranks that all run on this node make a cluster.
fn ompi_spans_nodes(env: &Env) -> Option<String> {
    let size = env.get(OMPI_SIZE).ok()??;
    let local = env.get(OMPI_LOCAL_SIZE).ok()??;
    // Unparsable values are the source's own error, reported when it is built.
    let (Ok(n), Ok(l)) = (size.trim().parse::<u64>(), local.trim().parse::<u64>()) else {
        return None;
    };
    (n != l).then(|| {
        format!(
            "ranks span several nodes ({OMPI_LOCAL_SIZE}={l} of {OMPI_SIZE}={n}) and Open MPI \
             does not give their addresses; set TF_CONFIG"
        )
    })
}

/// An Indexed Job's pod with the size its manifest passes down.
fn indexed_job(env: &Env) -> Option<String> {
    let sized =
        env.contains(k8s_indexed::COMPLETIONS) || env.contains(k8s_indexed::REPLICATED_JOBS);
    match (env.contains(k8s_indexed::JOB_COMPLETION_INDEX), sized) {
        (true, true) => None,
        (false, _) => Some(format!("{} not set", k8s_indexed::JOB_COMPLETION_INDEX)),
        (true, false) => Some(format!(
            "{} set, but neither {} nor {} (the manifest passes down the Job's size)",
            k8s_indexed::JOB_COMPLETION_INDEX,
            k8s_indexed::COMPLETIONS,
            k8s_indexed::REPLICATED_JOBS
        )),
    }
}

#[cfg(feature = "kubernetes")]
fn kubernetes(env: &Env) -> Option<String> {
    missing(env, &[KUBERNETES_VAR])
}

#[cfg(not(feature = "kubernetes"))]
fn kubernetes(env: &Env) -> Option<String> {
    Some(if env.contains(KUBERNETES_VAR) {
        format!(
            "{KUBERNETES_VAR} is set, but cluster-resolver was built without feature `kubernetes`"
        )
    } else {
        "not checked (feature `kubernetes` is off)".to_owned()
    })
}

/// The one-node Open MPI cluster: rank `i` at `localhost:8888+i`.
fn open_mpi(env: &Env) -> Result<SimpleClusterResolver, Error> {
    let size = number(env, OMPI_SIZE)?;
    let rank = number(env, OMPI_RANK)?;
    let invalid = |name: &str, value: u32, reason: String| Error::InvalidVariable {
        name: name.to_owned(),
        value: value.to_string(),
        reason,
    };
    if size == 0 || u32::from(u16::MAX - OMPI_PORT_BASE) < size - 1 {
        return Err(invalid(
            OMPI_SIZE,
            size,
            format!(
                "one node can hold 1 to {} ranks on ports from {OMPI_PORT_BASE}",
                u16::MAX - OMPI_PORT_BASE + 1
            ),
        ));
    }
    if rank >= size {
        return Err(invalid(OMPI_RANK, rank, format!("{OMPI_SIZE} is {size}")));
    }
    let addresses = (0..size).map(|i| format!("localhost:{}", u32::from(OMPI_PORT_BASE) + i));
    let spec = cluster_spec::ClusterSpec::builder()
        .job("worker", addresses)
        .build()?;
    let own = spec.task_address("worker", rank)?.to_owned();
    Ok(SimpleClusterResolver::new(spec)
        .with_master(own)
        .with_task("worker", rank)
        .with_rpc_layer("grpc"))
}

fn number(env: &Env, name: &str) -> Result<u32, Error> {
    let value = env.require(name)?;
    value.trim().parse().map_err(|_| Error::InvalidVariable {
        name: name.to_owned(),
        value,
        reason: "not a non-negative integer".to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> Env {
        Env::from_iter(vars.iter().copied())
    }

    const SLURM: [(&str, &str); 4] = [
        ("SLURM_PROCID", "1"),
        ("SLURM_STEP_NUM_TASKS", "2"),
        ("SLURM_STEP_NODELIST", "n[1-2]"),
        ("SLURM_STEP_TASKS_PER_NODE", "1(x2)"),
    ];

    #[test]
    fn order_is_tf_config_slurm_sagemaker_ompi() {
        let mut vars = vec![
            ("SM_HOSTS", "[\"a\"]"),
            ("SM_CURRENT_HOST", "a"),
            ("OMPI_COMM_WORLD_SIZE", "2"),
            ("OMPI_COMM_WORLD_RANK", "1"),
            ("OMPI_COMM_WORLD_LOCAL_SIZE", "2"),
        ];
        assert_eq!(detect(&env(&vars)).unwrap(), ClusterSource::SageMaker);
        vars.extend(SLURM);
        assert_eq!(detect(&env(&vars)).unwrap(), ClusterSource::Slurm);
        vars.push(("TF_CONFIG", " "));
        assert_eq!(detect(&env(&vars)).unwrap(), ClusterSource::Slurm);
        vars.push(("TF_CONFIG", "{}"));
        assert_eq!(detect(&env(&vars)).unwrap(), ClusterSource::TfConfig);
    }

    #[test]
    fn a_partial_slurm_environment_is_not_slurm() {
        let e = detect(&env(&[
            ("SLURM_PROCID", "0"),
            ("SLURM_STEP_NODELIST", "n1"),
        ]))
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("Slurm: SLURM_STEP_NUM_TASKS, SLURM_STEP_TASKS_PER_NODE not set;")
        );
    }

    #[test]
    fn mpirun_under_slurm_does_not_use_the_daemons_step() {
        let mut vars = SLURM.to_vec();
        vars.extend([
            ("OMPI_COMM_WORLD_SIZE", "4"),
            ("OMPI_COMM_WORLD_RANK", "3"),
            ("OMPI_COMM_WORLD_LOCAL_SIZE", "2"),
        ]);
        let e = detect(&env(&vars)).unwrap_err().to_string();
        assert!(
            e.contains("Slurm: SLURM_STEP_NUM_TASKS=\"2\" but OMPI_COMM_WORLD_SIZE=\"4\""),
            "{e}"
        );
        assert!(e.contains("Open MPI: ranks span several nodes"), "{e}");
        // srun --mpi=pmix: both describe the same ranks.
        let mut vars = SLURM.to_vec();
        vars.extend([("OMPI_COMM_WORLD_SIZE", "2"), ("OMPI_COMM_WORLD_RANK", "1")]);
        assert_eq!(detect(&env(&vars)).unwrap(), ClusterSource::Slurm);
    }

    #[tokio::test]
    async fn open_mpi_values_are_checked() {
        for (size, rank, says) in [
            ("x", "0", "OMPI_COMM_WORLD_SIZE=\"x\" is invalid"),
            (
                "2",
                "2",
                "OMPI_COMM_WORLD_RANK=\"2\" is invalid: OMPI_COMM_WORLD_SIZE is 2",
            ),
            ("0", "0", "OMPI_COMM_WORLD_SIZE=\"0\" is invalid"),
            ("60000", "0", "OMPI_COMM_WORLD_SIZE=\"60000\" is invalid"),
        ] {
            let e = env(&[
                (OMPI_SIZE, size),
                (OMPI_RANK, rank),
                (OMPI_LOCAL_SIZE, size),
            ]);
            let message = auto_detect(&e)
                .await
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(message.contains(says), "{size}/{rank}: {message}");
        }
    }

    #[tokio::test]
    async fn an_indexed_job_needs_its_index_and_size() {
        let pod = [
            ("KUBERNETES_SERVICE_HOST", "10.0.0.1"),
            ("JOB_COMPLETION_INDEX", "1"),
            ("HOSTNAME", "train-1"),
            ("TFCLUSTER_K8S_SUBDOMAIN", "train"),
            ("TFCLUSTER_K8S_COMPLETIONS", "2"),
        ];
        assert_eq!(
            detect(&env(&pod)).unwrap(),
            ClusterSource::KubernetesIndexedJob
        );
        let r = auto_detect(&env(&pod)).await.unwrap();
        assert_eq!(
            (r.task_type().as_deref(), r.task_id()),
            (Some("worker"), Some(1))
        );
        // A plain Indexed Job's pod, and a pod with a copied size but no index.
        let e = detect(&env(&pod[..4]))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        #[cfg(not(feature = "kubernetes"))]
        assert!(e.contains("Kubernetes Indexed Job: JOB_COMPLETION_INDEX set, but neither TFCLUSTER_K8S_COMPLETIONS nor TFCLUSTER_K8S_REPLICATED_JOBS"), "{e}");
        #[cfg(feature = "kubernetes")]
        assert!(e.is_empty(), "the API resolver: {e}");
        let no_index = [pod[4]];
        let e = detect(&env(&no_index)).unwrap_err().to_string();
        assert!(
            e.contains("Kubernetes Indexed Job: JOB_COMPLETION_INDEX not set;"),
            "{e}"
        );
        // Detected but broken: an error, not the next source.
        let broken = [
            pod[0],
            pod[1],
            ("HOSTNAME", "train-1-x7k2p"),
            pod[3],
            pod[4],
        ];
        let e = auto_detect(&env(&broken))
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            e.starts_with("environment variable HOSTNAME=\"train-1-x7k2p\" is invalid"),
            "{e}"
        );
    }

    #[cfg(feature = "kubernetes")]
    #[tokio::test]
    async fn kubernetes_gives_tensorflows_defaults() {
        let e = env(&[("KUBERNETES_SERVICE_HOST", "10.0.0.1")]);
        assert_eq!(detect(&e).unwrap(), ClusterSource::Kubernetes);
        let r = auto_detect(&e).await.unwrap();
        assert_eq!((r.task_type(), r.task_id()), (None, None));
        assert_eq!(r.rpc_layer().as_deref(), Some("grpc"));
    }

    #[cfg(not(feature = "kubernetes"))]
    #[test]
    fn kubernetes_needs_the_feature() {
        let e = detect(&env(&[("KUBERNETES_SERVICE_HOST", "10.0.0.1")])).unwrap_err();
        assert!(e.to_string().ends_with(
            "Kubernetes: KUBERNETES_SERVICE_HOST is set, but cluster-resolver was built without \
             feature `kubernetes`"
        ));
    }

    #[tokio::test]
    async fn broken_sources_are_errors_not_skipped() {
        let e = env(&[("SM_HOSTS", "[\"a\"]"), ("SM_CURRENT_HOST", "b")]);
        assert!(auto_detect(&e).await.is_err());
        let e = env(&[("TF_CONFIG", r#"{"cluster": {"w": ["a:1"]}}"#)]);
        let r = auto_detect(&e).await.unwrap();
        assert_eq!(r.cluster_spec().await.unwrap().jobs(), ["w"]);
    }
}
