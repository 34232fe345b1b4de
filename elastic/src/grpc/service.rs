//! [`Service`]: a [`Local`] rendezvous as the generated tonic service: each request decoded
//! and checked once ([`wire`]), run by the core, and its answer or error encoded.

use std::time::Duration;

use tonic::{Request, Response, Status};

use super::carrier;
use super::status::{code_label, status_of};
use crate::Error;
use crate::outcome::RoundStatus;
use crate::proto;
use crate::proto::rendezvous_server::Rendezvous as GrpcRendezvous;
use crate::received::{MAX_TEXT, clean_status, clean_text};
use crate::rendezvous::{
    Beat, Leave, ListQuery, Local, Method, Observe, Rendezvous, Report, StatusQuery, Store, Wait,
};
use crate::wire;

/// The tonic service over a [`Local`] rendezvous.
#[derive(Debug)]
pub(super) struct Service<S> {
    pub(super) local: Local<S>,
    pub(super) metrics: crate::RendezvousMetrics,
}

impl<S> Service<S> {
    /// Counts `answer` under `method` and its gRPC code's name, and passes it on.
    fn counted<T>(&self, method: Method, answer: Result<T, Status>) -> Result<T, Status> {
        let code = answer
            .as_ref()
            .map_or_else(Status::code, |_| tonic::Code::Ok);
        self.metrics.answered(method, code_label(code));
        answer
    }
}

/// A request whose message breaks the protocol or carries an invalid value.
fn invalid(error: Error) -> Status {
    status_of(crate::rendezvous::CallError::invalid(&error))
}

/// What a long poll asks for on the wire, in milliseconds.
fn poll(poll_ms: u64) -> Duration {
    Duration::from_millis(poll_ms)
}

/// The server bounds each call itself (its poll cap, tonic's timeout): the core gets no
/// deadline of the caller's.
const WITHIN: Duration = Duration::MAX;

#[tonic::async_trait]
impl<S: Store> GrpcRendezvous for Service<S> {
    async fn join(
        &self,
        request: Request<proto::JoinRequest>,
    ) -> Result<Response<proto::JoinResponse>, Status> {
        let answer = async {
            let peer = request.remote_addr();
            let credentials = carrier::credentials(request.metadata(), "Join")?;
            let mut args = wire::join_from_proto(request.into_inner()).map_err(invalid)?;
            args.credentials = credentials;
            let joined = self.local.join_from(args, peer).await.map_err(status_of)?;
            Ok(Response::new(wire::joined_to_proto(&joined)))
        }
        .await;
        self.counted(Method::Join, answer)
    }

    async fn wait_round(
        &self,
        request: Request<proto::WaitRoundRequest>,
    ) -> Result<Response<proto::WaitRoundResponse>, Status> {
        let answer = async {
            let credentials = carrier::credentials(request.metadata(), "WaitRound")?;
            let req = request.into_inner();
            let wait = Wait {
                credentials,
                rdzv_id: req.rdzv_id,
                node_id: req.node_id,
                after_round: req.after_round,
                poll: poll(req.poll_ms),
                seen: req.seen.map(|p| (p.round, p.waiting)),
            };
            let found = self.local.wait(wait, WITHIN).await.map_err(status_of)?;
            Ok(Response::new(wire::found_to_proto(&found)))
        }
        .await;
        self.counted(Method::WaitRound, answer)
    }

    async fn watch_rounds(
        &self,
        request: Request<proto::WatchRoundsRequest>,
    ) -> Result<Response<proto::WaitRoundResponse>, Status> {
        let answer = async {
            let credentials = carrier::credentials(request.metadata(), "WatchRounds")?;
            let req = request.into_inner();
            let observe = Observe {
                credentials,
                rdzv_id: req.rdzv_id,
                job: req.job,
                after_round: req.after_round,
                poll: poll(req.poll_ms),
            };
            let found = self
                .local
                .observe(observe, WITHIN)
                .await
                .map_err(status_of)?;
            Ok(Response::new(wire::found_to_proto(&found)))
        }
        .await;
        self.counted(Method::WatchRounds, answer)
    }

    async fn heartbeat(
        &self,
        request: Request<proto::HeartbeatRequest>,
    ) -> Result<Response<proto::HeartbeatResponse>, Status> {
        let answer = async {
            use proto::heartbeat_response::State;
            let credentials = carrier::credentials(request.metadata(), "Heartbeat")?;
            let req = request.into_inner();
            let beat = Beat {
                credentials,
                rdzv_id: req.rdzv_id,
                node_id: req.node_id,
                round: req.round,
                poll: poll(req.poll_ms),
                chief_restarts_seen: req.chief_restarts_seen,
                notice: req.notice.map(|n| wire::notice_from_proto(n).cleaned()),
                notices_seen: req.notices_seen,
            };
            let status = self
                .local
                .heartbeat(beat, WITHIN)
                .await
                .map_err(status_of)?;
            let mut answer = proto::HeartbeatResponse::default();
            answer.state = Some(match status {
                RoundStatus::Running => State::Running(true),
                RoundStatus::RestartChief(asks) => {
                    answer.restart_chief = asks;
                    State::Running(true)
                }
                RoundStatus::ServerNotice { notices, notice } => {
                    answer.notices = notices;
                    answer.server_notice = notice.as_ref().map(wire::notice_to_proto);
                    State::Running(true)
                }
                RoundStatus::Ended(end) => State::Ended(wire::end_to_proto(&end)),
                RoundStatus::JobDone(done) => State::Done(wire::done_to_proto(&done)),
            });
            Ok(Response::new(answer))
        }
        .await;
        self.counted(Method::Heartbeat, answer)
    }

    async fn report(
        &self,
        request: Request<proto::ReportRequest>,
    ) -> Result<Response<proto::ReportResponse>, Status> {
        let answer = async {
            let credentials = carrier::credentials(request.metadata(), "Report")?;
            let req = request.into_inner();
            let report = Report {
                credentials,
                // A member's text, which the rendezvous logs and every observer prints.
                status: clean_status(wire::status_from_proto(req.status).map_err(invalid)?),
                rdzv_id: req.rdzv_id,
                node_id: req.node_id,
                round: req.round,
                local_task: req.local_task,
                stderr_tail: clean_text(&req.stderr_tail, MAX_TEXT),
                progressed: req.progressed,
            };
            let reported = self.local.report(report, WITHIN).await.map_err(status_of)?;
            Ok(Response::new(proto::ReportResponse {
                counted: reported.counted,
                note: reported.note,
                in_place: wire::in_place_to_proto(reported.in_place) as i32,
                task_restarts: reported.task_restarts,
                chief_restarts: reported.chief_restarts,
            }))
        }
        .await;
        self.counted(Method::Report, answer)
    }

    async fn leave(
        &self,
        request: Request<proto::LeaveRequest>,
    ) -> Result<Response<proto::LeaveResponse>, Status> {
        let answer = async {
            let credentials = carrier::credentials(request.metadata(), "Leave")?;
            let req = request.into_inner();
            let leave = Leave {
                credentials,
                rdzv_id: req.rdzv_id,
                node_id: req.node_id,
                notice: req.notice.map(|n| wire::notice_from_proto(n).cleaned()),
            };
            self.local.leave(leave, WITHIN).await.map_err(status_of)?;
            Ok(Response::new(proto::LeaveResponse {}))
        }
        .await;
        self.counted(Method::Leave, answer)
    }

    async fn job_status(
        &self,
        request: Request<proto::JobStatusRequest>,
    ) -> Result<Response<proto::JobStatusResponse>, Status> {
        let answer = async {
            let credentials = carrier::credentials(request.metadata(), "JobStatus")?;
            let req = request.into_inner();
            let query = StatusQuery {
                credentials,
                rdzv_id: req.rdzv_id,
                after_digest: req.after_digest,
                poll: poll(req.poll_ms),
            };
            let status = self
                .local
                .job_status(query, WITHIN)
                .await
                .map_err(status_of)?;
            Ok(Response::new(wire::job_status_to_proto(&status)))
        }
        .await;
        self.counted(Method::JobStatus, answer)
    }

    async fn list_jobs(
        &self,
        request: Request<proto::ListJobsRequest>,
    ) -> Result<Response<proto::ListJobsResponse>, Status> {
        let answer = async {
            let credentials = carrier::credentials(request.metadata(), "ListJobs")?;
            let jobs = self
                .local
                .list_jobs(ListQuery { credentials }, WITHIN)
                .await
                .map_err(status_of)?;
            Ok(Response::new(wire::summaries_to_proto(&jobs)))
        }
        .await;
        self.counted(Method::ListJobs, answer)
    }
}
