//! `--rdzv-timeout` and `--rdzv-last-call`: the rendezvous's timings, declared once for
//! `rendezvous serve` and `run --rdzv` (whose agent sets them when it serves the built-in
//! rendezvous, or creates the job on etcd), their defaults the rendezvous's own.

use std::time::Duration;

/// The rendezvous's timings.
#[derive(clap::Args, Debug, Clone, Copy)]
pub(crate) struct RdzvTimingArgs {
    /// How long a host may be silent before it is lost (on etcd: the TTL of its lease, in
    /// whole seconds), and how long `run --rdzv` retries an unreachable rendezvous before it
    /// fails — at the start too: start every host's agent within it of the one that serves
    /// the built-in rendezvous, or give a longer one. Agents heartbeat three times in it, so
    /// a host whose agent is gone (killed, its link down) is lost in about this long; 3s
    /// showed no false loss beside TensorFlow training on a busy 2-core machine
    /// (docs/benchmarks.md).
    #[arg(long, value_name = "DUR", default_value_t = elastic::DEFAULT_TIMEOUT.into())]
    rdzv_timeout: humantime::Duration,
    /// How long a round with at least MIN hosts waits for more. Set by whoever serves the
    /// built-in rendezvous (`rendezvous serve`, or the agent that serves it), or on etcd by
    /// the agent that creates the job (the first to join it).
    #[arg(long, value_name = "DUR", default_value_t = elastic::DEFAULT_LAST_CALL.into())]
    rdzv_last_call: humantime::Duration,
}

impl RdzvTimingArgs {
    /// How long a host may be silent.
    pub(crate) fn timeout(&self) -> Duration {
        *self.rdzv_timeout
    }

    /// How long a round past MIN waits for more hosts.
    pub(crate) fn last_call(&self) -> Duration {
        *self.rdzv_last_call
    }
}
