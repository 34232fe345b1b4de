//! A rendezvous that lies, or is short of memory: a fake one (a tonic server of the
//! rendezvous's service, in the test) that answers every long poll at once, gives a heartbeat
//! timeout no clock can hold, ends the job with terminal escapes and 15 MB of "stderr",
//! refuses waits for want of memory, or tells an operator a dirty status and too many jobs.
//! The client paces itself, refuses what is out of bounds, hands on only clean text of
//! bounded length, and tries a refusal for now again after the pause the server asks for.
//! One that takes a join and never answers it: an agent stopped then leaves as that node.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use elastic::proto::rendezvous_server::{Rendezvous, RendezvousServer};
use elastic::{
    Agent, AgentOptions, AgentOutcome, ClientOptions, Error, JobConfig, JobPhase, Join, Node,
    RendezvousClient, Waited, proto,
};
use tonic::transport::server::TcpIncoming;
use tonic::{Request, Response, Status};

use crate::common::run;

/// What the fake rendezvous answers.
#[derive(Clone, Copy)]
enum Lie {
    /// Every wait: Pending, at once.
    PendingAtOnce,
    /// Joins: this heartbeat timeout (ms).
    HeartbeatTimeout(u64),
    /// Every wait: the job failed, with escapes and 15 MB of stderr.
    DirtyDone,
    /// The first two waits: `RESOURCE_EXHAUSTED`, with gRPC's retry pushback of this many ms
    /// (none: without); then the job succeeded.
    ExhaustedTwice(Option<u64>),
    /// Joins: never answered.
    JoinsUnanswered,
}

struct Fake {
    lie: Lie,
    waits: Arc<AtomicUsize>,
    calls: Calls,
}

/// The joins and leaves the fake got: the call, the node's id and the secret it carried.
type Calls = Arc<Mutex<Vec<(&'static str, String, String)>>>;

impl Fake {
    fn record<T>(&self, call: &'static str, request: &Request<T>, node_id: &str) {
        let secret = request
            .metadata()
            .get("tfcluster-node-secret")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        let entry = (call, node_id.to_owned(), secret.to_owned());
        self.calls.lock().unwrap().push(entry);
    }
}

const ESCAPES: &str = "\x1b[2J\x1b]0;owned\x07";

/// The job failed: escapes in its texts, 15 MB of stderr.
fn dirty_done() -> proto::JobDone {
    proto::JobDone {
        succeeded: false,
        detail: format!("failed{ESCAPES}"),
        first_failure: Some(dirty_failure()),
        round: 1,
    }
}

fn dirty_failure() -> proto::Failure {
    proto::Failure {
        round: 1,
        node_id: "n1".into(),
        host: format!("h{ESCAPES}"),
        job: "worker".into(),
        status: Some(proto::TaskStatus {
            status: Some(proto::task_status::Status::ExitCode(1)),
        }),
        stderr_tail: format!("{ESCAPES}{}last line", "x".repeat(15 << 20)),
        ..Default::default()
    }
}

#[tonic::async_trait]
impl Rendezvous for Fake {
    async fn join(
        &self,
        request: Request<proto::JoinRequest>,
    ) -> Result<Response<proto::JoinResponse>, Status> {
        self.record("Join", &request, &request.get_ref().node_id);
        let timeout = match self.lie {
            Lie::HeartbeatTimeout(ms) => ms,
            Lie::JoinsUnanswered => std::future::pending().await,
            _ => 3000,
        };
        Ok(Response::new(proto::JoinResponse {
            node_id: request.into_inner().node_id,
            round: 1,
            note: format!("joined{ESCAPES}"),
            heartbeat_timeout_ms: timeout,
            host: "127.0.0.1".into(),
            ..Default::default()
        }))
    }

    async fn wait_round(
        &self,
        _: Request<proto::WaitRoundRequest>,
    ) -> Result<Response<proto::WaitRoundResponse>, Status> {
        use proto::wait_round_response::Outcome;
        let waits = self.waits.fetch_add(1, Ordering::SeqCst);
        let outcome = match self.lie {
            Lie::ExhaustedTwice(pushback) if waits < 2 => {
                let mut status = Status::resource_exhausted("no memory for this answer now");
                if let Some(ms) = pushback {
                    status
                        .metadata_mut()
                        .insert(grpc_guard::PUSHBACK_HEADER, ms.into());
                }
                return Err(status);
            }
            Lie::ExhaustedTwice(_) => Outcome::Done(proto::JobDone {
                succeeded: true,
                detail: "done".into(),
                round: 1,
                ..Default::default()
            }),
            Lie::DirtyDone => Outcome::Done(dirty_done()),
            _ => Outcome::Pending(proto::Pending {
                round: 1,
                waiting: 1,
                detail: "round 1 waits".into(),
            }),
        };
        Ok(Response::new(proto::WaitRoundResponse {
            outcome: Some(outcome),
        }))
    }

    async fn heartbeat(
        &self,
        _: Request<proto::HeartbeatRequest>,
    ) -> Result<Response<proto::HeartbeatResponse>, Status> {
        Err(Status::unimplemented("no rounds here"))
    }

    async fn report(
        &self,
        _: Request<proto::ReportRequest>,
    ) -> Result<Response<proto::ReportResponse>, Status> {
        Err(Status::unimplemented("no rounds here"))
    }

    async fn leave(
        &self,
        request: Request<proto::LeaveRequest>,
    ) -> Result<Response<proto::LeaveResponse>, Status> {
        self.record("Leave", &request, &request.get_ref().node_id);
        Ok(Response::new(proto::LeaveResponse::default()))
    }

    /// `DirtyDone`: the job failed, dirty, with its last failure as dirty.
    async fn job_status(
        &self,
        request: Request<proto::JobStatusRequest>,
    ) -> Result<Response<proto::JobStatusResponse>, Status> {
        let Lie::DirtyDone = self.lie else {
            return Err(Status::unimplemented("no status here"));
        };
        Ok(Response::new(proto::JobStatusResponse {
            rdzv_id: request.into_inner().rdzv_id,
            config: Some(proto::JobConfig {
                min_nodes: 2,
                max_nodes: 2,
                tasks_per_node: 1,
                ..Default::default()
            }),
            // The 15 MB once (twice is past the client's 16 MB answer).
            phase: Some(proto::job_status_response::Phase::Done(proto::JobDone {
                first_failure: None,
                ..dirty_done()
            })),
            last_failure: Some(dirty_failure()),
            ..Default::default()
        }))
    }

    /// `DirtyDone`: more jobs than a list may hold.
    async fn list_jobs(
        &self,
        _: Request<proto::ListJobsRequest>,
    ) -> Result<Response<proto::ListJobsResponse>, Status> {
        let jobs = (0..=elastic::MAX_LISTED)
            .map(|i| proto::JobSummary {
                rdzv_id: format!("job{i}"),
                phase: "running".into(),
                ..Default::default()
            })
            .collect();
        Ok(Response::new(proto::ListJobsResponse { jobs }))
    }

    async fn watch_rounds(
        &self,
        request: Request<proto::WatchRoundsRequest>,
    ) -> Result<Response<proto::WaitRoundResponse>, Status> {
        self.wait_round(Request::new(proto::WaitRoundRequest {
            rdzv_id: request.into_inner().rdzv_id,
            ..Default::default()
        }))
        .await
    }
}

/// Serves a [`Fake`] telling `lie` on loopback: its address and its count of waits.
async fn fake(lie: Lie) -> (String, Arc<AtomicUsize>) {
    let (addr, waits, _) = fake_recording(lie).await;
    (addr, waits)
}

/// [`fake`], and the joins and leaves it gets.
async fn fake_recording(lie: Lie) -> (String, Arc<AtomicUsize>, Calls) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let waits = Arc::new(AtomicUsize::new(0));
    let calls = Calls::default();
    let service = RendezvousServer::new(Fake {
        lie,
        waits: Arc::clone(&waits),
        calls: Arc::clone(&calls),
    });
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(service)
            .serve_with_incoming(TcpIncoming::from(listener)),
    );
    (addr, waits, calls)
}

fn config() -> JobConfig {
    JobConfig::new("2".parse().unwrap(), 1).unwrap()
}

/// A node of `client` in the fake's job.
async fn join(client: &RendezvousClient) -> Node {
    client
        .join(&Join::new("job", config(), vec![20_000]))
        .await
        .unwrap()
}

fn client(addr: &str) -> RendezvousClient {
    let options = ClientOptions::default()
        .with_connect_timeout(Duration::from_secs(1))
        .with_rpc_timeout(Duration::from_secs(2))
        .with_retry_for(Duration::from_secs(2));
    RendezvousClient::new(addr, options).unwrap()
}

/// A rendezvous that answers every wait at once with the same Pending gets a dozen calls
/// over 5 s (50 ms doubling to 1 s between them), not thousands: at most 20.
#[test]
fn a_rendezvous_answering_at_once_is_called_a_few_times_a_second() {
    run(async {
        let (addr, waits) = fake(Lie::PendingAtOnce).await;
        let client = client(&addr);
        let mut node = join(&client).await;
        let start = Instant::now();
        let err = client
            .wait_round(&mut node, Duration::from_secs(5))
            .await
            .unwrap_err();
        assert!(matches!(err, Error::WaitTimeout { .. }), "{err:?}");
        assert!(start.elapsed() < Duration::from_secs(7));
        let calls = waits.load(Ordering::SeqCst);
        assert!((3..=20).contains(&calls), "{calls} calls in 5 s");
    });
}

/// A heartbeat timeout of `u64::MAX` ms (which panicked tonic's deadline arithmetic) or of
/// 0 is refused, naming the field and value.
#[test]
fn a_heartbeat_timeout_out_of_bounds_is_refused_not_a_panic() {
    run(async {
        for ms in [u64::MAX, 0] {
            let (addr, _) = fake(Lie::HeartbeatTimeout(ms)).await;
            let err = client(&addr)
                .join(&Join::new("job", config(), vec![20_000]))
                .await
                .unwrap_err();
            assert!(matches!(err, Error::InvalidResponse { .. }), "{err:?}");
            let chain = cluster_spec::__private::error_chain::Chain(&err).to_string();
            assert!(
                chain.contains(&format!(
                    "the heartbeat timeout {ms} ms is outside its bounds 100 ms ..= 3600000 ms"
                )),
                "{chain}"
            );
        }
    });
}

/// A job's end with terminal escapes and 15 MB of stderr reaches the agent as clean text of
/// bounded length: what the CLI prints and writes to `--error-file`.
#[test]
fn a_dirty_job_end_reaches_the_agent_clean_and_short() {
    run(async {
        let (addr, _) = fake(Lie::DirtyDone).await;
        let client = client(&addr);
        let mut node = join(&client).await;
        assert_eq!(node.note(), "joined");
        let Waited::JobDone(done) = client
            .wait_round(&mut node, Duration::from_secs(5))
            .await
            .unwrap()
        else {
            panic!("the job is done");
        };
        let agent = Agent::new(
            client,
            AgentOptions::new(Join::new("job", config(), Vec::new()), vec!["true".into()])
                .with_gpus_per_task(Some(elastic::launcher::GpusPerTask::Each(0))),
        );
        let AgentOutcome::Failed(by_agent) =
            agent.run(futures_util::stream::pending()).await.unwrap()
        else {
            panic!("the job failed");
        };
        for done in [done, by_agent] {
            let first = done.first_failure.as_ref().unwrap();
            let text = format!("{done} {}", first.stderr_tail);
            assert!(!text.contains('\x1b') && !text.contains('\x07'), "{text:?}");
            assert_eq!(done.detail, "failed");
            assert_eq!(first.host, "h");
            assert!(first.stderr_tail.len() <= 8 * 1024 + 32);
            assert!(first.stderr_tail.ends_with("last line"));
            assert!(first.stderr_tail.starts_with("["), "the cut is said");
        }
    });
}

/// An agent stopped while its join is under way leaves as the node it was joining as (same
/// id, same secret): the join may have taken effect with its answer on the way, and a node
/// never heard from again would be lost at its heartbeat timeout, a failure that counts
/// against the job's restarts (seen in CI: the job failed instead of its round ending).
#[test]
fn an_agent_stopped_during_its_join_leaves_as_that_node() {
    run(async {
        let (addr, _, calls) = fake_recording(Lie::JoinsUnanswered).await;
        let agent = Agent::new(
            client(&addr),
            AgentOptions::new(Join::new("job", config(), Vec::new()), vec!["true".into()])
                .with_gpus_per_task(Some(elastic::launcher::GpusPerTask::Each(0))),
        );
        let stop = futures_util::stream::once(async {
            // Until the fake holds the join.
            while calls.lock().unwrap().is_empty() {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            elastic::launcher::supervise::Signal::SIGTERM
        });
        // Stopped, not the join's retries ending in `Unreachable`: the stop cut the join.
        let outcome = agent.run(stop).await.unwrap();
        assert!(matches!(outcome, AgentOutcome::Stopped(_)), "{outcome:?}");
        let calls = calls.lock().unwrap().clone();
        let [(joined, id, secret), (left, left_id, left_secret)] = &calls[..] else {
            panic!("a join, then a leave: {calls:?}");
        };
        assert_eq!((*joined, *left), ("Join", "Leave"));
        assert!(id.starts_with("node-") && !secret.is_empty(), "{calls:?}");
        assert_eq!((id, secret), (left_id, left_secret));
    });
}

/// An operator's status with escapes and 15 MB of stderr is clean and short; a list of more
/// jobs than a list may hold is refused, naming the count.
#[test]
fn a_dirty_status_is_clean_and_an_overlong_list_refused() {
    run(async {
        let (addr, _) = fake(Lie::DirtyDone).await;
        let client = client(&addr);
        let status = client
            .job_status("job", None, Duration::from_secs(1))
            .await
            .unwrap();
        let JobPhase::Done(done) = &status.phase else {
            panic!("{:?}", status.phase)
        };
        let last = status.last_failure.as_ref().unwrap();
        let text = format!("{done} {last} {}", last.stderr_tail);
        assert!(!text.contains('\x1b') && !text.contains('\x07'), "{text:?}");
        assert!(last.stderr_tail.len() <= 8 * 1024 + 32);
        assert!(last.stderr_tail.ends_with("last line"));

        let err = client.list_jobs().await.unwrap_err();
        let chain = cluster_spec::__private::error_chain::Chain(&err).to_string();
        assert!(
            chain.contains("the job count 1001 is outside its bounds 0 ..= 1000"),
            "{chain}"
        );
    });
}

/// A wait refused for want of memory with a retry pushback is tried again after it; one
/// refused without is the server's answer, at once.
#[test]
fn a_refusal_for_now_is_tried_again_after_the_pause_the_server_asks_for() {
    run(async {
        let (addr, waits) = fake(Lie::ExhaustedTwice(Some(300))).await;
        let client = client(&addr);
        let mut node = join(&client).await;
        let start = Instant::now();
        let waited = client.wait_round(&mut node, Duration::from_secs(5)).await;
        assert!(matches!(waited, Ok(Waited::JobDone(_))), "{waited:?}");
        assert!(
            start.elapsed() >= Duration::from_millis(600),
            "{:?}",
            start.elapsed()
        );
        assert_eq!(waits.load(Ordering::SeqCst), 3);

        let (addr, waits) = fake(Lie::ExhaustedTwice(None)).await;
        let client = self::client(&addr);
        let mut node = join(&client).await;
        let err = client
            .wait_round(&mut node, Duration::from_secs(5))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("ResourceExhausted"), "{err}");
        assert_eq!(waits.load(Ordering::SeqCst), 1);
    });
}
