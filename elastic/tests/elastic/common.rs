//! What every test uses: a rendezvous with short timings on either backend, agents, and a
//! deadline per test that its setup (starting etcd) does not count. The shared suite (rounds,
//! observers, a round's resolver) runs each test twice, on the built-in rendezvous and on a
//! real three-member etcd cluster ([`on_both_backends!`]).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use elastic::{
    ClientOptions, EtcdOptions, JobConfig, Join, Node, RendezvousClient, RendezvousServer,
    RendezvousServerBuilder, Round, Waited,
};
use etcd_cluster::EtcdCluster;

/// A test's whole budget, its setup left out; none comes near it unless something hangs.
pub(crate) const TEST_DEADLINE: Duration = Duration::from_secs(30);
/// One setup's budget: etcd-cluster gives up on a start after 30 s, and tries other ports up to
/// five times when a member finds its port taken.
const SETUP_DEADLINE: Duration = Duration::from_secs(180);

/// Time a test spent in [`setup`].
#[derive(Default)]
struct SetupTime {
    /// In setups that are over.
    done: Duration,
    /// When the setup under way began.
    since: Option<Instant>,
}

tokio::task_local! {
    /// The running test's [`SetupTime`].
    static SETUP: Arc<Mutex<SetupTime>>;
}

/// Runs `test` on a two-thread runtime and fails it if it takes longer than
/// [`TEST_DEADLINE`], not counting its [`setup`]s, or if a setup takes longer than
/// [`SETUP_DEADLINE`].
pub(crate) fn run<F: Future<Output = ()>>(test: F) {
    let setup = Arc::new(Mutex::new(SetupTime::default()));
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let start = Instant::now();
            let test = SETUP.scope(Arc::clone(&setup), test);
            tokio::pin!(test);
            loop {
                let (in_setups, under_way, now) = {
                    let time = setup.lock().unwrap();
                    let now = Instant::now();
                    let under_way = time.since.map(|since| now - since);
                    (time.done + under_way.unwrap_or_default(), under_way, now)
                };
                let spent = (now - start).saturating_sub(in_setups);
                assert!(
                    under_way.is_none_or(|took| took < SETUP_DEADLINE),
                    "the test's setup hung: {SETUP_DEADLINE:?}"
                );
                assert!(
                    spent < TEST_DEADLINE,
                    "the test hung: {spent:?} besides {in_setups:?} of setup"
                );
                // Checks again when the setup under way would overrun.
                let left = match under_way {
                    Some(took) => (TEST_DEADLINE - spent).min(SETUP_DEADLINE - took),
                    None => TEST_DEADLINE - spent,
                };
                if tokio::time::timeout(left, &mut test).await.is_ok() {
                    return;
                }
            }
        });
}

/// Runs `work` (a blocking start of the test's etcd) on a blocking thread, out of the test's
/// deadline; a panic in it is the test's.
///
/// # Panics
///
/// Outside [`run`].
pub(crate) async fn setup<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    let time = SETUP.with(Arc::clone);
    let since = Instant::now();
    time.lock().unwrap().since = Some(since);
    let done = tokio::task::spawn_blocking(work).await;
    {
        let mut time = time.lock().unwrap();
        time.done += since.elapsed();
        time.since = None;
    }
    done.unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))
}

/// The shared suite's last call and heartbeat timeout.
pub(crate) const LAST_CALL: Duration = Duration::from_millis(300);
pub(crate) const TIMEOUT: Duration = Duration::from_secs(15);

/// Which rendezvous a shared test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Backend {
    /// A `RendezvousServer` on 127.0.0.1.
    BuiltIn,
    /// Three etcd members on 127.0.0.1, each client a `RendezvousClient::etcd`.
    Etcd,
}

/// A rendezvous under test and the timings its jobs get.
pub(crate) struct Rdzv {
    server: Option<RendezvousServer>,
    etcd: Option<EtcdCluster>,
    last_call: Duration,
    timeout: Duration,
}

impl Rdzv {
    pub(crate) async fn start(backend: Backend, last_call: Duration, timeout: Duration) -> Self {
        let (server, etcd) = match backend {
            Backend::BuiltIn => {
                let options = RendezvousServer::builder()
                    .with_last_call(last_call)
                    .with_timeout(timeout);
                (Some(server_with(options).await), None)
            }
            Backend::Etcd => (None, Some(setup(|| EtcdCluster::start_local(3)).await)),
        };
        Self {
            server,
            etcd,
            last_call,
            timeout,
        }
    }

    /// A client, as one more agent process would have (an etcd client of its own).
    pub(crate) async fn client(&self) -> RendezvousClient {
        self.client_with(fast()).await
    }

    /// A client with `options` (a token), as one more agent process would have.
    pub(crate) async fn client_with(&self, options: ClientOptions) -> RendezvousClient {
        match (&self.server, &self.etcd) {
            (Some(server), _) => {
                RendezvousClient::new(server.local_addr().to_string(), options).unwrap()
            }
            (None, Some(etcd)) => RendezvousClient::etcd(self.etcd_options(etcd), options)
                .await
                .unwrap(),
            (None, None) => unreachable!("one backend or the other"),
        }
    }

    fn etcd_options(&self, etcd: &EtcdCluster) -> EtcdOptions {
        EtcdOptions::new(etcd.endpoints())
            .unwrap()
            .with_last_call(self.last_call)
            .with_timeout(self.timeout)
    }

    /// How errors name the rendezvous.
    pub(crate) fn addr(&self) -> String {
        match (&self.server, &self.etcd) {
            (Some(server), _) => server.local_addr().to_string(),
            (None, Some(etcd)) => self.etcd_options(etcd).to_string(),
            (None, None) => unreachable!("one backend or the other"),
        }
    }

    pub(crate) async fn shutdown(self) {
        if let Some(server) = self.server {
            server.shutdown().await;
        }
        if let Some(etcd) = self.etcd {
            tokio::task::spawn_blocking(move || drop(etcd))
                .await
                .unwrap();
        }
    }
}

/// For each `async fn name(backend: Backend)` of the shared suite, a module `name` with one
/// test per backend: `name::built_in` and `name::etcd`.
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                use crate::common::{Backend, run};

                #[test]
                fn built_in() {
                    run(super::$name(Backend::BuiltIn));
                }

                #[test]
                fn etcd() {
                    run(super::$name(Backend::Etcd));
                }
            }
        )*
    };
}
pub(crate) use on_both_backends;

/// A server on 127.0.0.1 with a 300 ms last call and a 15 s heartbeat timeout.
pub(crate) async fn server() -> RendezvousServer {
    server_with(RendezvousServer::builder().with_last_call(Duration::from_millis(300))).await
}

pub(crate) async fn server_with(options: RendezvousServerBuilder) -> RendezvousServer {
    options
        .with_bind("127.0.0.1:0".parse().unwrap())
        .start()
        .await
        .unwrap()
}

/// An address of 127.0.0.1 that refuses connections, as where no rendezvous runs yet, while the
/// socket returned holds it: bound, not listening, with SO_REUSEADDR, so that no other process
/// listens there but a server of the test may ([`rebind`]).
pub(crate) fn refusing() -> (tokio::net::TcpSocket, SocketAddr) {
    let held = tokio::net::TcpSocket::new_v4().unwrap();
    held.set_reuseaddr(true).unwrap();
    held.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = held.local_addr().unwrap();
    (held, addr)
}

/// Tries of a test that binds an address again after letting it go ([`rebind`]).
const REBIND_TRIES: usize = 5;

/// A server on `addr`, an address this test let go of and now binds again; `None` when another
/// process took it meanwhile (the test starts over on another, [`on_another_address`]).
pub(crate) async fn rebind(
    addr: SocketAddr,
    options: RendezvousServerBuilder,
) -> Option<RendezvousServer> {
    match options.with_bind(addr).start().await {
        Ok(server) => Some(server),
        Err(elastic::Error::Bind { source, .. })
            if source.kind() == std::io::ErrorKind::AddrInUse =>
        {
            None
        }
        Err(e) => panic!("{e}"),
    }
}

/// Runs `test` until a try of it is not cut short by an address taken from under it (`None`,
/// from [`rebind`]), each try on addresses of its own, at most [`REBIND_TRIES`] times.
pub(crate) async fn on_another_address<F: Future<Output = Option<()>>>(
    mut test: impl FnMut() -> F,
) {
    for _ in 0..REBIND_TRIES {
        if test().await.is_some() {
            return;
        }
    }
    panic!("another process took the address this test let go of, {REBIND_TRIES} times");
}

/// A client with short deadlines.
pub(crate) fn client(server: &RendezvousServer) -> RendezvousClient {
    RendezvousClient::new(server.local_addr().to_string(), fast()).unwrap()
}

pub(crate) fn fast() -> ClientOptions {
    ClientOptions::default()
        .with_connect_timeout(Duration::from_secs(1))
        .with_rpc_timeout(Duration::from_secs(2))
        .with_retry_for(Duration::from_secs(2))
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
    let join = Join::new(rdzv_id, config.clone(), vec![20_000 + i]).with_name(format!("agent{i}"));
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
