//! What every test uses: a server with short timings, agents, and a deadline per test.

use std::future::Future;
use std::time::Duration;

use elastic::{
    ClientOptions, JobConfig, Join, Node, RendezvousClient, RendezvousServer, Round, ServerOptions,
    Waited,
};

/// A test's whole budget; none comes near it unless something hangs.
pub(crate) const TEST_DEADLINE: Duration = Duration::from_secs(30);

/// Runs `test` on a two-thread runtime and fails it if it takes longer than
/// [`TEST_DEADLINE`].
pub(crate) fn run<F: Future<Output = ()>>(test: F) {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            tokio::time::timeout(TEST_DEADLINE, test)
                .await
                .expect("the test hung");
        });
}

/// A server on 127.0.0.1 with a 300 ms last call and a 15 s heartbeat timeout.
pub(crate) async fn server() -> RendezvousServer {
    server_with(ServerOptions::default().last_call(Duration::from_millis(300))).await
}

pub(crate) async fn server_with(options: ServerOptions) -> RendezvousServer {
    RendezvousServer::start("127.0.0.1:0".parse().unwrap(), options)
        .await
        .unwrap()
}

/// A client with short deadlines.
pub(crate) fn client(server: &RendezvousServer) -> RendezvousClient {
    RendezvousClient::new(server.local_addr().to_string(), fast()).unwrap()
}

pub(crate) fn fast() -> ClientOptions {
    ClientOptions::default()
        .connect_timeout(Duration::from_secs(1))
        .rpc_timeout(Duration::from_secs(2))
        .retry_for(Duration::from_secs(2))
}

/// `nodes` (`"2:4"`), one task per node, workers only, `max_restarts`.
pub(crate) fn config(nodes: &str, max_restarts: u32) -> JobConfig {
    JobConfig::new(nodes.parse().unwrap(), 1)
        .unwrap()
        .with_max_restarts(max_restarts)
}

/// Agent `i` of job `rdzv_id` joins with port `20000 + i`, named `agent<i>`.
pub(crate) async fn join(
    client: &RendezvousClient,
    rdzv_id: &str,
    config: &JobConfig,
    i: u16,
) -> Node {
    let join = Join::new(rdzv_id, config.clone(), vec![20_000 + i]).name(format!("agent{i}"));
    client.join(&join).await.unwrap()
}

/// Waits (up to 10 s) for the node's next round.
pub(crate) async fn round(client: &RendezvousClient, node: &mut Node) -> Round {
    match client
        .wait_round(node, Duration::from_secs(10))
        .await
        .unwrap()
    {
        Waited::Round(round) => round,
        Waited::JobDone(done) => panic!("no round, the job is done: {done}"),
        other => panic!("unexpected {other:?}"),
    }
}

/// The members of a round, by name.
pub(crate) fn names(round: &Round) -> Vec<&str> {
    round.members().iter().map(|m| m.name.as_str()).collect()
}
