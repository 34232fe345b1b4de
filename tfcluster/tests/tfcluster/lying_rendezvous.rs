//! `run --rdzv` and `status` against a rendezvous that ends the job with terminal escapes and
//! 15 MB of "stderr" (a fake one: the rendezvous's gRPC service, served in the test): the
//! agent's output, its `--error-file` and `status`'s output hold neither, only clean text of
//! bounded length; a refusal's status message with escapes and a line break is printed
//! clean, on one line.

use std::time::Duration;

use elastic::proto;
use elastic::proto::rendezvous_server::{Rendezvous, RendezvousServer};
use tonic::{Request, Response, Status};

use super::launch::Launch;

/// What a terminal would obey: clear the screen, set the window title.
const ESCAPES: &str = "\x1b[2J\x1b]0;owned\x07";

/// A line a refusal's text would forge at the start of a line of its own.
const FORGED: &str = "tfcluster: the job succeeded";

/// Takes every join, and answers every wait (and an operator) with the job's failure, dirty;
/// refuses a listing with escapes and a forged line in its status message.
struct DirtyEnd;

/// The job failed: escapes in its texts, 15 MB of stderr.
fn dirty_done() -> proto::JobDone {
    proto::JobDone {
        succeeded: false,
        detail: format!("failed{ESCAPES}"),
        first_failure: Some(proto::Failure {
            round: 1,
            node_id: "n1".into(),
            host: "h".into(),
            job: "worker".into(),
            status: Some(proto::TaskStatus {
                status: Some(proto::task_status::Status::ExitCode(1)),
            }),
            stderr_tail: format!("{}{ESCAPES}last line", "x".repeat(15 << 20)),
            ..Default::default()
        }),
        round: 1,
    }
}

#[tonic::async_trait]
impl Rendezvous for DirtyEnd {
    async fn join(
        &self,
        request: Request<proto::JoinRequest>,
    ) -> Result<Response<proto::JoinResponse>, Status> {
        Ok(Response::new(proto::JoinResponse {
            node_id: request.into_inner().node_id,
            round: 1,
            note: String::new(),
            heartbeat_timeout_ms: 3000,
            host: "127.0.0.1".into(),
            ..Default::default()
        }))
    }

    async fn wait_round(
        &self,
        _: Request<proto::WaitRoundRequest>,
    ) -> Result<Response<proto::WaitRoundResponse>, Status> {
        Ok(Response::new(proto::WaitRoundResponse {
            outcome: Some(proto::wait_round_response::Outcome::Done(dirty_done())),
        }))
    }

    async fn job_status(
        &self,
        request: Request<proto::JobStatusRequest>,
    ) -> Result<Response<proto::JobStatusResponse>, Status> {
        let mut done = dirty_done();
        // The 15 MB once (twice is past the client's 16 MB answer).
        let last_failure = done.first_failure.take();
        Ok(Response::new(proto::JobStatusResponse {
            rdzv_id: request.into_inner().rdzv_id,
            config: Some(proto::JobConfig {
                min_nodes: 1,
                max_nodes: 1,
                tasks_per_node: 1,
                ..Default::default()
            }),
            last_failure,
            phase: Some(proto::job_status_response::Phase::Done(done)),
            ..Default::default()
        }))
    }

    async fn list_jobs(
        &self,
        _: Request<proto::ListJobsRequest>,
    ) -> Result<Response<proto::ListJobsResponse>, Status> {
        // A refusal whose grpc-message (percent-encoded on the wire, decoded by tonic) would
        // clear the screen and forge a line of the client's own.
        Err(Status::permission_denied(format!(
            "no list{ESCAPES}\n{FORGED}"
        )))
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
        _: Request<proto::LeaveRequest>,
    ) -> Result<Response<proto::LeaveResponse>, Status> {
        Ok(Response::new(proto::LeaveResponse::default()))
    }

    async fn watch_rounds(
        &self,
        _: Request<proto::WatchRoundsRequest>,
    ) -> Result<Response<proto::WaitRoundResponse>, Status> {
        Err(Status::unimplemented("no observers here"))
    }
}

#[test]
fn escapes_and_megabytes_from_the_rendezvous_reach_neither_output_nor_error_file() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    runtime.spawn(
        tonic::transport::Server::builder()
            .add_service(RendezvousServer::new(DirtyEnd))
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
    );
    let dir = super::scratch("lying-rendezvous");
    let error_file = dir.path().join("error.json");
    let mut agent = Launch::start(
        &[
            "run",
            "--rdzv",
            &addr,
            "--rdzv-id",
            "job",
            "--error-file",
            error_file.to_str().unwrap(),
            "--",
            "true",
        ],
        &[],
    );
    let status = agent.wait(Duration::from_secs(60));
    let output = agent.stdout() + &agent.stderr();
    assert_eq!(status.code(), Some(1), "{output}");
    assert!(
        output.contains("last line"),
        "the tail's end is shown: {output}"
    );
    assert!(
        !output.contains('\x1b') && !output.contains('\x07'),
        "{output:?}"
    );
    assert!(output.len() < 64 * 1024, "{} bytes of output", output.len());
    let record = std::fs::read_to_string(&error_file).unwrap();
    assert!(
        !record.contains('\x1b') && !record.to_ascii_lowercase().contains("\\u001b"),
        "{record}"
    );
    assert!(record.len() < 64 * 1024, "{} bytes written", record.len());

    // What `status` prints of the same, as text and as JSON.
    for format in ["text", "json"] {
        let mut status = Launch::start(
            &[
                "status",
                "--rdzv",
                &addr,
                "--rdzv-id",
                "job",
                "--format",
                format,
            ],
            &[],
        );
        let code = status.wait(Duration::from_secs(60)).code();
        let output = status.stdout() + &status.stderr();
        assert_eq!(code, Some(0), "{output}");
        assert!(output.contains("last line"), "{output}");
        assert!(
            !output.contains('\x1b') && !output.to_ascii_lowercase().contains("\\u001b"),
            "{output:?}"
        );
        assert!(output.len() < 64 * 1024, "{} bytes of output", output.len());
    }

    // A listing refused with escapes and a forged line: the refusal is shown on one line.
    let mut list = Launch::start(&["status", "--rdzv", &addr], &[]);
    let code = list.wait(Duration::from_secs(60)).code();
    let output = list.stdout() + &list.stderr();
    assert_eq!(code, Some(1), "{output}");
    assert!(output.contains("no list"), "{output}");
    assert!(
        !output.contains('\x1b') && !output.contains('\x07'),
        "{output:?}"
    );
    assert!(
        !output.lines().any(|line| line.starts_with(FORGED)),
        "{output}"
    );
    runtime.shutdown_background();
}
