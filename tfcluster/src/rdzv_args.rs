//! The flags of `run --rdzv`: where the rendezvous is and the job's shape, parsed at the edge
//! so that clap's errors name the flag and the value.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use elastic::{JobConfig, Layout, NodeRange};

use crate::args::Failure;

/// The rendezvous port when `--rdzv` names none (torchrun's).
pub(crate) const DEFAULT_PORT: u16 = 29400;

/// `HOST[:PORT]`: a rendezvous endpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Endpoint {
    pub(crate) host: String,
    pub(crate) port: u16,
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

impl FromStr for Endpoint {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let bad = || format!("{text:?}: expected HOST[:PORT], e.g. node0:29400 or [::1]:29400");
        let (host, port) = if let Some(rest) = text.strip_prefix('[') {
            let (host, rest) = rest.split_once(']').ok_or_else(bad)?;
            match rest {
                "" => (host, None),
                _ => (host, Some(rest.strip_prefix(':').ok_or_else(bad)?)),
            }
        } else {
            match text.split_once(':') {
                Some((host, port)) if !port.contains(':') => (host, Some(port)),
                Some(_) => (text, None),
                None => (text, None),
            }
        };
        if host.is_empty() || host.chars().any(|c| c.is_whitespace() || c == '/') {
            return Err(bad());
        }
        let port =
            match port {
                None => DEFAULT_PORT,
                Some(port) => port.parse().ok().filter(|&p| p > 0).ok_or_else(|| {
                    format!("{text:?}: the port must be a number from 1 to 65535")
                })?,
            };
        Ok(Self {
            host: host.to_owned(),
            port,
        })
    }
}

/// `run --rdzv`'s flags.
#[derive(clap::Args, Debug)]
pub(crate) struct RdzvArgs {
    /// Run this host's share of an elastic job: join the rendezvous at `HOST[:PORT]` (port
    /// 29400 by default), which the agent on that host serves when none answers there.
    #[arg(long, value_name = "HOST[:PORT]")]
    pub(crate) rdzv: Option<Endpoint>,
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
    /// With --rdzv: how long a host may be silent before it is lost, and how long an
    /// unreachable rendezvous is retried.
    #[arg(long, value_name = "DUR", default_value = "15s", value_parser = humantime::parse_duration, requires = "rdzv")]
    pub(crate) rdzv_timeout: Duration,
    /// With --rdzv, for the rendezvous this agent serves: how long a round with at least MIN
    /// hosts waits for more.
    #[arg(long, value_name = "DUR", default_value = "3s", value_parser = humantime::parse_duration, requires = "rdzv")]
    pub(crate) rdzv_last_call: Duration,
    /// With --rdzv: how long to wait for each round to form.
    #[arg(long, value_name = "DUR", default_value = "10m", value_parser = humantime::parse_duration, requires = "rdzv")]
    pub(crate) join_timeout: Duration,
    /// With --rdzv: the address other hosts reach this host's tasks at (by default, the
    /// address the rendezvous sees this host at).
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_take_the_default_port() {
        let e: Endpoint = "node0".parse().unwrap();
        assert_eq!((e.host.as_str(), e.port), ("node0", 29400));
        let e: Endpoint = "10.0.0.1:1234".parse().unwrap();
        assert_eq!((e.host.as_str(), e.port), ("10.0.0.1", 1234));
        let e: Endpoint = "[::1]:5".parse().unwrap();
        assert_eq!((e.to_string(), e.port), ("[::1]:5".to_owned(), 5));
        let e: Endpoint = "::1".parse().unwrap();
        assert_eq!(e.to_string(), "[::1]:29400");
    }

    #[test]
    fn bad_endpoints_name_the_value() {
        for bad in ["", ":1", "h:0", "h:x", "[::1", "a b"] {
            let err = bad.parse::<Endpoint>().unwrap_err();
            assert!(err.contains(&format!("{bad:?}")), "{err}");
        }
    }
}
