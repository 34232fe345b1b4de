//! [`ClusterSpec`]: `cluster_spec::ClusterSpec` for Python — a cluster validated at
//! construction, TensorFlow's `as_dict` and `ClusterDef` bytes out.

use cluster_spec::ClusterSpec as Spec;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};
use serde_json::Value;

use crate::errors::invalid_input;

/// A TensorFlow cluster: jobs, each a list of `host:port` addresses (dense) or a dict of task
/// index to address (sparse), validated when it is made.
///
/// `ClusterSpec(cluster)` takes a dict (`{"worker": ["w0:2222", "w1:2222"], "ps": {3: "p:2222"}}`),
/// the same as TF_CONFIG's `"cluster"` JSON text, another `ClusterSpec`, or any object with
/// `as_dict()` (a `tf.train.ClusterSpec`). Job names must follow TensorFlow's device-name
/// grammar, addresses be `host:port` (IPv6 in brackets), task indices non-negative: anything
/// else raises `ValueError` naming the job, task and value, where TensorFlow's Python accepts
/// it and its runtime aborts later.
///
/// Equality ignores job order and dense/sparse form, as TensorFlow's; `repr` is TensorFlow's.
#[pyclass(module = "tfcluster._native", frozen, eq)]
#[derive(Clone, PartialEq)]
pub struct ClusterSpec {
    pub(crate) spec: Spec,
}

impl ClusterSpec {
    /// The spec of any Python value `ClusterSpec()` accepts.
    fn parse(cluster: &Bound<'_, PyAny>) -> PyResult<Spec> {
        if let Ok(spec) = cluster.cast::<ClusterSpec>() {
            return Ok(spec.get().spec.clone());
        }
        let json = if let Ok(text) = cluster.cast::<PyString>() {
            text.to_cow()?.into_owned()
        } else {
            let py = cluster.py();
            let dict = if cluster.is_instance_of::<PyDict>() {
                cluster.clone()
            } else if cluster.hasattr("as_dict")? {
                cluster.call_method0("as_dict")?
            } else {
                return Err(PyTypeError::new_err(format!(
                    "ClusterSpec() takes a dict, JSON text or a ClusterSpec, not {}",
                    cluster.get_type().name()?
                )));
            };
            py.import("json")?
                .call_method1("dumps", (dict,))?
                .extract::<String>()?
        };
        Spec::from_json(&json).map_err(|e| invalid_input(&e))
    }
}

#[pymethods]
impl ClusterSpec {
    #[new]
    fn new(cluster: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(Self {
            spec: Self::parse(cluster)?,
        })
    }

    /// The spec of `ClusterDef` protobuf bytes (`tf.train.ClusterDef.SerializeToString()`).
    #[staticmethod]
    fn from_cluster_def(data: &[u8]) -> PyResult<Self> {
        Spec::decode_cluster_def(data)
            .map(|spec| Self { spec })
            .map_err(|e| invalid_input(&e))
    }

    /// TensorFlow's `as_dict()`: job -> list of addresses (dense) or {index: address} (sparse).
    fn as_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(py);
        let Value::Object(jobs) =
            serde_json::from_str(&self.spec.to_json()).map_err(|e| invalid_input(&e))?
        else {
            return Ok(dict);
        };
        for (job, tasks) in jobs {
            match tasks {
                Value::Object(sparse) => {
                    let tasks = PyDict::new(py);
                    for (index, address) in sparse {
                        let index: u32 = index.parse().map_err(|e| invalid_input(&e))?;
                        tasks.set_item(index, address.as_str())?;
                    }
                    dict.set_item(job, tasks)?;
                }
                Value::Array(dense) => {
                    let addresses = dense.iter().map(|a| a.as_str().unwrap_or_default());
                    dict.set_item(job, PyList::new(py, addresses)?)?;
                }
                _ => {}
            }
        }
        Ok(dict)
    }

    /// The cluster as TF_CONFIG's `"cluster"` JSON text.
    fn to_json(&self) -> String {
        self.spec.to_json()
    }

    /// The `tensorflow.ClusterDef` protobuf, encoded (jobs sorted by name, as TensorFlow):
    /// `tf.train.ClusterDef.FromString(spec.as_cluster_def())`.
    fn as_cluster_def<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.spec.encode_cluster_def())
    }

    /// The job names, in definition order.
    #[getter]
    fn jobs(&self) -> Vec<String> {
        self.spec.jobs().into_iter().map(str::to_owned).collect()
    }

    /// The number of tasks of `job`; `ValueError` when there is no such job.
    fn num_tasks(&self, job: &str) -> PyResult<usize> {
        self.spec.num_tasks(job).map_err(|e| invalid_input(&e))
    }

    /// The task indices of `job`, ascending.
    fn task_indices(&self, job: &str) -> PyResult<Vec<u32>> {
        self.spec.task_indices(job).map_err(|e| invalid_input(&e))
    }

    /// The address of task `task_index` of `job`.
    fn task_address(&self, job: &str, task_index: u32) -> PyResult<String> {
        self.spec
            .task_address(job, task_index)
            .map(str::to_owned)
            .map_err(|e| invalid_input(&e))
    }

    /// The addresses of `job` by index from 0 to the largest, `None` for a missing index.
    fn job_tasks(&self, job: &str) -> PyResult<Vec<Option<String>>> {
        self.spec
            .job_tasks(job)
            .map(|tasks| tasks.into_iter().map(|t| t.map(str::to_owned)).collect())
            .map_err(|e| invalid_input(&e))
    }

    fn __bool__(&self) -> bool {
        !self.spec.is_empty()
    }

    fn __repr__(&self) -> String {
        self.spec.to_string()
    }
}
