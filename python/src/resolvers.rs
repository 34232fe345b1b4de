//! The resolvers of `cluster-resolver` as Python classes, with TensorFlow's
//! `ClusterResolver` methods and TensorFlow's constructor arguments.
//!
//! Each class wraps one Rust resolver reading the process environment
//! ([`Env::process`], read afresh at each call, as TensorFlow's resolvers read `os.environ`).
//! `tfcluster.tf` subclasses TensorFlow's `ClusterResolver` around them.

use std::collections::BTreeMap;

use cluster_resolver::{
    ClusterResolver as Resolver, Env, KubernetesIndexedJobClusterResolver as KubernetesIndexedJob,
    SageMakerClusterResolver as SageMaker, SlurmClusterResolver as Slurm, TasksPerNode,
    TfConfigClusterResolver as TfConfig,
};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors;
use crate::runtime::block_on;
use crate::spec::ClusterSpec;

/// Adds the resolver classes and `auto_detect` to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<SlurmClusterResolver>()?;
    m.add_class::<TFConfigClusterResolver>()?;
    m.add_class::<SageMakerClusterResolver>()?;
    m.add_class::<KubernetesIndexedJobClusterResolver>()?;
    m.add_class::<ClusterResolver>()?;
    #[cfg(feature = "kubernetes")]
    m.add_class::<kubernetes::KubernetesClusterResolver>()?;
    m.add("HAS_KUBERNETES", cfg!(feature = "kubernetes"))?;
    m.add_function(wrap_pyfunction!(auto_detect, m)?)
}

/// A `#[pymethods]` block with TensorFlow's `ClusterResolver` methods over `self.inner` (any
/// [`Resolver`]), and the class's own methods after them (PyO3 allows one block per class).
macro_rules! resolver_methods {
    ($class:ident { $($own:tt)* }) => {
        #[pymethods]
        impl $class {
            /// The cluster, read from the environment again on every call. `RuntimeError` when
            /// the environment does not resolve to a cluster.
            fn cluster_spec(&self, py: Python<'_>) -> PyResult<ClusterSpec> {
                self.before_cluster_spec(py)?;
                let spec = block_on(py, || self.inner.cluster_spec())?;
                spec.map(|spec| ClusterSpec { spec }).map_err(errors::resolver)
            }

            /// The address of task `task_id` of job `task_type` (this task's by default, where
            /// the resolver knows it) as `"<rpc_layer>://host:port"`, or `""` when the resolver
            /// has no master. `ValueError` when the cluster has no such task.
            #[pyo3(signature = (task_type=None, task_id=None, rpc_layer=None))]
            fn master(
                &self,
                py: Python<'_>,
                task_type: Option<&str>,
                task_id: Option<u32>,
                rpc_layer: Option<&str>,
            ) -> PyResult<String> {
                block_on(py, || self.inner.master(task_type, task_id, rpc_layer))?
                    .map_err(errors::resolver)
            }

            /// This task's job, or `None` when the environment does not say.
            #[getter]
            fn task_type(&self) -> Option<String> {
                self.inner.task_type()
            }

            /// This task's index in its job, or `None` when the environment does not say.
            #[getter]
            fn task_id(&self) -> Option<u32> {
                self.inner.task_id()
            }

            /// The RPC layer `master` prefixes, e.g. `"grpc"`, or `None`.
            #[getter]
            fn rpc_layer(&self) -> Option<String> {
                self.inner.rpc_layer()
            }

            /// The environment the cluster runs in (`"google"`, ...), or `""`.
            #[getter]
            fn environment(&self) -> String {
                self.inner.environment()
            }

            /// Accelerators per device type of a task, e.g. `{"GPU": 2}`, as far as the source
            /// knows them (Slurm's GPUs per task); `{}` for none.
            #[pyo3(signature = (task_type=None, task_id=None))]
            fn num_accelerators(
                &self,
                py: Python<'_>,
                task_type: Option<&str>,
                task_id: Option<u32>,
            ) -> PyResult<BTreeMap<String, u32>> {
                block_on(py, || self.inner.num_accelerators(task_type, task_id))?
                    .map_err(errors::resolver)
            }

            fn __repr__(&self) -> String {
                format!(concat!(stringify!($class), "({})"), self.describe())
            }

            $($own)*
        }
    };
}

/// The cluster of the Slurm job step this process runs in, as Slurm placed its ranks.
///
/// TensorFlow's `SlurmClusterResolver` arguments and defaults: every task a `worker` (or
/// `jobs={"ps": 1, "worker": 3}`, ranks given to jobs in name order), `port_base` 8888 (a
/// node's i-th task listens on `port_base + i`), the node's GPUs counted
/// (`CUDA_VISIBLE_DEVICES`, else the driver) and shared evenly, tasks per node from Slurm
/// (or an int, or a dict of node to count, in node order), and with `auto_set_gpu`,
/// `cluster_spec()` sets this process's `CUDA_VISIBLE_DEVICES` to its task's GPUs.
///
/// Unlike TensorFlow's: tasks are listed in rank order on the nodes Slurm ran them on (the
/// step's node order and distribution, block or cyclic, checked against `SLURMD_NODENAME`),
/// not host names sorted as strings (`n10` before `n9`); hostlists keep zero padding and take
/// every Slurm form (`rack[1-2]-n[01-04]`); an empty `CUDA_VISIBLE_DEVICES` is no GPU, not
/// one; `task_type`/`task_id` are known before `cluster_spec()` runs.
#[pyclass(module = "tfcluster._native", frozen)]
pub struct SlurmClusterResolver {
    inner: Slurm,
    auto_set_gpu: bool,
    options: String,
}

impl SlurmClusterResolver {
    fn describe(&self) -> String {
        self.options.clone()
    }

    /// TensorFlow's `auto_set_gpu`: this task's GPUs into `os.environ["CUDA_VISIBLE_DEVICES"]`.
    fn before_cluster_spec(&self, py: Python<'_>) -> PyResult<()> {
        if !self.auto_set_gpu {
            return Ok(());
        }
        let devices = py
            .detach(|| self.inner.cuda_visible_devices())
            .map_err(errors::resolver)?;
        if let Some(devices) = devices {
            py.import("os")?
                .getattr("environ")?
                .set_item("CUDA_VISIBLE_DEVICES", devices)?;
        }
        Ok(())
    }
}

/// `tasks_per_node`: an int for every node, or a dict of node to count.
fn parse_tasks_per_node(value: &Bound<'_, PyAny>) -> PyResult<TasksPerNode> {
    if let Ok(n) = value.extract::<u32>() {
        return Ok(TasksPerNode::from(n));
    }
    if let Ok(dict) = value.cast::<PyDict>() {
        let nodes = dict
            .iter()
            .map(|(host, n)| Ok((host.extract::<String>()?, n.extract::<u32>()?)))
            .collect::<PyResult<Vec<_>>>()?;
        return Ok(TasksPerNode::per_node(nodes));
    }
    Err(PyTypeError::new_err(
        "tasks_per_node must be an int or a dict of node name to int",
    ))
}

resolver_methods!(SlurmClusterResolver {
    #[new]
    #[pyo3(signature = (
        jobs=None, port_base=8888, gpus_per_node=None, gpus_per_task=None,
        tasks_per_node=None, auto_set_gpu=true, rpc_layer=Some("grpc".to_owned())
    ), text_signature = "(jobs=None, port_base=8888, gpus_per_node=None, gpus_per_task=None, \
        tasks_per_node=None, auto_set_gpu=True, rpc_layer='grpc')")]
    fn new(
        jobs: Option<Vec<(String, u32)>>,
        port_base: u16,
        gpus_per_node: Option<u32>,
        gpus_per_task: Option<u32>,
        tasks_per_node: Option<&Bound<'_, PyAny>>,
        auto_set_gpu: bool,
        rpc_layer: Option<String>,
    ) -> PyResult<Self> {
        let options = format!(
            "jobs={jobs:?}, port_base={port_base}, gpus_per_node={gpus_per_node:?}, \
             gpus_per_task={gpus_per_task:?}, auto_set_gpu={auto_set_gpu}, rpc_layer={rpc_layer:?}"
        );
        let mut inner = Slurm::new(Env::process())
            .with_port_base(port_base)
            .with_auto_set_gpu(auto_set_gpu)
            .with_rpc_layer(rpc_layer.unwrap_or_default());
        if let Some(jobs) = jobs {
            inner = inner.with_jobs(jobs);
        }
        if let Some(gpus) = gpus_per_node {
            inner = inner.with_gpus_per_node(gpus);
        }
        if let Some(gpus) = gpus_per_task {
            inner = inner.with_gpus_per_task(gpus);
        }
        if let Some(tpn) = tasks_per_node {
            inner = inner.with_tasks_per_node(parse_tasks_per_node(tpn)?);
        }
        Ok(Self { inner, auto_set_gpu, options })
    }

    /// This task's `(task_type, task_id)` (TensorFlow's `get_task_info()`); `RuntimeError`
    /// when the step does not resolve.
    fn get_task_info(&self, py: Python<'_>) -> PyResult<(String, u32)> {
        py.detach(|| self.inner.task_info()).map_err(errors::resolver)
    }

    /// The `CUDA_VISIBLE_DEVICES` value for this task (`""` for no GPU), or `None` without
    /// `auto_set_gpu`; for the environment of a process this one starts.
    fn cuda_visible_devices(&self, py: Python<'_>) -> PyResult<Option<String>> {
        py.detach(|| self.inner.cuda_visible_devices())
            .map_err(errors::resolver)
    }
});

/// The cluster of the `TF_CONFIG` environment variable, as TensorFlow's
/// `TFConfigClusterResolver`: read again at every call; `task_type`, `task_id` and
/// `rpc_layer` given here override the document's (a `task_id` of 0 included).
///
/// Unlike TensorFlow's: an invalid document (not JSON, an index of `1.9`, an invalid address)
/// is a `RuntimeError` naming the variable, line, column and value.
#[pyclass(module = "tfcluster._native", frozen)]
pub struct TFConfigClusterResolver {
    inner: TfConfig,
}

impl TFConfigClusterResolver {
    fn describe(&self) -> String {
        String::new()
    }

    fn before_cluster_spec(&self, _py: Python<'_>) -> PyResult<()> {
        Ok(())
    }
}

resolver_methods!(TFConfigClusterResolver {
    #[new]
    #[pyo3(signature = (task_type=None, task_id=None, rpc_layer=None, environment=None))]
    fn new(
        task_type: Option<String>,
        task_id: Option<u32>,
        rpc_layer: Option<String>,
        environment: Option<String>,
    ) -> Self {
        let mut inner = TfConfig::new(Env::process());
        inner.set_task_type(task_type);
        inner.set_task_id(task_id);
        inner.set_rpc_layer(rpc_layer);
        if let Some(environment) = environment {
            inner = inner.with_environment(environment);
        }
        Self { inner }
    }
});

/// The cluster of an Amazon SageMaker training job (`SM_HOSTS`, `SM_CURRENT_HOST`): every
/// host a `worker` on `port` (2223), this host's task its index in `SM_HOSTS`.
///
/// Unlike TensorFlow's: a current host missing from `SM_HOSTS`, or a host listed twice, is a
/// `RuntimeError` rather than a wrong cluster.
#[pyclass(module = "tfcluster._native", frozen)]
pub struct SageMakerClusterResolver {
    inner: SageMaker,
}

impl SageMakerClusterResolver {
    fn describe(&self) -> String {
        format!("port={}", self.inner.port())
    }

    fn before_cluster_spec(&self, _py: Python<'_>) -> PyResult<()> {
        Ok(())
    }
}

resolver_methods!(SageMakerClusterResolver {
    #[new]
    #[pyo3(signature = (port=2223, task_type=None, task_id=None, rpc_layer=None, environment=None))]
    fn new(
        port: u16,
        task_type: Option<String>,
        task_id: Option<u32>,
        rpc_layer: Option<String>,
        environment: Option<String>,
    ) -> Self {
        let mut inner = SageMaker::new(Env::process()).with_port(port);
        inner.set_task_type(task_type);
        inner.set_task_id(task_id);
        inner.set_rpc_layer(rpc_layer);
        if let Some(environment) = environment {
            inner = inner.with_environment(environment);
        }
        Self { inner }
    }
});

/// The cluster of a Kubernetes Indexed Job (or JobSet) from the pod's environment alone, no
/// API access: `JOB_COMPLETION_INDEX`, `HOSTNAME` (`<job>-<index>`) and what the manifest
/// passes down (`TFCLUSTER_K8S_COMPLETIONS`, `TFCLUSTER_K8S_SUBDOMAIN`, optional
/// `TFCLUSTER_K8S_NAMESPACE`, `TFCLUSTER_K8S_PORT`, `TFCLUSTER_K8S_LAYOUT`; a JobSet's
/// `TFCLUSTER_K8S_REPLICATED_JOBS`). Task `i` is `<job>-<i>.<subdomain>:<port>`; `port` and
/// `layout` (`"chief=1,ps=2"`) take the place of their variables.
///
/// TensorFlow has no such resolver; an environment that is not an Indexed Job's pod is a
/// `RuntimeError` naming the variable, its value and the Kubernetes object to fix.
#[pyclass(module = "tfcluster._native", frozen)]
pub struct KubernetesIndexedJobClusterResolver {
    inner: KubernetesIndexedJob,
    options: String,
}

impl KubernetesIndexedJobClusterResolver {
    fn describe(&self) -> String {
        self.options.clone()
    }

    fn before_cluster_spec(&self, _py: Python<'_>) -> PyResult<()> {
        Ok(())
    }
}

resolver_methods!(KubernetesIndexedJobClusterResolver {
    #[new]
    #[pyo3(signature = (port=None, layout=None, task_type=None, task_id=None, rpc_layer=None))]
    fn new(
        port: Option<u16>,
        layout: Option<String>,
        task_type: Option<String>,
        task_id: Option<u32>,
        rpc_layer: Option<String>,
    ) -> Self {
        let options = format!("port={port:?}, layout={layout:?}");
        let mut inner = KubernetesIndexedJob::new(Env::process());
        if let Some(port) = port {
            inner = inner.with_port(port);
        }
        if let Some(layout) = layout {
            inner = inner.with_layout(layout);
        }
        inner.set_task_type(task_type);
        inner.set_task_id(task_id);
        inner.set_rpc_layer(rpc_layer);
        Self { inner, options }
    }
});

/// The resolver of whichever source launched this process, as `auto_detect()` found it;
/// `source` names it (`"TF_CONFIG"`, `"Slurm"`, `"SageMaker"`, `"Open MPI"`, `"Kubernetes"`).
#[pyclass(module = "tfcluster._native", frozen)]
pub struct ClusterResolver {
    inner: Box<dyn Resolver>,
    source: String,
}

impl ClusterResolver {
    fn describe(&self) -> String {
        format!("source={:?}", self.source)
    }

    fn before_cluster_spec(&self, _py: Python<'_>) -> PyResult<()> {
        Ok(())
    }
}

resolver_methods!(ClusterResolver {
    /// The source this resolver reads.
    #[getter]
    fn source(&self) -> String {
        self.source.clone()
    }
});

/// The resolver of the source that launched this process: the first complete one of
/// `TF_CONFIG`, a Slurm step, SageMaker, Open MPI's `mpirun` and (when built with Kubernetes)
/// a Kubernetes pod. `RuntimeError` saying what each source lacks when none is complete, or
/// naming the variable when the source found is broken.
#[pyfunction]
fn auto_detect(py: Python<'_>) -> PyResult<ClusterResolver> {
    let env = Env::process();
    let source = cluster_resolver::detect(&env).map_err(errors::resolver)?;
    let inner = block_on(py, || cluster_resolver::auto_detect(&env))?.map_err(errors::resolver)?;
    Ok(ClusterResolver {
        inner,
        source: source.to_string(),
    })
}

#[cfg(feature = "kubernetes")]
mod kubernetes {
    //! `KubernetesClusterResolver`, with the crate's feature `kubernetes`.

    use std::collections::BTreeMap;

    use cluster_resolver::KubernetesClusterResolver as Kubernetes;
    use cluster_resolver::kubernetes::PodAddress;
    use pyo3::exceptions::PyValueError;
    use pyo3::prelude::*;

    use super::{ClusterSpec, Resolver as _, block_on, errors};

    /// The cluster of the Kubernetes pods selected by labels, as TensorFlow's
    /// `KubernetesClusterResolver`: `job_to_label_mapping` maps each job to label selectors
    /// (default `{"worker": ["job-name=tensorflow"]}`), every pod listens on
    /// `tf_server_port` (8470).
    ///
    /// Unlike TensorFlow's: tasks are at the pod IP (`address="host_ip"` for TensorFlow's node
    /// IP), pods are listed in the client's namespace (or `namespace`), not all namespaces,
    /// and in-cluster configuration is tried before the kubeconfig.
    #[pyclass(module = "tfcluster._native", frozen)]
    pub struct KubernetesClusterResolver {
        inner: Kubernetes,
    }

    impl KubernetesClusterResolver {
        fn describe(&self) -> String {
            format!("jobs={:?}", self.inner.jobs())
        }

        fn before_cluster_spec(&self, _py: Python<'_>) -> PyResult<()> {
            Ok(())
        }
    }

    resolver_methods!(KubernetesClusterResolver {
        #[new]
        #[pyo3(signature = (
            job_to_label_mapping=None, tf_server_port=8470, rpc_layer=Some("grpc".to_owned()),
            namespace=None, address="pod_ip"
        ), text_signature = "(job_to_label_mapping=None, tf_server_port=8470, rpc_layer='grpc', \
            namespace=None, address='pod_ip')")]
        fn new(
            job_to_label_mapping: Option<BTreeMap<String, Vec<String>>>,
            tf_server_port: u16,
            rpc_layer: Option<String>,
            namespace: Option<String>,
            address: &str,
        ) -> PyResult<Self> {
            let mut inner = Kubernetes::new().with_port(tf_server_port);
            for (job, selectors) in job_to_label_mapping.unwrap_or_default() {
                inner = inner.with_job(job, selectors);
            }
            inner.set_rpc_layer(rpc_layer);
            if let Some(namespace) = namespace {
                inner = inner.with_namespace(namespace);
            }
            inner = inner.with_address(match address {
                "pod_ip" => PodAddress::PodIp,
                "host_ip" => PodAddress::HostIp,
                other => {
                    return Err(PyValueError::new_err(format!(
                        "address must be \"pod_ip\" or \"host_ip\", not {other:?}"
                    )));
                }
            });
            Ok(Self { inner })
        }
    });
}
