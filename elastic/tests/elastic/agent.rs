//! The agent's stop: a signal counts from the moment the agent runs, not only once it holds
//! a round.

use std::time::Duration;

use elastic::supervise::Signal;
use elastic::{Agent, AgentOptions, AgentOutcome, ClientOptions, Join, RendezvousClient};

use crate::common::{config, refusing, run};

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
            .with_gpus_per_task(Some(0)),
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
