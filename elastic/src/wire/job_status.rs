//! An operator's view of a job on the wire: [`JobStatus`] and [`JobSummary`] to and from
//! their messages.

use std::time::Duration;

use super::{
    WireError, config_from_proto, config_to_proto, done_from_proto, done_to_proto, end_from_proto,
    end_to_proto, failure_from_proto, failure_to_proto, ms, ports_from_proto, round_to_proto,
};
use crate::job_status::{
    HostAside, JobPhase, JobState, JobStatus, JobSummary, MembershipChurn, NodeState, NodeStatus,
    TaskRestarts,
};
use crate::watched_round::WatchedRound;
use crate::{Error, proto};

pub(crate) fn job_status_to_proto(status: &JobStatus) -> proto::JobStatusResponse {
    use proto::job_status_response::Phase;
    use proto::node_status::State;
    let phase = match &status.phase {
        JobPhase::Forming {
            round,
            waiting,
            detail,
        } => Phase::Forming(proto::Pending {
            round: *round,
            waiting: *waiting,
            detail: detail.clone(),
        }),
        JobPhase::Running(round) => Phase::Running(round_to_proto(round, 0)),
        JobPhase::Done(done) => Phase::Done(done_to_proto(done)),
    };
    let nodes = status
        .nodes
        .iter()
        .map(|n| proto::NodeStatus {
            node_id: n.node_id.clone(),
            host: n.host.clone(),
            name: n.name.clone(),
            ports: n.ports.iter().map(|&p| u32::from(p)).collect(),
            state: Some(match n.state {
                NodeState::Waiting(for_) => State::WaitingMs(ms(for_)),
                NodeState::Member { rank } => State::Rank(rank),
                NodeState::Idle => State::Idle(true),
            }),
            silent_ms: ms(n.silent),
            late: n.late,
            notice: n.notice.as_ref().map(super::notice_to_proto),
        })
        .collect();
    proto::JobStatusResponse {
        rdzv_id: status.rdzv_id.clone(),
        job: status.job,
        config: Some(config_to_proto(&status.config)),
        phase: Some(phase),
        rounds_formed: status.rounds_formed,
        restart_count: status.restart_count,
        nodes,
        last_failure: status.last_failure.as_ref().map(failure_to_proto),
        last_end: status.last_end.as_ref().map(end_to_proto),
        task_restarts: status
            .task_restarts
            .iter()
            .map(task_restarts_to_proto)
            .collect(),
        hosts_aside: status
            .hosts_aside
            .iter()
            .map(|a| proto::HostAside {
                host: a.host.clone(),
                remaining_ms: ms(a.remaining),
                times: a.times,
                reason: a.reason.clone(),
            })
            .collect(),
        churn: Some(proto::MembershipChurn {
            ends: status.churn.ends,
            budget: status.churn.budget,
            refill_ms: ms(status.churn.refill),
            wait_ms: status.churn.wait.map_or(0, |w| ms(w).max(1)),
        }),
        heartbeat_timeout_ms: ms(status.heartbeat_timeout),
        digest: status.digest,
    }
}

/// A status from the wire, its running round decoded by `round` (which checks its cluster).
pub(crate) fn job_status_from_proto(
    status: proto::JobStatusResponse,
    round: impl FnOnce(proto::Round) -> Result<WatchedRound, Error>,
) -> Result<JobStatus, Error> {
    use proto::job_status_response::Phase;
    use proto::node_status::State;
    let phase = match status.phase {
        Some(Phase::Forming(p)) => JobPhase::Forming {
            round: p.round,
            waiting: p.waiting,
            detail: p.detail,
        },
        Some(Phase::Running(r)) => JobPhase::Running(round(r)?),
        Some(Phase::Done(done)) => JobPhase::Done(done_from_proto(done)?),
        None => {
            return Err(WireError::Missing {
                field: "the job's phase",
            }
            .into());
        }
    };
    let nodes = status
        .nodes
        .into_iter()
        .map(|n| {
            let state = match n.state {
                Some(State::WaitingMs(ms)) => NodeState::Waiting(Duration::from_millis(ms)),
                Some(State::Rank(rank)) => NodeState::Member { rank },
                Some(State::Idle(_)) => NodeState::Idle,
                None => {
                    return Err(Error::from(WireError::Missing {
                        field: "a node's state",
                    }));
                }
            };
            Ok(NodeStatus {
                ports: ports_from_proto(&n.ports)?,
                node_id: n.node_id,
                host: n.host,
                name: n.name,
                state,
                silent: Duration::from_millis(n.silent_ms),
                late: n.late,
                notice: n.notice.map(super::notice_from_proto),
            })
        })
        .collect::<Result<Vec<_>, Error>>()?;
    Ok(JobStatus {
        rdzv_id: status.rdzv_id,
        job: status.job,
        config: config_from_proto(status.config)?,
        phase,
        rounds_formed: status.rounds_formed,
        restart_count: status.restart_count,
        nodes,
        last_failure: status.last_failure.map(failure_from_proto).transpose()?,
        last_end: status.last_end.map(end_from_proto).transpose()?,
        task_restarts: status
            .task_restarts
            .into_iter()
            .map(task_restarts_from_proto)
            .collect::<Result<_, _>>()?,
        hosts_aside: status
            .hosts_aside
            .into_iter()
            .map(|a| HostAside {
                host: a.host,
                remaining: Duration::from_millis(a.remaining_ms),
                times: a.times,
                reason: a.reason,
            })
            .collect(),
        // A rendezvous before the budget sends none: no ends, no budget.
        churn: status
            .churn
            .map(|c| MembershipChurn {
                ends: c.ends,
                budget: c.budget,
                refill: Duration::from_millis(c.refill_ms),
                wait: (c.wait_ms > 0).then(|| Duration::from_millis(c.wait_ms)),
            })
            .unwrap_or_default(),
        heartbeat_timeout: Duration::from_millis(status.heartbeat_timeout_ms),
        digest: status.digest,
    })
}

pub(crate) fn task_restarts_to_proto(t: &TaskRestarts) -> proto::TaskRestarts {
    proto::TaskRestarts {
        job: t.job.clone(),
        index: t.index,
        restarts: t.restarts,
        failures: t.failures,
        last_failure: Some(failure_to_proto(&t.last_failure)),
    }
}

pub(crate) fn task_restarts_from_proto(t: proto::TaskRestarts) -> Result<TaskRestarts, Error> {
    let last_failure = t.last_failure.ok_or(WireError::Missing {
        field: "a restarted task's last failure",
    })?;
    Ok(TaskRestarts {
        job: t.job,
        index: t.index,
        restarts: t.restarts,
        failures: t.failures,
        last_failure: failure_from_proto(last_failure)?,
    })
}

pub(crate) fn summaries_to_proto(jobs: &[JobSummary]) -> proto::ListJobsResponse {
    proto::ListJobsResponse {
        jobs: jobs
            .iter()
            .map(|j| proto::JobSummary {
                rdzv_id: j.rdzv_id.clone(),
                phase: j.state.as_str().to_owned(),
                round: j.round,
                nodes: j.nodes,
                restart_count: j.restart_count,
                max_restarts: j.max_restarts,
            })
            .collect(),
    }
}

pub(crate) fn summaries_from_proto(
    answer: proto::ListJobsResponse,
) -> Result<Vec<JobSummary>, Error> {
    answer
        .jobs
        .into_iter()
        .map(|j| {
            let state = JobState::parse(&j.phase).ok_or(WireError::JobState { value: j.phase })?;
            Ok(JobSummary {
                rdzv_id: j.rdzv_id,
                state,
                round: j.round,
                nodes: j.nodes,
                restart_count: j.restart_count,
                max_restarts: j.max_restarts,
            })
        })
        .collect()
}
