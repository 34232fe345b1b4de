//! `--gpus-per-task`: how a host's GPUs are shared among the tasks it runs, for both of
//! `run`'s launchers (`--local` and `--rdzv`), which split them the same way
//! ([`launcher::TaskGpus`]).

use launcher::GpusPerTask;

/// The GPU flags of `run`.
#[derive(clap::Args, Debug)]
pub(crate) struct GpuArgs {
    /// With --local or --rdzv: how many GPUs each task on this host gets, as its
    /// CUDA_VISIBLE_DEVICES: the host's `i`-th task (--local: job by job as given, each by
    /// index) gets the host's GPUs `i*K` to `(i+1)*K-1`, as this
    /// process's CUDA_VISIBLE_DEVICES names them (UUIDs and MIG ids kept), else as the driver
    /// counts them (NVML, else `nvidia-smi -L`); 0 hides every GPU. Fewer than K GPUs per
    /// task is an error. `all`: every task sees every GPU (TensorFlow's default for one
    /// process) and grows its GPU memory as it needs it (TF_FORCE_GPU_ALLOW_GROWTH=true
    /// unless set), so several tasks share one GPU. By default the host's GPUs are divided
    /// evenly (none each when there are fewer GPUs than tasks: give `all` to share them), and
    /// a host without GPUs leaves CUDA_VISIBLE_DEVICES as it is.
    // `launcher`: the group of --local and --rdzv, which `run` declares.
    #[arg(long, value_name = "K|all", requires = "launcher")]
    pub(crate) gpus_per_task: Option<GpusPerTask>,
}
