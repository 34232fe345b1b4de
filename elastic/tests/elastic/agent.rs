//! The agent's stop: a signal counts from the moment the agent runs, not only once it holds
//! a round — joining, waiting alone, or between rounds — and ends it within a second.

use std::time::{Duration, Instant};

use elastic::launcher::supervise::Signal;
use elastic::{Agent, AgentOptions, AgentOutcome, ClientOptions, Join, RendezvousClient};

use crate::common::{client, config, refusing, run, server};

/// A SIGTERM while the agent's join is retried against a rendezvous that is not there yet
/// (for a minute) stops the agent at once.
#[test]
fn a_stop_while_joining_stops_the_agent() {
    run(async {
        let (_held, addr) = refusing();
        let options = ClientOptions::default().with_retry_for(Duration::from_secs(60));
        let client = RendezvousClient::new(addr.to_string(), options).unwrap();
        let agent = Agent::new(
            client,
            AgentOptions::new(
                Join::new("job", config("1", 0), Vec::new()),
                vec!["true".into()],
            )
            .with_grace(Duration::from_secs(1))
            .with_join_timeout(Duration::from_secs(60))
            .with_gpus_per_task(Some(elastic::launcher::GpusPerTask::Each(0))),
        );
        let stop = futures_util::stream::once(async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            Signal::SIGTERM
        });
        let outcome = tokio::time::timeout(Duration::from_secs(10), agent.run(stop))
            .await
            .expect("the agent stops within 10 s of its stop, not after the join's retries")
            .unwrap();
        assert!(
            matches!(outcome, AgentOutcome::Stopped(Signal::SIGTERM)),
            "{outcome:?}"
        );
    });
}

/// A stop stream fed by hand, and its sender.
fn stop_stream() -> (
    tokio::sync::mpsc::UnboundedSender<Signal>,
    impl futures_util::Stream<Item = Signal>,
) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|signal| (signal, rx))
    });
    (tx, stream)
}

/// An agent of job `job` (two nodes, one task each) running `sleep 1000`.
fn sleeper(server: &elastic::RendezvousServer) -> Agent {
    sleeper_with(server, 0)
}

/// [`sleeper`], of a job with `max_restarts`.
fn sleeper_with(server: &elastic::RendezvousServer, max_restarts: u32) -> Agent {
    Agent::new(
        client(server),
        AgentOptions::new(
            Join::new("job", config("2", max_restarts), Vec::new()),
            vec!["sh".into(), "-c".into(), "exec sleep 1000".into()],
        )
        .with_grace(Duration::from_secs(1))
        .with_join_timeout(Duration::from_secs(60))
        .with_gpus_per_task(Some(elastic::launcher::GpusPerTask::Each(0))),
    )
}

/// The most a stop may take here: a quiet run takes milliseconds; an agent that waited out
/// its held call instead (the rendezvous holds a wait up to 10 s) would take longer.
const STOPPED_WITHIN: Duration = Duration::from_secs(5);

/// An agent of a 2-node job that waits alone (the second host never comes) stops at once on
/// a SIGTERM.
#[test]
fn a_stop_while_waiting_alone_stops_the_agent_at_once() {
    run(async {
        let server = server().await;
        let agent = sleeper(&server);
        let (tx, stop) = stop_stream();
        let ran = async {
            let outcome = agent.run(stop).await;
            (outcome, Instant::now())
        };
        let signal = async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            tx.send(Signal::SIGTERM).unwrap();
            Instant::now()
        };
        let ((outcome, ended), sent) = tokio::join!(ran, signal);
        assert!(
            matches!(outcome, Ok(AgentOutcome::Stopped(Signal::SIGTERM))),
            "{outcome:?}"
        );
        assert!(ended - sent < STOPPED_WITHIN, "{:?}", ended - sent);
    });
}

/// After its round ended (the other node left), an agent waiting alone for the next round
/// stops at once on a SIGTERM: it does not wait the round out.
#[test]
fn a_stop_after_a_round_ended_stops_the_agent_at_once() {
    run(async {
        let server = server().await;
        let (a, b) = (sleeper(&server), sleeper(&server));
        let (tx_a, stop_a) = stop_stream();
        let (tx_b, stop_b) = stop_stream();
        let observer = client(&server);
        let ran_a = async {
            let outcome = a.run(stop_a).await;
            (outcome, Instant::now())
        };
        let ran_b = b.run(stop_b);
        let drive = async {
            // Round 1 runs with both; then b leaves, a's round ends and it waits alone.
            round_after(&observer, 0).await;
            tx_b.send(Signal::SIGTERM).unwrap();
            // Until a waits alone for round 2.
            loop {
                match observer
                    .watch_round("job", None, Duration::from_secs(1))
                    .await
                {
                    Ok(elastic::Watched::Pending {
                        round: 2,
                        waiting: 1,
                        ..
                    }) => break,
                    _ => tokio::time::sleep(Duration::from_millis(100)).await,
                }
            }
            tx_a.send(Signal::SIGTERM).unwrap();
            Instant::now()
        };
        let ((outcome, ended), by_b, sent) = tokio::join!(ran_a, ran_b, drive);
        assert!(matches!(by_b, Ok(AgentOutcome::Stopped(_))), "{by_b:?}");
        assert!(
            matches!(outcome, Ok(AgentOutcome::Stopped(Signal::SIGTERM))),
            "{outcome:?}"
        );
        assert!(ended - sent < STOPPED_WITHIN, "{:?}", ended - sent);
    });
}

/// An agent whose process stalls past the heartbeat timeout (its runtime blocked, as a
/// host under load or SIGSTOPped) is lost by the rendezvous; when it runs again, its
/// heartbeats find it lost and it joins again: the next round has both hosts. (It exited,
/// which cost the job the host, and where the agent served the rendezvous, the whole job.)
#[test]
fn an_agent_the_rendezvous_lost_joins_again() {
    run(async {
        let server = crate::common::server_with(
            elastic::RendezvousServer::builder()
                .with_timeout(Duration::from_secs(1))
                .with_last_call(Duration::from_millis(300)),
        )
        .await;
        let observer = client(&server);
        let (tx_a, stop_a) = stop_stream();
        let (stall_tx, stall_rx) = tokio::sync::oneshot::channel::<()>();
        // Agent a runs on a runtime of its own, on one thread, which the stall blocks.
        let a = {
            let agent = sleeper_with(&server, 3);
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                runtime.spawn(async {
                    if stall_rx.await.is_ok() {
                        std::thread::sleep(Duration::from_millis(2500));
                    }
                });
                // Its error as text: the thread's result stays small.
                runtime
                    .block_on(agent.run(stop_a))
                    .map_err(|e| e.to_string())
            })
        };
        let b = sleeper_with(&server, 3);
        let (tx_b, stop_b) = stop_stream();
        let drive = async {
            let first = round_after(&observer, 0).await;
            stall_tx.send(()).unwrap();
            let next = round_after(&observer, first.number()).await;
            tx_a.send(Signal::SIGTERM).unwrap();
            tx_b.send(Signal::SIGTERM).unwrap();
            (first, next)
        };
        let (by_b, (first, next)) = tokio::join!(b.run(stop_b), drive);
        let by_a = tokio::task::spawn_blocking(move || a.join().unwrap())
            .await
            .unwrap();
        assert_eq!(first.members().len(), 2);
        assert_eq!(
            next.members().len(),
            2,
            "both hosts in the next round: {next:?}"
        );
        assert_eq!(next.restart_count(), 1, "the loss counted once: {next:?}");
        assert!(matches!(by_a, Ok(AgentOutcome::Stopped(_))), "{by_a:?}");
        assert!(matches!(by_b, Ok(AgentOutcome::Stopped(_))), "{by_b:?}");
    });
}

/// The job's first running round numbered above `after`, within 20 s.
async fn round_after(observer: &RendezvousClient, after: u64) -> elastic::WatchedRound {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        assert!(
            Instant::now() < deadline,
            "no round after {after} within 20 s"
        );
        match observer
            .watch_round("job", None, Duration::from_secs(1))
            .await
        {
            Ok(elastic::Watched::Round(round)) if round.number() > after => return round,
            _ => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}
