//! An operator's view of the jobs (`JobStatus`, `ListJobs`), on both backends: a job's phase,
//! round, nodes, restarts and last failure as its nodes saw them; a long poll that answers at
//! the change; an unknown job; the jobs a token opens, and a job's status refused without its
//! token.

use std::time::{Duration, Instant};

use elastic::{EndReason, JobPhase, JobState, NodeState, RendezvousClient, TaskStatus, Token};

use crate::common::{
    Backend, LAST_CALL, Rdzv, TIMEOUT, config, fast, join, on_both_backends, round,
};

const POLL: Duration = Duration::from_secs(10);

fn token(text: &str) -> Token {
    Token::new(format!("{text}-0123456789abcdef")).unwrap()
}

/// The ids and states of the jobs `client` may list.
async fn listed(client: &RendezvousClient) -> Vec<(String, JobState)> {
    client
        .list_jobs()
        .await
        .unwrap()
        .into_iter()
        .map(|j| (j.rdzv_id, j.state))
        .collect()
}

async fn a_status_follows_the_job_and_a_long_poll_answers_at_the_change(backend: Backend) {
    let rdzv = Rdzv::start(backend, LAST_CALL, TIMEOUT).await;
    let (client, operator) = (rdzv.client().await, rdzv.client().await);

    let err = operator.job_status("job", None, POLL).await.unwrap_err();
    assert!(err.is_not_found(), "{err}");
    assert!(err.to_string().contains("\"job\""), "{err}");
    assert!(listed(&operator).await.is_empty());

    let c = config("2:2", 2);
    let mut a = join(&client, "job", &c, 0).await;
    let forming = operator.job_status("job", None, POLL).await.unwrap();
    assert!(
        matches!(
            forming.phase,
            JobPhase::Forming {
                round: 1,
                waiting: 1,
                ..
            }
        ),
        "{:?}",
        forming.phase
    );
    assert_eq!(forming.nodes.len(), 1);
    assert_eq!(forming.nodes[0].name, "agent0");
    assert!(matches!(forming.nodes[0].state, NodeState::Waiting(_)));
    assert_eq!(
        listed(&operator).await,
        [("job".to_owned(), JobState::Forming)]
    );

    // A long poll after the forming status answers when the round forms, not at its end.
    let poll = {
        let operator = operator.clone();
        let digest = forming.digest;
        tokio::spawn(async move {
            let asked = Instant::now();
            let status = operator.job_status("job", Some(digest), POLL).await;
            (status, asked.elapsed())
        })
    };
    let mut b = join(&client, "job", &c, 1).await;
    let (ra, rb) = tokio::join!(round(&client, &mut a), round(&client, &mut b));
    let (running, waited) = poll.await.unwrap();
    let running = running.unwrap();
    assert!(waited < POLL / 2, "the long poll answered after {waited:?}");
    let JobPhase::Running(seen) = &running.phase else {
        panic!("{:?}", running.phase)
    };
    assert_eq!(seen.number(), ra.number());
    assert_eq!(seen.members(), ra.members());
    assert_eq!(seen.cluster_spec(), rb.cluster_spec());
    let states: Vec<NodeState> = running.nodes.iter().map(|n| n.state).collect();
    assert_eq!(
        states,
        [NodeState::Member { rank: 0 }, NodeState::Member { rank: 1 }]
    );
    assert!(running.nodes.iter().all(|n| !n.late));
    assert_eq!(running.restart_count, 0);

    // A long poll on an unchanged job answers at its poll's end with the same status.
    let same = operator
        .job_status("job", Some(running.digest), Duration::from_millis(300))
        .await
        .unwrap();
    assert_eq!(same.digest, running.digest);

    client
        .report(&b, rb.number(), 0, TaskStatus::Exited(3), "boom\n")
        .await
        .unwrap();
    let failed = operator.job_status("job", None, POLL).await.unwrap();
    assert_eq!((failed.restart_count, failed.rounds_formed), (1, 1));
    let last = failed.last_failure.as_ref().expect("a last failure");
    assert_eq!(
        (last.node_id.as_str(), last.job.as_str()),
        (b.node_id(), "worker")
    );
    assert_eq!((last.index, last.stderr_tail.as_str()), (1, "boom\n"));
    let end = failed.last_end.as_ref().expect("a round end");
    assert_eq!((end.round, end.reason), (1, EndReason::TaskFailed));
    assert_eq!(listed(&operator).await[0].1, JobState::Forming);
    rdzv.shutdown().await;
}

async fn a_token_opens_its_own_job_to_an_operator_and_no_other(backend: Backend) {
    let rdzv = Rdzv::start(backend, LAST_CALL, TIMEOUT).await;
    let ours = rdzv.client_with(fast().with_token(token("ours"))).await;
    let open = rdzv.client().await;
    let theirs = rdzv.client_with(fast().with_token(token("theirs"))).await;
    join(&ours, "secret-job", &config("2:2", 0), 0).await;
    join(&open, "open-job", &config("2:2", 0), 1).await;

    let forming = |id: &str| (id.to_owned(), JobState::Forming);
    assert_eq!(listed(&ours).await, [forming("secret-job")]);
    assert_eq!(listed(&open).await, [forming("open-job")]);
    assert!(listed(&theirs).await.is_empty());

    assert_eq!(
        ours.job_status("secret-job", None, POLL)
            .await
            .unwrap()
            .nodes
            .len(),
        1
    );
    for stranger in [&open, &theirs] {
        let err = stranger
            .job_status("secret-job", None, POLL)
            .await
            .unwrap_err();
        assert!(err.is_token_refused(), "{err}");
    }
    rdzv.shutdown().await;
}

on_both_backends!(
    a_status_follows_the_job_and_a_long_poll_answers_at_the_change,
    a_token_opens_its_own_job_to_an_operator_and_no_other,
);
