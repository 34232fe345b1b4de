//! The flags of `run --rdzv` beyond where the rendezvous is ([`crate::args::rendezvous`],
//! flattened here): the job's shape and the agent's timings, parsed at the edge so that
//! errors name the flag and the value.

use std::path::PathBuf;
use std::time::Duration;

use elastic::{JobConfig, Layout, NodeRange};
use remote_connect::Network;

use crate::args::bad_hosts::BadHostArgs;
use crate::args::preemption::PreemptionArgs;
use crate::args::rendezvous::target::Rendezvous;
use crate::args::rendezvous::timing::RdzvTimingArgs;
use crate::args::rendezvous::{JoinRole, RdzvTargetArgs};
use crate::failure::Failure;

/// `run --rdzv`'s flags.
#[derive(clap::Args, Debug)]
pub(crate) struct ElasticArgs {
    // Where the rendezvous is, and the job's id there.
    #[command(flatten)]
    pub(crate) target: RdzvTargetArgs<JoinRole>,
    /// With --rdzv: how many hosts the job runs on, `MIN:MAX` or `N`.
    #[arg(long, value_name = "MIN:MAX|N", default_value = "1", requires = "rdzv")]
    nodes: NodeRange,
    /// With --rdzv: how many tasks each host runs (at most 256). A round has at most 16,384
    /// tasks, and every task gets them all in its TF_CONFIG, which Linux caps at 128 KiB: at
    /// IPv4 addresses about 7,000 tasks fit, and a round past that fails the job as it forms,
    /// saying so.
    #[arg(long, value_name = "N", default_value_t = 1, requires = "rdzv")]
    tasks_per_node: u32,
    /// With --rdzv: the jobs placed first, e.g. `chief=1,ps=2`; every other task is a worker.
    #[arg(long, value_name = "JOBS", requires = "rdzv")]
    layout: Option<Layout>,
    /// With --rdzv: how many rounds failures (a task failing, a host lost) may end before
    /// the job fails.
    #[arg(long, value_name = "N", default_value_t = 3, requires = "rdzv")]
    max_restarts: u32,
    // Hosts left out: those whose tasks keep failing, and this one while its check fails.
    #[command(flatten)]
    pub(crate) bad_hosts: BadHostArgs,
    // The cloud's notices that this host goes, and when to leave ahead of them.
    #[command(flatten)]
    pub(crate) preemption: PreemptionArgs,
    // The rendezvous's timings (`run`'s group `rdzv_timing` requires --rdzv for them).
    #[command(flatten)]
    pub(crate) timing: RdzvTimingArgs,
    /// With --rdzv: how long to wait for each round to form.
    #[arg(long, value_name = "DUR", default_value = "10m", value_parser = humantime::parse_duration, requires = "rdzv")]
    pub(crate) join_timeout: Duration,
    /// With --rdzv: the address other hosts reach this host's tasks at (by default, the
    /// address the rendezvous sees this host at; on etcd, this host's address on its route
    /// to the first etcd member).
    #[arg(long, value_name = "ADDR", requires = "rdzv")]
    pub(crate) host: Option<String>,
    /// With --rdzv: where to write the job's first failure as JSON when it fails (a new file
    /// made 0600; a symlink at PATH is refused, as in a shared /tmp it may be another user's).
    #[arg(long, value_name = "PATH", requires = "rdzv")]
    pub(crate) error_file: Option<PathBuf>,
    /// With --rdzv HOST: when this agent serves the built-in rendezvous, accept connections
    /// only from these addresses or networks, comma-separated (`127.0.0.1`, `192.0.2.0/24`,
    /// `::1`, `2001:db8::/32`), as `serve --allow`; others are closed at once. Default: every
    /// host.
    #[arg(long, value_name = "LIST", value_delimiter = ',', requires = "rdzv")]
    pub(crate) rdzv_allow: Option<Vec<Network>>,
}

impl ElasticArgs {
    /// The job's config, as every host must give it.
    pub(crate) fn config(&self) -> Result<JobConfig, Failure> {
        let config = JobConfig::new(self.nodes, self.tasks_per_node)?;
        let config = match &self.layout {
            Some(layout) => config.with_layout(layout.clone())?,
            None => config,
        };
        Ok(config
            .with_max_restarts(self.max_restarts)
            .with_bad_hosts(self.bad_hosts.policy()))
    }

    /// The rendezvous the flags name (`None` without --rdzv); on etcd with --rdzv-timeout
    /// and --rdzv-last-call as the timings of a job this agent creates, and --rdzv-timeout
    /// as its lease's TTL.
    pub(crate) fn rendezvous(&self) -> Result<Option<Rendezvous>, Failure> {
        Ok(self
            .target
            .rendezvous()?
            .map(|rendezvous| match rendezvous {
                Rendezvous::Etcd(etcd) => Rendezvous::Etcd(
                    etcd.with_timeout(self.timing.timeout())
                        .with_last_call(self.timing.last_call()),
                ),
                built_in => built_in,
            }))
    }
}
