//! Conversions between the wire messages (`proto`) and the crate's types, for the gRPC layer
//! and for the etcd store's records (prost messages too). A message from a peer is checked
//! here, once, and a bad one fails with the crate's [`Error`]:
//! [`Error::Wire`] when it breaks the protocol, the value's own error (say [`Error::Layout`])
//! when a job config fails its rules. The server refuses such a request with
//! `INVALID_ARGUMENT`, the client such an answer with [`Error::InvalidResponse`].

use std::time::Duration;

use crate::outcome::{EndReason, Failure, JobDone, RoundEnd, TaskStatus};
use crate::proto;
use crate::rendezvous::{Credentials, Found, JoinArgs, Joined, NodeSecret};
use crate::watched_round::WatchedRound;
use failure_policy::{DEFAULT_MAX_TASK_RESTARTS, Restart, RestartPolicy, RestartScope};

use crate::{BadHostPolicy, Error, JobConfig, Layout, Member, NodeRange};

pub use crate::error::wire::WireError;
pub(crate) use job_status::{
    job_status_from_proto, job_status_to_proto, summaries_from_proto, summaries_to_proto,
};
// The etcd backend's record keeps them.
#[cfg(feature = "etcd")]
pub(crate) use job_status::{task_restarts_from_proto, task_restarts_to_proto};

pub(crate) use host_notice::{notice_from_proto, notice_to_proto};

mod host_notice;
mod job_status;

/// A join as a request (an empty host: the rendezvous's default).
pub(crate) fn join_to_proto(join: &JoinArgs) -> proto::JoinRequest {
    proto::JoinRequest {
        rdzv_id: join.rdzv_id.clone(),
        config: Some(config_to_proto(&join.config)),
        host: join.host.clone(),
        ports: join.ports.iter().map(|&p| u32::from(p)).collect(),
        node_id: join.node_id.clone().unwrap_or_default(),
        name: join.name.clone(),
    }
}

/// A join request's arguments.
pub(crate) fn join_from_proto(req: proto::JoinRequest) -> Result<JoinArgs, Error> {
    Ok(JoinArgs {
        config: config_from_proto(req.config)?,
        ports: ports_from_proto(&req.ports)?,
        node_id: (!req.node_id.is_empty()).then_some(req.node_id),
        rdzv_id: req.rdzv_id,
        host: req.host,
        name: req.name,
        peer: None,
        // Credentials are never in a message: the caller adds what the call carried.
        credentials: Credentials::default(),
    })
}

pub(crate) fn joined_to_proto(joined: &Joined) -> proto::JoinResponse {
    proto::JoinResponse {
        node_id: joined.node_id.clone(),
        round: joined.round,
        note: joined.note.clone(),
        heartbeat_timeout_ms: joined.heartbeat_timeout.as_millis() as u64,
        host: joined.host.clone(),
        node_secret: joined
            .secret
            .as_ref()
            .map(|s| s.expose().to_owned())
            .unwrap_or_default(),
    }
}

/// A join's answer; a drawn secret that is no valid secret breaks the protocol.
pub(crate) fn joined_from_proto(joined: proto::JoinResponse) -> Result<Joined, Error> {
    let secret = match joined.node_secret {
        s if s.is_empty() => None,
        s => Some(NodeSecret::received(s).map_err(|_| WireError::Missing {
            field: "a valid node secret",
        })?),
    };
    Ok(Joined {
        node_id: joined.node_id,
        round: joined.round,
        note: joined.note,
        host: joined.host,
        heartbeat_timeout: Duration::from_millis(joined.heartbeat_timeout_ms),
        secret,
    })
}

/// A round on the wire, `rank` the asking node's.
pub(crate) fn round_to_proto(round: &WatchedRound, rank: u32) -> proto::Round {
    proto::Round {
        number: round.number(),
        restart_count: round.restart_count(),
        members: round.members().iter().map(member_to_proto).collect(),
        rank,
        cluster_json: round.cluster_json().to_string(),
        config: Some(config_to_proto(round.config())),
        job: round.job(),
    }
}

/// The answer of `WaitRound` and `WatchRounds`.
pub(crate) fn found_to_proto(found: &Found) -> proto::WaitRoundResponse {
    use proto::wait_round_response::Outcome;
    let outcome = match found {
        Found::Pending(p) => Outcome::Pending(proto::Pending {
            round: p.round,
            waiting: p.waiting,
            detail: p.detail.clone(),
        }),
        Found::Done(done) => Outcome::Done(done_to_proto(done)),
        Found::Round { round, rank } => Outcome::Round(round_to_proto(round, *rank)),
    };
    proto::WaitRoundResponse {
        outcome: Some(outcome),
    }
}

pub(crate) fn config_to_proto(config: &JobConfig) -> proto::JobConfig {
    proto::JobConfig {
        min_nodes: config.nodes().min(),
        max_nodes: config.nodes().max(),
        tasks_per_node: config.tasks_per_node(),
        layout: config
            .layout()
            .jobs()
            .into_iter()
            .map(|(job, count)| proto::LayoutJob {
                job: job.to_owned(),
                count,
            })
            .collect(),
        max_restarts: config.max_restarts(),
        restart_scope: scope_to_proto(config.restarts().scope) as i32,
        max_task_restarts: config.restarts().max_task_restarts,
        allow_crash_loops: config.restarts().allow_crash_loops,
        bad_host_failures: config.bad_hosts().failures,
        bad_host_window_ms: ms(config.bad_hosts().window),
        bad_host_cooldown_ms: ms(config.bad_hosts().cooldown),
    }
}

/// Milliseconds as the wire carries them.
pub(crate) fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn scope_to_proto(scope: RestartScope) -> proto::RestartScope {
    match scope {
        RestartScope::Auto => proto::RestartScope::Auto,
        RestartScope::Task => proto::RestartScope::Task,
        RestartScope::Round => proto::RestartScope::Round,
    }
}

fn scope_from_proto(value: i32) -> Result<RestartScope, WireError> {
    match proto::RestartScope::try_from(value) {
        Ok(proto::RestartScope::Auto) => Ok(RestartScope::Auto),
        Ok(proto::RestartScope::Task) => Ok(RestartScope::Task),
        Ok(proto::RestartScope::Round) => Ok(RestartScope::Round),
        Err(_) => Err(WireError::Unknown {
            field: "restart scope",
            value,
        }),
    }
}

pub(crate) fn in_place_to_proto(in_place: Option<Restart>) -> proto::InPlace {
    match in_place {
        Some(Restart::Task) => proto::InPlace::Task,
        Some(Restart::WithChief) => proto::InPlace::WithChief,
        None | Some(Restart::Round) => proto::InPlace::None,
    }
}

pub(crate) fn in_place_from_proto(value: i32) -> Result<Option<Restart>, WireError> {
    match proto::InPlace::try_from(value) {
        Ok(proto::InPlace::None) => Ok(None),
        Ok(proto::InPlace::Task) => Ok(Some(Restart::Task)),
        Ok(proto::InPlace::WithChief) => Ok(Some(Restart::WithChief)),
        Err(_) => Err(WireError::Unknown {
            field: "in-place restart",
            value,
        }),
    }
}

pub(crate) fn config_from_proto(config: Option<proto::JobConfig>) -> Result<JobConfig, Error> {
    let config = config.ok_or(WireError::Missing {
        field: "the job config",
    })?;
    let nodes = NodeRange::new(config.min_nodes, config.max_nodes)?;
    // The layout goes through its parser, the one place its rules live.
    let layout: Layout = config
        .layout
        .iter()
        .map(|j| format!("{}={}", j.job, j.count))
        .collect::<Vec<_>>()
        .join(",")
        .parse()?;
    let restarts = RestartPolicy {
        scope: scope_from_proto(config.restart_scope)?,
        // 0: a peer that predates the bound, or left it unset.
        max_task_restarts: match config.max_task_restarts {
            0 => DEFAULT_MAX_TASK_RESTARTS,
            n => n,
        },
        allow_crash_loops: config.allow_crash_loops,
    };
    // 0: a peer that predates the rule, or left a field unset.
    let default = BadHostPolicy::default();
    let or = |value: u64, default: Duration| match value {
        0 => default,
        ms => Duration::from_millis(ms),
    };
    let bad_hosts = BadHostPolicy {
        failures: match config.bad_host_failures {
            0 => default.failures,
            n => n,
        },
        window: or(config.bad_host_window_ms, default.window),
        cooldown: or(config.bad_host_cooldown_ms, default.cooldown),
    };
    Ok(JobConfig::new(nodes, config.tasks_per_node)?
        .with_layout(layout)?
        .with_max_restarts(config.max_restarts)
        .with_restarts(restarts)
        .with_bad_hosts(bad_hosts))
}

pub(crate) fn ports_from_proto(ports: &[u32]) -> Result<Vec<u16>, Error> {
    ports
        .iter()
        .map(|&p| {
            u16::try_from(p)
                .ok()
                .filter(|&p| p != 0)
                .ok_or(Error::Wire(WireError::Port { port: p }))
        })
        .collect()
}

pub(crate) fn member_to_proto(member: &Member) -> proto::Member {
    proto::Member {
        node_id: member.node_id.clone(),
        host: member.host.clone(),
        ports: member.ports.iter().map(|&p| u32::from(p)).collect(),
        name: member.name.clone(),
    }
}

pub(crate) fn member_from_proto(member: proto::Member) -> Result<Member, Error> {
    Ok(Member {
        ports: ports_from_proto(&member.ports)?,
        node_id: member.node_id,
        host: member.host,
        name: member.name,
    })
}

pub(crate) fn status_to_proto(status: &TaskStatus) -> proto::TaskStatus {
    use proto::task_status::Status;
    proto::TaskStatus {
        status: Some(match status {
            TaskStatus::Exited(code) => Status::ExitCode(*code),
            TaskStatus::Signaled(signal) => Status::Signal(*signal),
            TaskStatus::Error(error) => Status::Error(error.clone()),
            TaskStatus::Hung { quiet } => {
                Status::HungMs(u64::try_from(quiet.as_millis()).unwrap_or(u64::MAX))
            }
        }),
    }
}

pub(crate) fn status_from_proto(status: Option<proto::TaskStatus>) -> Result<TaskStatus, Error> {
    use proto::task_status::Status;
    match status.and_then(|s| s.status) {
        Some(Status::ExitCode(code)) => Ok(TaskStatus::Exited(code)),
        Some(Status::Signal(signal)) => Ok(TaskStatus::Signaled(signal)),
        Some(Status::Error(error)) => Ok(TaskStatus::Error(error)),
        Some(Status::HungMs(ms)) => Ok(TaskStatus::Hung {
            quiet: Duration::from_millis(ms),
        }),
        None => Err(WireError::Missing {
            field: "the task status",
        }
        .into()),
    }
}

pub(crate) fn failure_to_proto(f: &Failure) -> proto::Failure {
    proto::Failure {
        round: f.round,
        node_id: f.node_id.clone(),
        host: f.host.clone(),
        name: f.name.clone(),
        local_task: f.local_task,
        job: f.job.clone(),
        index: f.index,
        status: Some(status_to_proto(&f.status)),
        stderr_tail: f.stderr_tail.clone(),
    }
}

pub(crate) fn failure_from_proto(f: proto::Failure) -> Result<Failure, Error> {
    Ok(Failure {
        status: status_from_proto(f.status)?,
        round: f.round,
        node_id: f.node_id,
        host: f.host,
        name: f.name,
        local_task: f.local_task,
        job: f.job,
        index: f.index,
        stderr_tail: f.stderr_tail,
    })
}

pub(crate) fn done_to_proto(done: &JobDone) -> proto::JobDone {
    proto::JobDone {
        succeeded: done.succeeded,
        detail: done.detail.clone(),
        first_failure: done.first_failure.as_ref().map(failure_to_proto),
        round: done.round,
    }
}

pub(crate) fn done_from_proto(done: proto::JobDone) -> Result<JobDone, Error> {
    Ok(JobDone {
        succeeded: done.succeeded,
        detail: done.detail,
        first_failure: done.first_failure.map(failure_from_proto).transpose()?,
        round: done.round,
    })
}

pub(crate) fn end_to_proto(end: &RoundEnd) -> proto::RoundEnd {
    let reason = match end.reason {
        EndReason::NodeJoined => proto::EndReason::NodeJoined,
        EndReason::NodeLeft => proto::EndReason::NodeLeft,
        EndReason::NodeLost => proto::EndReason::NodeLost,
        EndReason::TaskFailed => proto::EndReason::TaskFailed,
        EndReason::TaskHung => proto::EndReason::TaskHung,
        EndReason::TaskPlanned => proto::EndReason::TaskPlanned,
        EndReason::NodeDeparted => proto::EndReason::NodeDeparted,
        EndReason::JobSucceeded => proto::EndReason::JobSucceeded,
    };
    proto::RoundEnd {
        round: end.round,
        reason: reason.into(),
        detail: end.detail.clone(),
        restart_count: end.restart_count,
    }
}

pub(crate) fn end_from_proto(end: proto::RoundEnd) -> Result<RoundEnd, Error> {
    let reason = match proto::EndReason::try_from(end.reason) {
        Ok(proto::EndReason::NodeJoined) => EndReason::NodeJoined,
        Ok(proto::EndReason::NodeLeft) => EndReason::NodeLeft,
        Ok(proto::EndReason::NodeLost) => EndReason::NodeLost,
        Ok(proto::EndReason::TaskFailed) => EndReason::TaskFailed,
        Ok(proto::EndReason::TaskHung) => EndReason::TaskHung,
        Ok(proto::EndReason::TaskPlanned) => EndReason::TaskPlanned,
        Ok(proto::EndReason::NodeDeparted) => EndReason::NodeDeparted,
        Ok(proto::EndReason::JobSucceeded) => EndReason::JobSucceeded,
        Ok(proto::EndReason::Unspecified) | Err(_) => {
            return Err(WireError::EndReason { value: end.reason }.into());
        }
    };
    Ok(RoundEnd {
        round: end.round,
        reason,
        detail: end.detail,
        restart_count: end.restart_count,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_round_trips() {
        let config = JobConfig::new("2:4".parse().unwrap(), 2)
            .unwrap()
            .with_layout("chief=1,ps=2".parse().unwrap())
            .unwrap()
            .with_max_restarts(3);
        assert_eq!(
            config_from_proto(Some(config_to_proto(&config))).unwrap(),
            config
        );
    }

    #[test]
    fn bad_configs_are_named() {
        let mut p = config_to_proto(&JobConfig::new(NodeRange::new(1, 2).unwrap(), 1).unwrap());
        p.layout.push(proto::LayoutJob {
            job: "boss".into(),
            count: 1,
        });
        let err = config_from_proto(Some(p)).unwrap_err();
        assert!(matches!(err, Error::Layout(_)), "{err:?}");
        assert_eq!(
            err.to_string(),
            "invalid layout \"boss=1\": job \"boss\" at byte 0 cannot be placed: a layout places \
             chief, ps or evaluator tasks, and every other task is a worker"
        );
        let err = ports_from_proto(&[80, 70000]).unwrap_err();
        assert!(
            matches!(err, Error::Wire(WireError::Port { port: 70000 })),
            "{err:?}"
        );
        assert_eq!(err.to_string(), "port 70000 is not from 1 to 65535");
        let err = config_from_proto(None).unwrap_err();
        assert!(
            matches!(
                err,
                Error::Wire(WireError::Missing {
                    field: "the job config"
                })
            ),
            "{err:?}"
        );
        assert_eq!(err.to_string(), "the job config is missing");
    }

    #[test]
    fn unknown_end_reasons_are_named() {
        let end = proto::RoundEnd {
            round: 2,
            reason: 99,
            detail: String::new(),
            restart_count: 0,
        };
        let err = end_from_proto(end).unwrap_err();
        assert!(
            matches!(err, Error::Wire(WireError::EndReason { value: 99 })),
            "{err:?}"
        );
        assert_eq!(err.to_string(), "unknown end reason 99");
    }
}
