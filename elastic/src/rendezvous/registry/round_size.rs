//! How big a round may grow and still start: every task gets the whole cluster in its
//! `TF_CONFIG`, one environment variable, which Linux caps at 131,072 bytes
//! (`MAX_ARG_STRLEN`: past it `execve` fails with "Argument list too long", so no task of
//! the round could start); and every member gets the round in one answer, which the client
//! decodes up to [`MAX_ANSWER_BYTES`]. A round past either is refused as it forms (the job
//! ends failed, saying why and what to do); a join whose smallest round could never fit is
//! refused at once. Refusing, rather than forming the largest round that fits, keeps a round
//! what its config says (every member agrees on which nodes run), at the cost of a job
//! that must be asked again with fewer tasks.

use crate::assignment::task_address;
use crate::watched_round::WatchedRound;

/// Linux's limit on one environment variable (`MAX_ARG_STRLEN`, 32 pages of 4 KiB).
pub(crate) const MAX_ENV_VAR: usize = 131_072;
/// What of it a `TF_CONFIG` may take: the variable's name, `=` and the terminating NUL count
/// too, and a margin for what a launcher in between may add.
pub(crate) const MAX_TF_CONFIG: usize = MAX_ENV_VAR - 1024;
/// The largest answer a client decodes (a round for each member, `WaitRound`'s answer).
pub(crate) const MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;

/// What a task's `TF_CONFIG` adds to the cluster's JSON at most:
/// `{"cluster":…,"task":{"type":"evaluator","index":4294967295},"rpc_layer":"grpc"}`.
const TASK_PART: usize = 80;
/// What each address adds to a cluster's JSON besides itself: two quotes and a comma.
const PER_ADDRESS: usize = 3;

/// Why `round` cannot start its tasks, if it cannot: its longest `TF_CONFIG` or its answer
/// past the limit, in words that name the round, its task count, the size, the limit and
/// what to do.
pub(crate) fn too_large(round: &WatchedRound) -> Option<String> {
    let tasks = round.tasks().len();
    let tf_config = round.cluster_json().len() + TASK_PART;
    if tf_config > MAX_TF_CONFIG {
        return Some(format!(
            "round {} has {tasks} tasks, whose TF_CONFIG would be about {tf_config} bytes, past \
             Linux's limit of {MAX_ENV_VAR} bytes on one environment variable (less a margin: \
             {MAX_TF_CONFIG}), so no task could start; run fewer tasks per host or fewer hosts \
             (--nodes, --tasks-per-node), or give shorter host names",
            round.number()
        ));
    }
    // Each member's fields and their tags, each port a varint of at most 3 bytes.
    let members: usize = round
        .members()
        .iter()
        .map(|m| m.node_id.len() + m.host.len() + m.name.len() + 4 * m.ports.len() + 32)
        .sum();
    let answer = round.cluster_json().len() + members + 1024;
    (answer > MAX_ANSWER_BYTES).then(|| {
        format!(
            "round {} has {tasks} tasks in {} members, whose answer would be about {answer} \
             bytes, past the client's limit of {MAX_ANSWER_BYTES}; run fewer hosts, or give \
             shorter host names and node names",
            round.number(),
            round.members().len()
        )
    })
}

/// Why no round of `min_nodes` nodes with `tasks_per_node` tasks each, this node's tasks at
/// `host` on `ports`, could fit, if none could: the other nodes' addresses counted at their
/// shortest (`h:1`).
pub(crate) fn never_fits(
    min_nodes: u32,
    tasks_per_node: u32,
    host: &str,
    ports: &[u16],
) -> Option<String> {
    let own: usize = ports
        .iter()
        .map(|&p| task_address(host, p).len() + PER_ADDRESS)
        .sum();
    let others = (min_nodes.saturating_sub(1) as usize)
        * tasks_per_node as usize
        * ("h:1".len() + PER_ADDRESS);
    let least = own + others + TASK_PART;
    (least > MAX_TF_CONFIG).then(|| {
        format!(
            "the smallest round of this job ({min_nodes} nodes × {tasks_per_node} tasks, this \
             node's at {host:?}, the others' at the shortest addresses) makes a TF_CONFIG of at \
             least {least} bytes, past Linux's limit of {MAX_ENV_VAR} bytes on one environment \
             variable (less a margin: {MAX_TF_CONFIG}); run fewer tasks per host or fewer \
             hosts, or give a shorter host name"
        )
    })
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::super::tests::registry;
    use super::super::{JoinArgs, Refusal, Waited};
    use crate::rendezvous::credentials::{Credentials, Proof};
    use crate::{JobConfig, NodeRange};

    /// Joins `nodes` nodes of `tasks` tasks each at hosts `10.0.<i/250>.<i%250+1>`, ports from
    /// 10000: what the first node's wait finds.
    fn round_of(nodes: u32, tasks: u32) -> Waited {
        let (mut r, t0) = (registry(), Instant::now());
        let config = JobConfig::new(NodeRange::new(nodes, nodes).unwrap(), tasks).unwrap();
        for i in 0..nodes {
            let host = format!("10.0.{}.{}", i / 250, i % 250 + 1);
            r.join(
                JoinArgs {
                    rdzv_id: "job".into(),
                    config: config.clone(),
                    node_id: Some(format!("n{i}")),
                    host,
                    ports: (0..tasks).map(|t| 10_000 + t as u16).collect(),
                    name: String::new(),
                    peer: None,
                    credentials: Credentials::default(),
                },
                &Proof::default(),
                t0,
            )
            .unwrap();
        }
        r.wait("job", "n0", 0, t0).unwrap()
    }

    #[test]
    fn a_round_whose_tf_config_would_not_fit_fails_the_job_as_it_forms() {
        // 10,000 tasks at addresses like "10.0.0.12:10000" make a TF_CONFIG of about 190 KB.
        let Waited::Done(done) = round_of(40, 250) else {
            panic!("the round formed");
        };
        assert!(!done.succeeded);
        assert!(
            done.detail
                .starts_with("round 1 has 10000 tasks, whose TF_CONFIG would be about ")
                && done.detail.contains("past Linux's limit of 131072 bytes")
                && done
                    .detail
                    .contains("run fewer tasks per host or fewer hosts"),
            "{}",
            done.detail
        );
    }

    #[test]
    fn a_round_just_under_the_limit_forms() {
        // 6,000 tasks: about 122 KB.
        let Waited::Round { round, .. } = round_of(40, 150) else {
            panic!("the round did not form");
        };
        assert_eq!(round.round.tasks().len(), 6000);
        assert!(round.round.cluster_json().len() + super::TASK_PART <= super::MAX_TF_CONFIG);
    }

    #[test]
    fn a_join_whose_smallest_round_never_fits_is_refused() {
        let (mut r, t0) = (registry(), Instant::now());
        let host = ["a".repeat(60), "b".repeat(60), "c".repeat(60)].join(".");
        let config = JobConfig::new(NodeRange::new(64, 64).unwrap(), 256).unwrap();
        let err = r
            .join(
                JoinArgs {
                    rdzv_id: "job".into(),
                    config,
                    node_id: None,
                    host,
                    ports: (0..256).map(|t| 10_000 + t as u16).collect(),
                    name: String::new(),
                    peer: None,
                    credentials: Credentials::default(),
                },
                &Proof::default(),
                t0,
            )
            .unwrap_err();
        let Refusal::InvalidArgument(why) = err else {
            panic!("{err:?}");
        };
        assert!(
            why.starts_with(
                "the smallest round of this job (64 nodes × 256 tasks, this node's at \"aaaa"
            ) && why.contains("makes a TF_CONFIG of at least 145744 bytes"),
            "{why}"
        );
    }
}
