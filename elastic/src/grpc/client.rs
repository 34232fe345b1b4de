//! [`GrpcClient`]: the [`Rendezvous`] calls over a tonic stub of a rendezvous elsewhere
//! (`RendezvousServer` in some agent, or `tfcluster rendezvous`): each call encoded, sent
//! with the caller's deadline, and its answer decoded and checked — a round's cluster
//! derived again from its members and compared with the rendezvous's. A call's failure is
//! the client's [`CallFailed`] from here on: the status received is converted at this edge
//! ([`status::received`](super::status::received)).

use std::time::Duration;

use cluster_spec::ClusterSpec;
use tonic::Request;
use tonic::transport::{Channel, Endpoint};

use super::carrier;
use crate::client::call_failed::CallFailed;
use crate::job_status::{JobStatus, JobSummary};
use crate::outcome::RoundStatus;
use crate::proto;
use crate::proto::rendezvous_client::RendezvousClient as Stub;
use crate::rendezvous::{
    Beat, Credentials, Found, JoinArgs, Joined, Leave, ListQuery, Observe, Pending, Rendezvous,
    Report, Reported, StatusQuery, Wait,
};
use crate::watched_round::WatchedRound;
use crate::{ClientOptions, Error, WireError, wire};

/// The largest answer the client decodes: a round the registry forms is below it
/// ([`round_size`](crate::rendezvous::registry::round_size)).
const MAX_RESPONSE_BYTES: usize = crate::rendezvous::registry::round_size::MAX_ANSWER_BYTES;

/// A rendezvous over gRPC; cheap to clone (clones share the connection).
#[derive(Debug, Clone)]
pub(crate) struct GrpcClient {
    stub: Stub<Channel>,
    /// The rendezvous address, for messages.
    addr: String,
}

impl GrpcClient {
    /// A client of the rendezvous at `addr` (`HOST:PORT`), each connection attempt bounded
    /// by the options' connect timeout, over mTLS when they have a TLS config. Connects on the
    /// first call, and again whenever the connection is lost; the connection's task is
    /// spawned at once (call it within a tokio runtime).
    pub(crate) fn connect(addr: &str, options: &ClientOptions) -> Result<Self, Error> {
        let invalid = |source| Error::InvalidAddress {
            addr: addr.to_owned(),
            source,
        };
        #[cfg(feature = "tls")]
        let endpoint = match &options.tls {
            // The server's certificate must name HOST and chain to the CA. tonic refuses a
            // config only for PEM that TlsConfig already checked.
            Some(tls) => Endpoint::from_shared(format!("https://{addr}"))
                .and_then(|endpoint| endpoint.tls_config(tls.client()))
                .map_err(invalid)?,
            None => Endpoint::from_shared(format!("http://{addr}")).map_err(invalid)?,
        };
        #[cfg(not(feature = "tls"))]
        let endpoint = Endpoint::from_shared(format!("http://{addr}")).map_err(invalid)?;
        let endpoint = endpoint
            .connect_timeout(options.connect_timeout)
            .tcp_nodelay(true)
            .http2_keep_alive_interval(Duration::from_secs(10))
            .keep_alive_timeout(Duration::from_secs(20));
        let stub = Stub::new(endpoint.connect_lazy()).max_decoding_message_size(MAX_RESPONSE_BYTES);
        Ok(Self {
            stub,
            addr: addr.to_owned(),
        })
    }
}

/// The answer to a `WaitRound` or `WatchRounds` (`call`) from the rendezvous at `addr`.
fn found(
    addr: &str,
    response: proto::WaitRoundResponse,
    call: &'static str,
) -> Result<Found, Error> {
    use proto::wait_round_response::Outcome;
    match response.outcome {
        Some(Outcome::Round(round)) => Ok(Found::Round {
            rank: round.rank,
            round: round_from_proto(addr, round, call)?,
        }),
        Some(Outcome::Done(done)) => Ok(Found::Done(
            wire::done_from_proto(done).map_err(|e| Error::invalid_response(addr, call, e))?,
        )),
        Some(Outcome::Pending(p)) => Ok(Found::Pending(Pending {
            round: p.round,
            waiting: p.waiting,
            detail: p.detail,
        })),
        None => Err(Error::invalid_response(
            addr,
            call,
            WireError::Missing {
                field: "the outcome",
            },
        )),
    }
}

/// Decodes `round`, the answer to `call`, and checks its cluster.
fn round_from_proto(
    addr: &str,
    round: proto::Round,
    call: &'static str,
) -> Result<WatchedRound, Error> {
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
            seen: wait.seen.map(|(round, waiting)| proto::Pending {
                round,
                waiting,
                detail: String::new(),
            }),
        };
        let response = self
            .stub
            .clone()
            .wait_round(timed(request, within, &credentials))
            .await?;
        found(&self.addr, response.into_inner(), "WaitRound").map_err(CallFailed::Answer)
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
        found(&self.addr, response.into_inner(), "WatchRounds").map_err(CallFailed::Answer)
    }

    async fn heartbeat(&self, beat: Beat, within: Duration) -> Result<RoundStatus, CallFailed> {
        use proto::heartbeat_response::State;
        let credentials = beat.credentials;
        let request = proto::HeartbeatRequest {
            rdzv_id: beat.rdzv_id,
            node_id: beat.node_id,
            round: beat.round,
            poll_ms: beat.poll.as_millis() as u64,
            chief_restarts_seen: beat.chief_restarts_seen,
            notice: beat.notice.as_ref().map(wire::notice_to_proto),
            notices_seen: beat.notices_seen,
        };
        let response = self
            .stub
            .clone()
            .heartbeat(timed(request, within, &credentials))
            .await?;
        let bad =
            |e: Error| CallFailed::Answer(Error::invalid_response(&self.addr, "Heartbeat", e));
        let response = response.into_inner();
        match response.state {
            Some(State::Running(_)) if response.restart_chief > beat.chief_restarts_seen => {
                Ok(RoundStatus::RestartChief(response.restart_chief))
            }
            Some(State::Running(_)) if response.notices > beat.notices_seen => {
                Ok(RoundStatus::ServerNotice {
                    notices: response.notices,
                    notice: response
                        .server_notice
                        .map(|n| wire::notice_from_proto(n).cleaned()),
                })
            }
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
            progressed: report.progressed,
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
            in_place: wire::in_place_from_proto(response.in_place).map_err(|e| {
                CallFailed::Answer(Error::invalid_response(&self.addr, "Report", e))
            })?,
            task_restarts: response.task_restarts,
            chief_restarts: response.chief_restarts,
        })
    }

    async fn leave(&self, leave: Leave, within: Duration) -> Result<(), CallFailed> {
        let credentials = leave.credentials;
        let request = proto::LeaveRequest {
            rdzv_id: leave.rdzv_id,
            node_id: leave.node_id,
            notice: leave.notice.as_ref().map(wire::notice_to_proto),
        };
        self.stub
            .clone()
            .leave(timed(request, within, &credentials))
            .await?;
        Ok(())
    }

    async fn job_status(
        &self,
        query: StatusQuery,
        within: Duration,
    ) -> Result<JobStatus, CallFailed> {
        let credentials = query.credentials;
        let request = proto::JobStatusRequest {
            rdzv_id: query.rdzv_id,
            after_digest: query.after_digest,
            poll_ms: query.poll.as_millis() as u64,
        };
        let response = self
            .stub
            .clone()
            .job_status(timed(request, within, &credentials))
            .await?;
        let call = "JobStatus";
        wire::job_status_from_proto(response.into_inner(), |round| {
            round_from_proto(&self.addr, round, call)
        })
        .map_err(|e| CallFailed::Answer(Error::invalid_response(&self.addr, call, e)))
    }

    async fn list_jobs(
        &self,
        query: ListQuery,
        within: Duration,
    ) -> Result<Vec<JobSummary>, CallFailed> {
        let response = self
            .stub
            .clone()
            .list_jobs(timed(proto::ListJobsRequest {}, within, &query.credentials))
            .await?;
        wire::summaries_from_proto(response.into_inner())
            .map_err(|e| CallFailed::Answer(Error::invalid_response(&self.addr, "ListJobs", e)))
    }
}

#[cfg(test)]
mod tests {
    //! Arbitrary answers of a rendezvous, decoded and vetted as the client takes them: an
    //! error or a value within bounds, never a panic.

    use proptest::prelude::*;

    use super::*;
    use crate::received::Received;

    /// Any text: controls, escapes and multi-byte characters, now and then long.
    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => proptest::collection::vec(any::<char>(), 0..24).prop_map(String::from_iter),
            1 => Just("127.0.0.1".to_owned()),
            1 => (0usize..20_000).prop_map(|n| format!("\x1b[2J{}", "é".repeat(n))),
        ]
    }

    fn small() -> impl Strategy<Value = u32> {
        prop_oneof![0u32..6, any::<u32>()]
    }

    fn member() -> impl Strategy<Value = proto::Member> {
        (
            text(),
            text(),
            proptest::collection::vec(any::<u32>(), 0..3),
            text(),
        )
            .prop_map(|(node_id, host, ports, name)| proto::Member {
                node_id,
                host,
                ports,
                name,
            })
    }

    fn config() -> impl Strategy<Value = Option<proto::JobConfig>> {
        let layout = proptest::collection::vec(
            (text(), small()).prop_map(|(job, count)| proto::LayoutJob { job, count }),
            0..3,
        );
        let restarts = (-1..4i32, any::<u32>(), any::<bool>());
        proptest::option::of(
            (small(), small(), small(), layout, any::<u32>(), restarts).prop_map(
                |(min_nodes, max_nodes, tasks_per_node, layout, max_restarts, restarts)| {
                    proto::JobConfig {
                        min_nodes,
                        max_nodes,
                        tasks_per_node,
                        layout,
                        max_restarts,
                        restart_scope: restarts.0,
                        max_task_restarts: restarts.1,
                        allow_crash_loops: restarts.2,
                        // The bad-host rule's fields are plain numbers, 0 the defaults.
                        ..Default::default()
                    }
                },
            ),
        )
    }

    fn round() -> impl Strategy<Value = proto::Round> {
        let json = prop_oneof![text(), Just(r#"{"worker":["127.0.0.1:1"]}"#.to_owned())];
        (
            any::<u64>(),
            any::<u32>(),
            proptest::collection::vec(member(), 0..4),
            small(),
            json,
            config(),
            any::<u64>(),
        )
            .prop_map(
                |(number, restart_count, members, rank, cluster_json, config, job)| proto::Round {
                    number,
                    restart_count,
                    members,
                    rank,
                    cluster_json,
                    config,
                    job,
                },
            )
    }

    fn status() -> impl Strategy<Value = Option<proto::TaskStatus>> {
        use proto::task_status::Status;
        proptest::option::of(
            proptest::option::of(prop_oneof![
                any::<i32>().prop_map(Status::ExitCode),
                any::<i32>().prop_map(Status::Signal),
                text().prop_map(Status::Error),
                any::<u64>().prop_map(Status::HungMs),
            ])
            .prop_map(|status| proto::TaskStatus { status }),
        )
    }

    fn done() -> impl Strategy<Value = proto::JobDone> {
        let failure = (
            any::<u64>(),
            text(),
            text(),
            text(),
            text(),
            status(),
            text(),
        )
            .prop_map(|(round, node_id, host, name, job, status, stderr_tail)| {
                proto::Failure {
                    round,
                    node_id,
                    host,
                    name,
                    local_task: 0,
                    job,
                    index: 0,
                    status,
                    stderr_tail,
                }
            });
        (
            any::<bool>(),
            text(),
            proptest::option::of(failure),
            any::<u64>(),
        )
            .prop_map(|(succeeded, detail, first_failure, round)| proto::JobDone {
                succeeded,
                detail,
                first_failure,
                round,
            })
    }

    fn answer() -> impl Strategy<Value = proto::WaitRoundResponse> {
        use proto::wait_round_response::Outcome;
        let pending = (any::<u64>(), any::<u32>(), text()).prop_map(|(round, waiting, detail)| {
            Outcome::Pending(proto::Pending {
                round,
                waiting,
                detail,
            })
        });
        proptest::option::of(prop_oneof![
            round().prop_map(Outcome::Round),
            done().prop_map(Outcome::Done),
            pending,
        ])
        .prop_map(|outcome| proto::WaitRoundResponse { outcome })
    }

    /// What the client keeps of a text: no control but `\n` and `\t`, bounded.
    fn clean(text: &str) -> bool {
        !text
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t')
            && text.len() <= crate::received::MAX_TEXT + 32
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn any_wait_answer_decodes_to_an_error_or_a_bounded_value(response in answer()) {
            let taken = found("h:1", response, "WaitRound")
                .and_then(|f| f.vetted().map_err(Error::from));
            match taken {
                Ok(Found::Pending(p)) => prop_assert!(clean(&p.detail)),
                Ok(Found::Done(done)) => {
                    prop_assert!(clean(&done.detail));
                    if let Some(f) = &done.first_failure {
                        prop_assert!(clean(&f.stderr_tail) && clean(&f.host) && clean(&f.name));
                    }
                }
                Ok(Found::Round { round, rank }) => {
                    prop_assert!((rank as usize) < round.members().len().max(1));
                    prop_assert!(round.members().len() <= crate::MAX_NODES as usize);
                }
                Err(e) => prop_assert!(!e.to_string().is_empty()),
            }
        }

        #[test]
        fn any_join_answer_is_within_bounds_or_refused(
            ms in prop_oneof![any::<u64>(), 0u64..5000],
            node_id in text(),
            host in text(),
            note in text(),
        ) {
            let joined = wire::joined_from_proto(proto::JoinResponse {
                node_id,
                round: 1,
                note,
                heartbeat_timeout_ms: ms,
                host,
                node_secret: String::new(),
            });
            if let Ok(joined) = joined.map_err(|e| e.to_string()).and_then(|j| j.vetted().map_err(|e| e.to_string())) {
                prop_assert!((100..=3_600_000).contains(&joined.heartbeat_timeout.as_millis()));
                prop_assert!(clean(&joined.note));
                prop_assert!(!joined.host.chars().any(char::is_control));
            }
        }

        #[test]
        fn any_heartbeat_answer_decodes_to_an_error_or_clean_text(
            done in done(),
            detail in text(),
            reason in any::<i32>(),
        ) {
            let end = proto::RoundEnd { round: 1, reason, detail, restart_count: 0 };
            if let Ok(RoundStatus::Ended(end)) =
                wire::end_from_proto(end).map(RoundStatus::Ended).map(|s| s.vetted())
                    .and_then(|s| s.map_err(Error::from))
            {
                prop_assert!(clean(&end.detail));
            }
            if let Ok(RoundStatus::JobDone(done)) = wire::done_from_proto(done)
                .map(RoundStatus::JobDone)
                .and_then(|s| s.vetted().map_err(Error::from))
            {
                prop_assert!(clean(&done.detail));
            }
        }
    }
}
