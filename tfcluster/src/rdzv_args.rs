//! The flags of `run --rdzv`: where the rendezvous is (see [`crate::rdzv_target`]), the job's
//! shape and the agent's timings, parsed at the edge so that errors name the flag and the
//! value.

use std::path::PathBuf;
use std::time::Duration;

use elastic::{JobConfig, Layout, NodeRange};

use crate::args::Failure;
use crate::rdzv_target::{Backend, RdzvValue, Rendezvous};
use crate::rdzv_tls_args::RdzvTlsArgs;

/// `run --rdzv`'s flags.
#[derive(clap::Args, Debug)]
pub(crate) struct RdzvArgs {
    /// Run this host's share of an elastic job, meeting the other hosts at the rendezvous:
    /// `HOST[:PORT]`, the built-in one (port 29400 by default), which the agent on HOST
    /// serves when nothing answers there; or `etcd://HOST[:PORT][,HOST[:PORT]...]`, an etcd
    /// cluster's members (port 2379 by default), where every agent is equal and nothing is
    /// served.
    #[arg(long, value_name = "HOST[:PORT]|etcd://HOST[:PORT],...")]
    pub(crate) rdzv: Option<RdzvValue>,
    /// With --rdzv: which rendezvous --rdzv names; by default etcd for `etcd://…`, else the
    /// built-in one. With etcd, --rdzv may be a bare list, `h1:2379,h2:2379`, or etcdctl's
    /// `http://h1:2379,http://h2:2379`.
    #[arg(long, value_enum, value_name = "BACKEND", requires = "rdzv")]
    rdzv_backend: Option<Backend>,
    #[command(flatten)]
    rdzv_tls: RdzvTlsArgs,
    /// With --rdzv: how many hosts the job runs on, `MIN:MAX` or `N`.
    #[arg(long, value_name = "MIN:MAX|N", default_value = "1", requires = "rdzv")]
    nodes: NodeRange,
    /// With --rdzv: how many tasks each host runs.
    #[arg(long, value_name = "N", default_value_t = 1, requires = "rdzv")]
    tasks_per_node: u32,
    /// With --local or --rdzv: how many GPUs each task on this host gets, as its
    /// CUDA_VISIBLE_DEVICES: the host's `i`-th task (--local: job by job as given, each by
    /// index) gets the host's GPUs `i*K` to `(i+1)*K-1`, as this
    /// process's CUDA_VISIBLE_DEVICES names them (UUIDs and MIG ids kept), else as the driver
    /// counts them (NVML, else `nvidia-smi -L`); 0 hides every GPU. Fewer than K GPUs per
    /// task is an error. By default the host's GPUs are divided evenly (none each when there
    /// are fewer GPUs than tasks), and a host without GPUs leaves CUDA_VISIBLE_DEVICES as it
    /// is.
    #[arg(long, value_name = "K", requires = "launcher")]
    pub(crate) gpus_per_task: Option<u32>,
    /// With --rdzv: the jobs placed first, e.g. `chief=1,ps=2`; every other task is a worker.
    #[arg(long, value_name = "JOBS", requires = "rdzv")]
    layout: Option<Layout>,
    /// With --rdzv: how many rounds failures (a task failing, a host lost) may end before
    /// the job fails.
    #[arg(long, value_name = "N", default_value_t = 3, requires = "rdzv")]
    max_restarts: u32,
    /// With --rdzv: the job's id at the rendezvous, the same on every host.
    #[arg(long, value_name = "JOB", default_value = "default", requires = "rdzv")]
    pub(crate) rdzv_id: String,
    /// With --rdzv: how long a host may be silent before it is lost (on etcd: the TTL of its
    /// lease, in whole seconds), and how long an unreachable rendezvous is retried before the
    /// agent fails.
    #[arg(long, value_name = "DUR", default_value = "15s", value_parser = humantime::parse_duration, requires = "rdzv")]
    pub(crate) rdzv_timeout: Duration,
    /// With --rdzv: how long a round with at least MIN hosts waits for more. Set by the
    /// agent that serves the built-in rendezvous, or on etcd by the agent that creates the
    /// job (the first to join it).
    #[arg(long, value_name = "DUR", default_value = "3s", value_parser = humantime::parse_duration, requires = "rdzv")]
    pub(crate) rdzv_last_call: Duration,
    /// With --rdzv: how long to wait for each round to form.
    #[arg(long, value_name = "DUR", default_value = "10m", value_parser = humantime::parse_duration, requires = "rdzv")]
    pub(crate) join_timeout: Duration,
    /// With --rdzv: the address other hosts reach this host's tasks at (by default, the
    /// address the rendezvous sees this host at; on etcd, this host's address on its route
    /// to the first etcd member).
    #[arg(long, value_name = "ADDR", requires = "rdzv")]
    pub(crate) host: Option<String>,
    /// With --rdzv: where to write the job's first failure as JSON when it fails.
    #[arg(long, value_name = "PATH", requires = "rdzv")]
    pub(crate) error_file: Option<PathBuf>,
}

impl RdzvArgs {
    /// The job's config, as every host must give it.
    pub(crate) fn config(&self) -> Result<JobConfig, Failure> {
        let config = JobConfig::new(self.nodes, self.tasks_per_node)?;
        let config = match &self.layout {
            Some(layout) => config.with_layout(layout.clone())?,
            None => config,
        };
        Ok(config.with_max_restarts(self.max_restarts))
    }

    /// The rendezvous the flags name (`None` without --rdzv); on etcd with --rdzv-timeout
    /// and --rdzv-last-call as the timings of a job this agent creates, and --rdzv-timeout
    /// as its lease's TTL.
    pub(crate) fn rendezvous(&self) -> Result<Option<Rendezvous>, Failure> {
        let Some(value) = &self.rdzv else {
            return Ok(None);
        };
        Ok(Some(
            match Rendezvous::from_flags(value, self.rdzv_backend, &self.rdzv_tls)? {
                Rendezvous::Etcd(etcd) => Rendezvous::Etcd(
                    etcd.timeout(self.rdzv_timeout)
                        .last_call(self.rdzv_last_call),
                ),
                built_in => built_in,
            },
        ))
    }
}
