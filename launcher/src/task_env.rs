//! [`TaskEnv`]: the environment a launcher gives a TensorFlow task — its `TF_CONFIG`, its
//! share of the host's GPUs, unbuffered Python output, Python's faulthandler armed — built
//! once for `run --local` and the elastic agent alike (which adds its round's variables).

use cluster_resolver::gpus::CUDA_VISIBLE_DEVICES;

use crate::gpus::{TF_FORCE_GPU_ALLOW_GROWTH, TaskGpus};

/// A task's environment variables, in the order they are set.
///
/// ```
/// use launcher::{TaskEnv, TaskGpus};
///
/// let env = TaskEnv::new(r#"{"cluster":{},"task":{}}"#.to_owned())
///     .with_var("TFCLUSTER_ROUND", "1")
///     .with_gpus(&TaskGpus::inherit(), 0)
///     .into_vars();
/// assert_eq!(env[0].0, "TF_CONFIG");
/// assert_eq!(env[1], ("TFCLUSTER_ROUND".to_owned(), "1".to_owned()));
/// ```
#[derive(Debug, Clone)]
pub struct TaskEnv(Vec<(String, String)>);

impl TaskEnv {
    /// An environment with `TF_CONFIG` set to `tf_config`.
    pub fn new(tf_config: String) -> Self {
        Self(vec![("TF_CONFIG".to_owned(), tf_config)])
    }

    /// Adds `name=value`.
    pub fn with_var(mut self, name: impl Into<String>, value: impl ToString) -> Self {
        self.0.push((name.into(), value.to_string()));
        self
    }

    /// Adds local task `local_task`'s GPUs as `CUDA_VISIBLE_DEVICES`, unless `gpus` leaves
    /// the variable as the launcher's own (a host without GPUs, every GPU shared); when every
    /// task shares every GPU, `TF_FORCE_GPU_ALLOW_GROWTH=true` too, unless the launcher's
    /// environment sets it.
    pub fn with_gpus(mut self, gpus: &TaskGpus, local_task: u32) -> Self {
        if let Some(devices) = gpus.of_task(local_task) {
            self.0.push((CUDA_VISIBLE_DEVICES.to_owned(), devices));
        }
        if gpus.shared() && std::env::var_os(TF_FORCE_GPU_ALLOW_GROWTH).is_none() {
            self.0
                .push((TF_FORCE_GPU_ALLOW_GROWTH.to_owned(), "true".to_owned()));
        }
        self
    }

    /// The variables, with Python's output unbuffered (unless the launcher's environment
    /// sets `PYTHONUNBUFFERED`) so a task's lines come through the pipes as they are printed,
    /// not when a stopped task's buffer would have been flushed; and Python's faulthandler
    /// armed (`PYTHONFAULTHANDLER=1`, unless the launcher's environment sets
    /// `PYTHONFAULTHANDLER`), so a task that crashes, or that the watchdog finds hung and
    /// sends SIGABRT, prints every thread's stack to its stderr before it dies.
    pub fn into_vars(mut self) -> Vec<(String, String)> {
        for name in ["PYTHONUNBUFFERED", "PYTHONFAULTHANDLER"] {
            if std::env::var_os(name).is_none() {
                self.0.push((name.to_owned(), "1".to_owned()));
            }
        }
        self.0
    }
}

/// What of local task `local_task`'s environment is the same in every round, its GPUs and
/// unbuffered output: a warm interpreter starts with it.
pub(crate) fn slot_env(local_task: u32, gpus: &TaskGpus) -> Vec<(String, String)> {
    TaskEnv(Vec::new()).with_gpus(gpus, local_task).into_vars()
}
