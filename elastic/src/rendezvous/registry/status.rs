//! What an operator sees of the jobs (`tfcluster status`): one job's [`JobStatus`], and the
//! [`JobSummary`] of each job a caller's token opens. Both read the registry and change
//! nothing.

use std::time::{Duration, Instant};

use super::Registry;
use super::calls::{Refusal, unknown_job};
use super::job::{Job, Phase};
use super::node::NodeState as Kept;
use crate::job_status::{
    JobPhase, JobState, JobStatus, JobSummary, MAX_LISTED, NodeState, NodeStatus,
};
use crate::rendezvous::credentials::Credentials;

impl Registry {
    /// Job `rdzv_id` as it is at `now`.
    pub(crate) fn status(&self, rdzv_id: &str, now: Instant) -> Result<JobStatus, Refusal> {
        let job = self.jobs.get(rdzv_id).ok_or_else(|| unknown_job(rdzv_id))?;
        let timeout = self.settings.timeout;
        let phase = match &job.phase {
            Phase::Running(round) => JobPhase::Running(round.round.clone()),
            Phase::Done(done) => JobPhase::Done(done.clone()),
            Phase::Forming => {
                let pending = job.pending(now, self.settings.last_call);
                JobPhase::Forming {
                    round: pending.round,
                    waiting: pending.waiting,
                    detail: pending.detail,
                }
            }
        };
        let mut nodes: Vec<_> = job.nodes.iter().collect();
        nodes.sort_unstable_by_key(|(_, n)| n.seq);
        let running = match &job.phase {
            Phase::Running(round) => Some(round),
            _ => None,
        };
        let nodes = nodes
            .into_iter()
            .map(|(id, node)| {
                let silent = now.saturating_duration_since(node.last_seen);
                NodeStatus {
                    node_id: id.clone(),
                    host: node.host.clone(),
                    name: node.name.clone(),
                    ports: node.ports.clone(),
                    state: match node.state {
                        Kept::Waiting(since) => {
                            NodeState::Waiting(now.saturating_duration_since(since))
                        }
                        Kept::Member => NodeState::Member {
                            rank: running.and_then(|r| r.rank(id)).unwrap_or_default(),
                        },
                        Kept::Idle => NodeState::Idle,
                    },
                    // Whole milliseconds, as the wire carries them.
                    silent: Duration::from_millis(silent.as_millis() as u64),
                    late: silent > timeout / 2,
                    notice: node.notice.as_ref().map(|n| n.as_of(now)),
                }
            })
            .collect();
        let mut status = JobStatus {
            rdzv_id: rdzv_id.to_owned(),
            job: job.incarnation,
            config: job.config.clone(),
            phase,
            rounds_formed: job.rounds_formed,
            restart_count: job.restart_count,
            nodes,
            last_failure: job.last_failure.clone(),
            last_end: job.ended.back().cloned(),
            task_restarts: job.task_restarts.clone(),
            hosts_aside: job.hosts_aside(now),
            churn: job.churn_status(now),
            heartbeat_timeout: timeout,
            digest: 0,
        };
        status.digest = status.compute_digest();
        Ok(status)
    }

    /// The jobs `proof` opens (the open ones, and those of its token), by id, at most
    /// [`MAX_LISTED`]; none when the rendezvous has a token of its own that `proof` lacks.
    pub(crate) fn summaries(&self, credentials: &Credentials) -> Vec<JobSummary> {
        let mut jobs: Vec<&Job> = self
            .jobs
            .values()
            .filter(|job| {
                // Hashes are keyed by the job: the call's, for each job in turn.
                let proof = credentials.proof(&job.id);
                self.check_server_token(&job.id, "ListJobs", &proof).is_ok()
                    && job.check_token("ListJobs", &proof).is_ok()
            })
            .collect();
        jobs.sort_unstable_by(|a, b| a.id.cmp(&b.id));
        jobs.truncate(MAX_LISTED);
        jobs.into_iter().map(Job::summary).collect()
    }
}

impl Job {
    fn summary(&self) -> JobSummary {
        let (state, round) = match &self.phase {
            Phase::Forming => (JobState::Forming, self.rounds_formed),
            Phase::Running(r) => (JobState::Running, r.number),
            Phase::Done(done) if done.succeeded => (JobState::Succeeded, done.round),
            Phase::Done(done) => (JobState::Failed, done.round),
        };
        JobSummary {
            rdzv_id: self.id.clone(),
            state,
            round,
            nodes: self.nodes.len() as u32,
            restart_count: self.restart_count,
            max_restarts: self.config.max_restarts(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::super::JoinArgs;
    use super::super::tests::{config, join_as, registry, report};
    use crate::job_status::{JobPhase, JobState, NodeState};
    use crate::outcome::{EndReason, TaskStatus};
    use crate::rendezvous::credentials::{Credentials, Digest, Proof};

    #[test]
    fn a_status_shows_the_round_its_members_the_restarts_and_the_last_failure() {
        let (mut r, t0, c) = (registry(), Instant::now(), config(2, 2, "", 3));
        join_as(&mut r, &c, "a", 1000, t0).unwrap();
        let forming = r.status("job", t0).unwrap();
        assert!(matches!(
            forming.phase,
            JobPhase::Forming {
                round: 1,
                waiting: 1,
                ..
            }
        ));
        assert!(matches!(forming.nodes[0].state, NodeState::Waiting(_)));
        join_as(&mut r, &c, "b", 1001, t0).unwrap();
        r.wait("job", "a", 0, t0).unwrap();
        let running = r.status("job", t0).unwrap();
        let JobPhase::Running(round) = &running.phase else {
            panic!("{:?}", running.phase)
        };
        assert_eq!(round.number(), 1);
        let ranks: Vec<_> = running.nodes.iter().map(|n| n.state).collect();
        assert_eq!(
            ranks,
            [NodeState::Member { rank: 0 }, NodeState::Member { rank: 1 }]
        );
        assert_ne!(running.digest, forming.digest);
        assert_eq!(r.status("job", t0).unwrap().digest, running.digest);

        report(&mut r, "b", 1, 0, TaskStatus::Exited(7), "oops\n", t0).unwrap();
        let failed = r.status("job", t0).unwrap();
        assert_eq!(failed.restart_count, 1);
        let last = failed.last_failure.as_ref().unwrap();
        assert_eq!(
            (last.node_id.as_str(), last.stderr_tail.as_str()),
            ("b", "oops\n")
        );
        assert_eq!(
            failed.last_end.as_ref().unwrap().reason,
            EndReason::TaskFailed
        );
        assert_ne!(failed.digest, running.digest);
    }

    #[test]
    fn a_silent_node_turns_late_and_changes_the_digest_though_time_alone_does_not() {
        let (mut r, t0, c) = (registry(), Instant::now(), config(2, 2, "", 0));
        join_as(&mut r, &c, "a", 1000, t0).unwrap();
        let first = r.status("job", t0).unwrap();
        let timeout = first.heartbeat_timeout;
        let soon = r.status("job", t0 + timeout / 4).unwrap();
        assert!(!soon.nodes[0].late);
        assert_eq!(soon.digest, first.digest, "waiting longer is no change");
        let late = r.status("job", t0 + timeout * 3 / 4).unwrap();
        assert!(late.nodes[0].late);
        assert_eq!(late.nodes[0].silent, timeout * 3 / 4);
        assert_ne!(late.digest, first.digest);
    }

    #[test]
    fn a_hung_task_ends_its_round_as_hung() {
        let (mut r, t0, c) = (registry(), Instant::now(), config(1, 1, "", 2));
        join_as(&mut r, &c, "a", 1000, t0).unwrap();
        r.wait("job", "a", 0, t0).unwrap();
        let hung = TaskStatus::Hung {
            quiet: Duration::from_secs(30),
        };
        report(&mut r, "a", 1, 0, hung, "", t0).unwrap();
        let end = r.status("job", t0).unwrap().last_end.unwrap();
        assert_eq!((end.reason, end.restart_count), (EndReason::TaskHung, 1));
    }

    #[test]
    fn a_list_holds_the_open_jobs_and_those_of_the_callers_token_only() {
        let (mut r, t0) = (registry(), Instant::now());
        let c = config(1, 2, "", 0);
        join_as(&mut r, &c, "a", 1000, t0).unwrap();
        let token = crate::Token::new("the token of job2").unwrap();
        let tokened = Proof {
            token: Some(Digest::keyed("job2", token.expose_secret())),
            secret: Some(Digest::keyed("job2", "secret of b")),
        };
        let args = JoinArgs {
            rdzv_id: "job2".into(),
            config: c.clone(),
            node_id: Some("b".into()),
            host: "127.0.0.1".into(),
            ports: vec![1001],
            name: String::new(),
            peer: None,
            credentials: Credentials::default(),
        };
        r.join(args, &tokened, t0).unwrap();
        let ids = |token: Option<&crate::Token>| -> Vec<(String, JobState)> {
            let credentials = Credentials {
                token: token.cloned(),
                secret: None,
            };
            r.summaries(&credentials)
                .into_iter()
                .map(|s| (s.rdzv_id, s.state))
                .collect()
        };
        assert_eq!(ids(None), [("job".to_owned(), JobState::Forming)]);
        // The token opens its own job; an open job refuses calls that carry a token.
        assert_eq!(ids(Some(&token)), [("job2".to_owned(), JobState::Forming)]);
        let other = crate::Token::new("another job's token").unwrap();
        assert!(ids(Some(&other)).is_empty());
    }
}
