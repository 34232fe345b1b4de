//! `run --local chief=1,worker=2,ps=1`: the jobs of a cluster run on this machine, and the
//! loopback ports its tasks get.

use std::net::Ipv4Addr;
use std::str::FromStr;

use cluster_spec::job_counts::{self, JobCountsError};
use cluster_spec::{ClusterSpec, TaskId};
use launcher::ReservedPorts;

/// Jobs and their task counts, in the order given.
#[derive(Clone, Debug)]
pub(crate) struct LocalJobs(Vec<(String, u32)>);

impl FromStr for LocalJobs {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let jobs =
            job_counts::parse(text, |_| Ok::<(), JobCountsError>(())).map_err(|e| e.to_string())?;
        let jobs = Self(jobs);
        if !jobs
            .0
            .iter()
            .any(|(job, _)| job == "chief" || job == "worker")
        {
            return Err(
                "no chief and no worker: the job succeeds when the chief (or worker 0) does, \
                 so one is needed"
                    .into(),
            );
        }
        Ok(jobs)
    }
}

impl LocalJobs {
    /// Every task, job by job in the order given.
    pub(crate) fn tasks(&self) -> Vec<TaskId> {
        self.0
            .iter()
            .flat_map(|(job, count)| (0..*count).map(|index| TaskId::new(job.clone(), index)))
            .collect()
    }

    /// The task whose success is the job's: the chief, or worker 0 without one (the task
    /// TensorFlow's strategies treat as chief).
    pub(crate) fn leader(&self) -> TaskId {
        let has_chief = self.0.iter().any(|(job, _)| job == "chief");
        TaskId::new(if has_chief { "chief" } else { "worker" }, 0)
    }

    /// The cluster with every task on its own free port of 127.0.0.1, and those ports, held
    /// until the caller drops them just before the tasks start.
    pub(crate) fn cluster(&self) -> Result<(ClusterSpec, ReservedPorts), String> {
        let reserved = ReservedPorts::bind(Ipv4Addr::LOCALHOST.into(), self.tasks().len())
            .map_err(|e| format!("cannot find free ports on 127.0.0.1: {e}"))?;
        let mut ports = reserved.ports().into_iter();
        let spec = self
            .spec(|_| format!("127.0.0.1:{}", ports.next().unwrap_or_default()))
            .map_err(|e| e.to_string())?;
        Ok((spec, reserved))
    }

    fn spec(
        &self,
        mut address: impl FnMut(&TaskId) -> String,
    ) -> Result<ClusterSpec, cluster_spec::Error> {
        let mut builder = ClusterSpec::builder();
        for (job, count) in &self.0 {
            let addresses: Vec<String> = (0..*count)
                .map(|index| address(&TaskId::new(job.clone(), index)))
                .collect();
            builder = builder.job(job, addresses);
        }
        builder.build()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_keep_their_order_and_the_leader_is_the_chief_or_worker_0() {
        let jobs: LocalJobs = "chief=1,worker=2,ps=1".parse().unwrap();
        let names: Vec<String> = jobs.tasks().iter().map(TaskId::short_name).collect();
        assert_eq!(names, ["chief:0", "worker:0", "worker:1", "ps:0"]);
        assert_eq!(jobs.leader().short_name(), "chief:0");
        let jobs: LocalJobs = "ps=1,worker=3".parse().unwrap();
        assert_eq!(
            jobs.leader().device_prefix(),
            "/job:worker/replica:0/task:0"
        );
    }

    #[test]
    fn every_task_gets_its_own_port() {
        let (spec, _reserved) = "chief=1,worker=8,ps=3"
            .parse::<LocalJobs>()
            .unwrap()
            .cluster()
            .unwrap();
        let mut ports: Vec<&str> = spec
            .jobs()
            .into_iter()
            .flat_map(|job| spec.tasks(job).unwrap().map(|(_, address)| address))
            .collect();
        assert_eq!(ports.len(), 12);
        assert!(ports.iter().all(|a| a.starts_with("127.0.0.1:")));
        ports.sort_unstable();
        ports.dedup();
        assert_eq!(ports.len(), 12);
    }

    #[test]
    fn bad_jobs_are_named() {
        let err = |text: &str| text.parse::<LocalJobs>().unwrap_err();
        assert!(err("worker").contains("expected JOB=COUNT"));
        assert!(err("worker=0").contains("from 1"));
        assert!(
            err("worker=x").contains("count at byte 7"),
            "{}",
            err("worker=x")
        );
        assert!(err("ps=2").contains("no chief and no worker"));
        assert!(err("1bad=1").contains("1bad"), "{}", err("1bad=1"));
        assert!(!err("worker=1,worker=2").is_empty());
    }
}
