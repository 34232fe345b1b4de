//! The rendezvous's share of a round, all in one process on loopback, each agent with a
//! connection of its own, N agents with min = max = N: `last_join_to_round`, from the last
//! agent's join to every agent holding the round (issue 18's target on the built-in
//! rendezvous: 50 ms or less for 64); `all_join_at_once`, every agent joining at once as all
//! do when a round ends, to every agent holding the round (a restart's share). Each on the
//! built-in rendezvous and, suffixed `_etcd`, on a local three-member etcd cluster, each
//! agent an etcd client of its own (issue 22's targets, process-level: 200 ms to every task
//! of 64 spawned, 500 ms for a restart). Each size runs twice: as `N`, an open job, and as
//! `N_token`, a job with a token (issue 36: authentication adds at most 10 %); node secrets
//! are in both. On the built-in rendezvous each size also runs as `N_metrics`: an open job on
//! a second server whose `RendezvousMetrics` are registered into a Prometheus registry, as
//! `--metrics` does (issue 40: nothing measurable on round formation).

use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use elastic::{
    ClientOptions, EtcdOptions, JobConfig, Join, NodeRange, RendezvousClient, RendezvousMetrics,
    RendezvousServer, RendezvousServerBuilder, Token, Waited,
};
use prometheus_client::registry::Registry;

/// Each size's benchmark id, and the client options of its agents: an open job, and one with
/// a token.
fn variants(agents: u16) -> [(String, ClientOptions); 2] {
    [
        (agents.to_string(), ClientOptions::default()),
        (
            format!("{agents}_token"),
            ClientOptions::default().with_token(Token::generate()),
        ),
    ]
}
use etcd_cluster::EtcdCluster;

fn rounds(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // Every iteration is a job of its own; old ones are never in the way.
    let options = RendezvousServer::builder().with_max_jobs(usize::MAX);
    let metrics = RendezvousMetrics::default();
    let mut registry = Registry::default();
    metrics.register(&mut registry);
    let (server, metered) = runtime.block_on(async {
        let start = |options: RendezvousServerBuilder| {
            options.with_bind("127.0.0.1:0".parse().unwrap()).start()
        };
        (
            start(options.clone()).await.unwrap(),
            start(options.with_metrics(metrics)).await.unwrap(),
        )
    });
    let addr = server.local_addr().to_string();
    let metered_addr = metered.local_addr().to_string();
    let mut all_clients = Vec::new();
    let mut group = c.benchmark_group("last_join_to_round");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(10));
    let sizes = [8u16, 64];
    let on_metered = sizes.map(|n| (n, (format!("{n}_metrics"), ClientOptions::default()), true));
    for (agents, (id, client_options), metered) in sizes
        .into_iter()
        .flat_map(|n| variants(n).map(|v| (n, v, false)))
        .chain(on_metered)
    {
        let _runtime = runtime.enter(); // a client's connection is a tokio task
        let addr = if metered { &metered_addr } else { &addr };
        let clients: Vec<RendezvousClient> = (0..agents)
            .map(|_| RendezvousClient::new(addr.clone(), client_options.clone()).unwrap())
            .collect();
        bench_rounds(&mut group, &runtime, &id, &clients, ("last", last_join));
        all_clients.push((id, clients));
    }
    group.finish();
    bench_all_at_once(c, "", &runtime, &all_clients);
    runtime.block_on(server.shutdown());
    runtime.block_on(metered.shutdown());
    // The registry held the metered server's metrics throughout, as `--metrics` holds them.
    drop(registry);

    let etcd = EtcdCluster::start_local(3);
    let options = EtcdOptions::new(etcd.endpoints()).unwrap();
    let mut all_clients = Vec::new();
    let mut group = c.benchmark_group("last_join_to_round_etcd");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    for (agents, (id, client_options)) in [8u16, 64]
        .into_iter()
        .flat_map(|n| variants(n).map(|v| (n, v)))
    {
        let clients: Vec<RendezvousClient> = runtime.block_on(async {
            let mut clients = Vec::new();
            for _ in 0..agents {
                let options = options.clone();
                clients.push(
                    RendezvousClient::etcd(options, client_options.clone())
                        .await
                        .unwrap(),
                );
            }
            clients
        });
        bench_rounds(&mut group, &runtime, &id, &clients, ("last", last_join));
        all_clients.push((id, clients));
    }
    group.finish();
    bench_all_at_once(c, "_etcd", &runtime, &all_clients);
    drop(etcd);
}

/// One measurement per iteration: a job of its own of as many nodes as `clients`, its
/// benchmark id `id`.
fn bench_rounds<F, Fut>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    runtime: &tokio::runtime::Runtime,
    id: &str,
    clients: &[RendezvousClient],
    (name, measure): (&str, F),
) where
    F: Fn(Vec<RendezvousClient>, JobConfig, String) -> Fut + Copy,
    Fut: std::future::Future<Output = Duration>,
{
    let agents = clients.len() as u32;
    let config = JobConfig::new(NodeRange::new(agents, agents).unwrap(), 1).unwrap();
    let mut job = 0u64;
    group.bench_function(BenchmarkId::from_parameter(id), |b| {
        b.to_async(runtime).iter_custom(|iters| {
            let (clients, config) = (clients.to_vec(), config.clone());
            job += iters;
            let first_job = job - iters;
            async move {
                let mut total = Duration::ZERO;
                for i in 0..iters {
                    let rdzv_id = format!("{name}{id}-{}", first_job + i);
                    total += measure(clients.clone(), config.clone(), rdzv_id).await;
                }
                total
            }
        });
    });
}

/// All agents but the last join and wait; then the time from the last join to every agent
/// holding the round.
async fn last_join(clients: Vec<RendezvousClient>, config: JobConfig, rdzv_id: String) -> Duration {
    let join = |i: usize| Join::new(rdzv_id.clone(), config.clone(), vec![30_000 + i as u16]);
    let mut waiting = Vec::new();
    for (i, client) in clients[..clients.len() - 1].iter().enumerate() {
        let mut node = client.join(&join(i)).await.unwrap();
        let client = client.clone();
        waiting.push(tokio::spawn(async move {
            let waited = client
                .wait_round(&mut node, Duration::from_secs(30))
                .await
                .unwrap();
            assert!(matches!(waited, Waited::Round(_)));
        }));
    }
    // Let every wait reach the server before the clock starts.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let last = clients.last().unwrap();
    let start = Instant::now();
    let mut node = last.join(&join(clients.len() - 1)).await.unwrap();
    let waited = last
        .wait_round(&mut node, Duration::from_secs(30))
        .await
        .unwrap();
    for w in waiting {
        w.await.unwrap();
    }
    let took = start.elapsed();
    let Waited::Round(round) = waited else {
        panic!("no round");
    };
    assert_eq!(round.members().len(), clients.len());
    took
}

/// `all_join_at_once{suffix}`: the same agents and backend, every agent joining at once.
fn bench_all_at_once(
    c: &mut Criterion,
    suffix: &str,
    runtime: &tokio::runtime::Runtime,
    all_clients: &[(String, Vec<RendezvousClient>)],
) {
    let mut group = c.benchmark_group(format!("all_join_at_once{suffix}"));
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    for (id, clients) in all_clients {
        bench_rounds(&mut group, runtime, id, clients, ("all", all_at_once));
    }
    group.finish();
}

/// Every agent joins at once, as all do when a round ends; the time from the joins to every
/// agent holding the round.
async fn all_at_once(
    clients: Vec<RendezvousClient>,
    config: JobConfig,
    rdzv_id: String,
) -> Duration {
    let start = Instant::now();
    let agents = clients.len();
    let waits: Vec<_> = clients
        .into_iter()
        .enumerate()
        .map(|(i, client)| {
            let join = Join::new(rdzv_id.clone(), config.clone(), vec![30_000 + i as u16]);
            tokio::spawn(async move {
                let mut node = client.join(&join).await.unwrap();
                match client
                    .wait_round(&mut node, Duration::from_secs(30))
                    .await
                    .unwrap()
                {
                    Waited::Round(round) => round.members().len(),
                    other => panic!("no round: {other:?}"),
                }
            })
        })
        .collect();
    for w in waits {
        assert_eq!(w.await.unwrap(), agents);
    }
    start.elapsed()
}

criterion_group!(benches, rounds);
criterion_main!(benches);
