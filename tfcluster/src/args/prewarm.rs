//! `--prewarm` and `--no-prewarm`: whether `run --rdzv`'s agent keeps a warm interpreter per
//! local task of a Python command, and what it imports.

use launcher::Prewarm;

/// The warm-restart flags of `run`.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct PrewarmArgs {
    /// With --rdzv: the modules each local task's warm interpreter imports before its round,
    /// when CMD is a Python program (`python|python3|python3.N [-u -B -O ... -W ARG -X ARG]
    /// SCRIPT ARGS` or `... -m MODULE ARGS`; anything else starts cold). Default
    /// `tensorflow`. A module that cannot be found is an error before the agent joins; one
    /// that fails to import, a warning, and tasks start cold. Each warm interpreter holds
    /// what it imported (TensorFlow: about 0.5 GB resident; logged as `rss_mb`) while it
    /// waits. On GPU hosts the task's CUDA_VISIBLE_DEVICES is set when the interpreter
    /// starts: `import tensorflow` touches no device, but a module here that does would take
    /// its GPUs before its round. --local starts its tasks once: always cold.
    #[arg(
        long,
        value_name = "MODULE[,MODULE]",
        value_delimiter = ',',
        requires = "rdzv"
    )]
    prewarm: Option<Vec<String>>,
    /// With --rdzv: no warm interpreters; every task starts cold.
    #[arg(long, conflicts_with = "prewarm", requires = "rdzv")]
    no_prewarm: bool,
}

impl PrewarmArgs {
    /// `--prewarm`, `--no-prewarm`, or the default.
    pub(crate) fn prewarm(&self) -> Prewarm {
        match (&self.prewarm, self.no_prewarm) {
            (_, true) => Prewarm::Off,
            (Some(modules), false) => Prewarm::Modules(modules.clone()),
            (None, false) => Prewarm::Default,
        }
    }
}
