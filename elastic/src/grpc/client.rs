//! [`GrpcClient`]: the [`Rendezvous`] calls over a tonic stub of a rendezvous elsewhere
//! (`RendezvousServer` in some agent, or `tfcluster rendezvous`): each call encoded, sent
//! with the caller's deadline, and its answer decoded and checked — a round's cluster
//! derived again from its members and compared with the rendezvous's.

use std::time::Duration;

use cluster_spec::ClusterSpec;
use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Status};

use super::carrier;
use crate::outcome::RoundStatus;
use crate::proto;
use crate::proto::rendezvous_client::RendezvousClient as Stub;
use crate::rendezvous::{
    Beat, Credentials, Found, JoinArgs, Joined, Leave, Observe, Pending, Rendezvous, Report,
    Reported, Wait,
};
use crate::watched_round::WatchedRound;
use crate::{Error, WireError, wire};

/// The largest answer the client decodes: the round of a job at its task limit (65,536 tasks)
/// is a few MB.
const MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;

/// A rendezvous over gRPC; cheap to clone (clones share the connection).
#[derive(Debug, Clone)]
pub(crate) struct GrpcClient {
    stub: Stub<Channel>,
    /// The rendezvous address, for messages.
    addr: String,
}

/// Why a call over gRPC failed.
#[derive(Debug)]
pub(crate) enum CallFailed {
    /// The call's status: the rendezvous unreachable, no answer in time, or its refusal.
    Status(Status),
    /// An answer the client cannot use ([`Error::InvalidResponse`]).
    Answer(Error),
}

impl From<Status> for CallFailed {
    fn from(status: Status) -> Self {
        Self::Status(status)
    }
}

impl GrpcClient {
    /// A client of the rendezvous at `addr` (`HOST:PORT`), each connection attempt bounded
    /// by `connect_timeout`. Connects on the first call, and again whenever the connection is
    /// lost; the connection's task is spawned at once (call it within a tokio runtime).
    pub(crate) fn connect(addr: &str, connect_timeout: Duration) -> Result<Self, Error> {
        let endpoint = Endpoint::from_shared(format!("http://{addr}"))
            .map_err(|source| Error::InvalidAddress {
                addr: addr.to_owned(),
                source,
            })?
            .connect_timeout(connect_timeout)
            .tcp_nodelay(true)
            .http2_keep_alive_interval(Duration::from_secs(10))
            .keep_alive_timeout(Duration::from_secs(20));
        let stub = Stub::new(endpoint.connect_lazy()).max_decoding_message_size(MAX_RESPONSE_BYTES);
        Ok(Self {
            stub,
            addr: addr.to_owned(),
        })
    }

    /// The answer to a `WaitRound` or `WatchRounds` (`call`).
    fn found(
        &self,
        response: proto::WaitRoundResponse,
        call: &'static str,
    ) -> Result<Found, Error> {
        use proto::wait_round_response::Outcome;
        match response.outcome {
            Some(Outcome::Round(round)) => Ok(Found::Round {
                rank: round.rank,
                round: self.round(round, call)?,
            }),
            Some(Outcome::Done(done)) => {
                Ok(Found::Done(wire::done_from_proto(done).map_err(|e| {
                    Error::invalid_response(&self.addr, call, e)
                })?))
            }
            Some(Outcome::Pending(p)) => Ok(Found::Pending(Pending {
                round: p.round,
                waiting: p.waiting,
                detail: p.detail,
            })),
            None => Err(Error::invalid_response(
                &self.addr,
                call,
                WireError::Missing {
                    field: "the outcome",
                },
            )),
        }
    }

    /// Decodes `round`, the answer to `call`, and checks its cluster.
    fn round(&self, round: proto::Round, call: &'static str) -> Result<WatchedRound, Error> {
        let addr = self.addr.as_str();
        let invalid = |what: String, source: Option<Error>| Error::InvalidResponse {
            addr: addr.to_owned(),
            call,
            what: Some(what),
            source: source.map(Box::new),
        };
        let config = wire::config_from_proto(round.config)
            .map_err(|e| Error::invalid_response(addr, call, e))?;
        let members = round
            .members
            .into_iter()
            .map(wire::member_from_proto)
            .collect::<Result<Vec<_>, Error>>()
            .map_err(|e| Error::invalid_response(addr, call, e))?;
        let watched = WatchedRound::new(
            round.job,
            round.number,
            round.restart_count,
            config,
            members,
        )
        .map_err(|e| {
            invalid(
                format!("round {} has members that make no cluster", round.number),
                Some(Error::Round(e)),
            )
        })?;
        // The rendezvous sends its cluster too. An agent of another version computing another
        // cluster would start tasks that cannot find each other, so a difference stops here.
        let theirs = ClusterSpec::from_json(&round.cluster_json).map_err(|e| {
            invalid(
                format!("round {}'s cluster does not parse", round.number),
                Some(Error::Spec(e)),
            )
        })?;
        if &theirs != watched.cluster_spec() {
            return Err(invalid(
                format!(
                    "round {}'s cluster {theirs} differs from the one its members make, {}",
                    round.number,
                    watched.cluster_spec()
                ),
                None,
            ));
        }
        Ok(watched)
    }
}

/// `message` with a gRPC deadline, so the server stops working for a caller that gave up.
/// tonic also enforces it on this side; it is a little later than the attempt's own timeout,
/// so that one fires first and the error says how long the client waited.
/// It carries `credentials` in its metadata.
fn timed<T>(message: T, timeout: Duration, credentials: &Credentials) -> Request<T> {
    let mut request = Request::new(message);
    request.set_timeout(timeout + Duration::from_millis(50));
    carrier::attach(&mut request, credentials);
    request
}

impl Rendezvous for GrpcClient {
    type Error = CallFailed;

    async fn join(&self, join: JoinArgs, within: Duration) -> Result<Joined, CallFailed> {
        let request = timed(wire::join_to_proto(&join), within, &join.credentials);
        let response = self.stub.clone().join(request).await?.into_inner();
        wire::joined_from_proto(response)
            .map_err(|e| CallFailed::Answer(Error::invalid_response(&self.addr, "Join", e)))
    }

    async fn wait(&self, wait: Wait, within: Duration) -> Result<Found, CallFailed> {
        let credentials = wait.credentials;
        let request = proto::WaitRoundRequest {
            rdzv_id: wait.rdzv_id,
            node_id: wait.node_id,
            after_round: wait.after_round,
            poll_ms: wait.poll.as_millis() as u64,
        };
        let response = self
            .stub
            .clone()
            .wait_round(timed(request, within, &credentials))
            .await?;
        self.found(response.into_inner(), "WaitRound")
            .map_err(CallFailed::Answer)
    }

    async fn observe(&self, observe: Observe, within: Duration) -> Result<Found, CallFailed> {
        let credentials = observe.credentials;
        let request = proto::WatchRoundsRequest {
            rdzv_id: observe.rdzv_id,
            after_round: observe.after_round,
            poll_ms: observe.poll.as_millis() as u64,
            job: observe.job,
        };
        let response = self
            .stub
            .clone()
            .watch_rounds(timed(request, within, &credentials))
            .await?;
        self.found(response.into_inner(), "WatchRounds")
            .map_err(CallFailed::Answer)
    }

    async fn heartbeat(&self, beat: Beat, within: Duration) -> Result<RoundStatus, CallFailed> {
        use proto::heartbeat_response::State;
        let credentials = beat.credentials;
        let request = proto::HeartbeatRequest {
            rdzv_id: beat.rdzv_id,
            node_id: beat.node_id,
            round: beat.round,
            poll_ms: beat.poll.as_millis() as u64,
        };
        let response = self
            .stub
            .clone()
            .heartbeat(timed(request, within, &credentials))
            .await?;
        let bad =
            |e: Error| CallFailed::Answer(Error::invalid_response(&self.addr, "Heartbeat", e));
        match response.into_inner().state {
            Some(State::Running(_)) => Ok(RoundStatus::Running),
            Some(State::Ended(end)) => {
                Ok(RoundStatus::Ended(wire::end_from_proto(end).map_err(bad)?))
            }
            Some(State::Done(done)) => Ok(RoundStatus::JobDone(
                wire::done_from_proto(done).map_err(bad)?,
            )),
            None => Err(bad(WireError::Missing {
                field: "the round state",
            }
            .into())),
        }
    }

    async fn report(&self, report: Report, within: Duration) -> Result<Reported, CallFailed> {
        let credentials = report.credentials;
        let request = proto::ReportRequest {
            rdzv_id: report.rdzv_id,
            node_id: report.node_id,
            round: report.round,
            local_task: report.local_task,
            status: Some(wire::status_to_proto(&report.status)),
            stderr_tail: report.stderr_tail,
        };
        let response = self
            .stub
            .clone()
            .report(timed(request, within, &credentials))
            .await?;
        let response = response.into_inner();
        Ok(Reported {
            counted: response.counted,
            note: response.note,
        })
    }

    async fn leave(&self, leave: Leave, within: Duration) -> Result<(), CallFailed> {
        let credentials = leave.credentials;
        let request = proto::LeaveRequest {
            rdzv_id: leave.rdzv_id,
            node_id: leave.node_id,
        };
        self.stub
            .clone()
            .leave(timed(request, within, &credentials))
            .await?;
        Ok(())
    }
}
