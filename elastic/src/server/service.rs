//! [`Service`]: the rendezvous's calls, the same on every [`Store`]: each request checked
//! once, run on the registry holding its job, and answered; `WaitRound`, `WatchRounds` and
//! `Heartbeat` as long polls.

use std::time::{Duration, Instant};

use tonic::{Request, Response, Status};

use super::registry::{JoinArgs, Waited};
use super::store::Store;
use crate::Error;
use crate::outcome::RoundStatus;
use crate::proto;
use crate::proto::rendezvous_server::Rendezvous;
use crate::wire;

/// The rendezvous service over the jobs of `store`.
#[derive(Debug)]
pub(crate) struct Service<S> {
    pub(crate) store: S,
}

impl<S: Store> Service<S> {
    /// A long poll's deadline: `poll_ms` from now, at most the store's cap.
    fn deadline(&self, poll_ms: u64) -> Instant {
        Instant::now() + Duration::from_millis(poll_ms).min(self.store.poll_cap())
    }
}

/// The answer of `WaitRound` and `WatchRounds`.
fn waited_to_proto(waited: Waited) -> proto::WaitRoundResponse {
    use proto::wait_round_response::Outcome;
    let outcome = match waited {
        Waited::Pending(p) => Outcome::Pending(proto::Pending {
            round: p.round,
            waiting: p.waiting,
            detail: p.detail,
        }),
        Waited::Done(done) => Outcome::Done(wire::done_to_proto(&done)),
        Waited::Round { round, rank } => Outcome::Round(round.to_proto(rank)),
    };
    proto::WaitRoundResponse {
        outcome: Some(outcome),
    }
}

/// A wait's answer, and whether the caller would rather wait on (no round yet).
fn until_a_round(waited: Waited) -> (Waited, bool) {
    let pending = matches!(waited, Waited::Pending(_));
    (waited, pending)
}

/// A join request's arguments, its node's tasks reached at `host`.
pub(super) fn join_args(req: proto::JoinRequest, host: String) -> Result<JoinArgs, Status> {
    Ok(JoinArgs {
        rdzv_id: req.rdzv_id,
        config: wire::config_from_proto(req.config).map_err(invalid)?,
        node_id: (!req.node_id.is_empty()).then_some(req.node_id),
        host,
        ports: wire::ports_from_proto(&req.ports).map_err(invalid)?,
        name: req.name,
    })
}

/// A request whose message breaks the protocol or carries an invalid value.
fn invalid(error: Error) -> Status {
    Status::invalid_argument(cluster_spec::__private::error_chain::Chain(&error).to_string())
}

#[tonic::async_trait]
impl<S: Store> Rendezvous for Service<S> {
    async fn join(
        &self,
        request: Request<proto::JoinRequest>,
    ) -> Result<Response<proto::JoinResponse>, Status> {
        let peer = request.remote_addr();
        let mut req = request.into_inner();
        let host = if req.host.is_empty() {
            self.store.default_host(peer).ok_or_else(|| {
                Status::invalid_argument("no host given, and the caller's address is unknown")
            })?
        } else {
            std::mem::take(&mut req.host)
        };
        let args = join_args(req, host)?;
        Ok(Response::new(self.store.join(args).await?))
    }

    async fn wait_round(
        &self,
        request: Request<proto::WaitRoundRequest>,
    ) -> Result<Response<proto::WaitRoundResponse>, Status> {
        let req = request.into_inner();
        let waited = self
            .store
            .long_poll(
                &req.rdzv_id,
                Some(&req.node_id),
                self.deadline(req.poll_ms),
                |registry, now| {
                    registry
                        .wait(&req.rdzv_id, &req.node_id, req.after_round, now)
                        .map(until_a_round)
                },
            )
            .await?;
        Ok(Response::new(waited_to_proto(waited)))
    }

    async fn watch_rounds(
        &self,
        request: Request<proto::WatchRoundsRequest>,
    ) -> Result<Response<proto::WaitRoundResponse>, Status> {
        let req = request.into_inner();
        let waited = self
            .store
            .long_poll(
                &req.rdzv_id,
                None,
                self.deadline(req.poll_ms),
                |registry, now| {
                    registry
                        .observe(&req.rdzv_id, req.job, req.after_round, now)
                        .map(until_a_round)
                },
            )
            .await?;
        Ok(Response::new(waited_to_proto(waited)))
    }

    async fn heartbeat(
        &self,
        request: Request<proto::HeartbeatRequest>,
    ) -> Result<Response<proto::HeartbeatResponse>, Status> {
        use proto::heartbeat_response::State;
        let req = request.into_inner();
        let status = self
            .store
            .long_poll(
                &req.rdzv_id,
                Some(&req.node_id),
                self.deadline(req.poll_ms),
                |registry, now| {
                    let status = registry.heartbeat(&req.rdzv_id, &req.node_id, req.round, now)?;
                    let running = status == RoundStatus::Running;
                    Ok((status, running))
                },
            )
            .await?;
        let state = match status {
            RoundStatus::Running => State::Running(true),
            RoundStatus::Ended(end) => State::Ended(wire::end_to_proto(&end)),
            RoundStatus::JobDone(done) => State::Done(wire::done_to_proto(&done)),
        };
        Ok(Response::new(proto::HeartbeatResponse {
            state: Some(state),
        }))
    }

    async fn report(
        &self,
        request: Request<proto::ReportRequest>,
    ) -> Result<Response<proto::ReportResponse>, Status> {
        let req = request.into_inner();
        let status = wire::status_from_proto(req.status).map_err(invalid)?;
        let (counted, note) = self
            .store
            .long_poll(
                &req.rdzv_id,
                Some(&req.node_id),
                Instant::now(),
                |registry, now| {
                    let answer = registry.report(
                        &req.rdzv_id,
                        &req.node_id,
                        req.round,
                        req.local_task,
                        status.clone(),
                        req.stderr_tail.clone(),
                        now,
                    )?;
                    Ok((answer, false))
                },
            )
            .await?;
        Ok(Response::new(proto::ReportResponse { counted, note }))
    }

    async fn leave(
        &self,
        request: Request<proto::LeaveRequest>,
    ) -> Result<Response<proto::LeaveResponse>, Status> {
        let req = request.into_inner();
        self.store
            .long_poll(&req.rdzv_id, None, Instant::now(), |registry, now| {
                registry.leave(&req.rdzv_id, &req.node_id, now);
                Ok(((), false))
            })
            .await?;
        Ok(Response::new(proto::LeaveResponse {}))
    }
}
