//! A job's nodes: who they are, whether each waits, runs in a round or idles, and what their
//! joining, leaving and going silent do to the running round.

use std::time::{Duration, Instant};

use super::calls::{JoinArgs, Joined, Refusal, Settings};
use super::job::{Job, Phase};
use super::node::{Node, NodeState};
use crate::error::duration;
use crate::outcome::EndReason;
use crate::rendezvous::credentials::Digest;

impl Job {
    pub(super) fn join(
        &mut self,
        node_id: String,
        args: JoinArgs,
        secret: Option<Digest>,
        now: Instant,
        settings: &Settings,
    ) -> Result<Joined, Refusal> {
        self.admit(&node_id, &args, now, settings.timeout)?;

        let seq = self.next_seq;
        let node = self.nodes.entry(node_id.clone()).or_insert_with(|| Node {
            seq,
            host: String::new(),
            ports: Vec::new(),
            name: String::new(),
            last_seen: now,
            state: NodeState::Idle,
            last_round: None,
            secret,
        });
        // A node of an older record, without one, takes the secret it joins with.
        node.secret = node.secret.or(secret);
        if node.seq == seq {
            self.next_seq += 1;
        }
        node.host = args.host;
        node.ports = args.ports;
        node.name = args.name;
        node.last_seen = now;
        let before = node.state;
        if !matches!(before, NodeState::Waiting(_)) {
            node.state = NodeState::Waiting(now);
        }
        let who = node.describe(&node_id);
        let mut note = String::new();
        match before {
            NodeState::Waiting(_) => {}
            NodeState::Member => {
                // Joining again means the node's tasks are gone: its round cannot go on.
                let round = self.rounds_formed;
                let detail = format!("{who} joined again while round {round} ran");
                self.end_round(EndReason::NodeLeft, detail, now);
                self.last_arrival = now;
            }
            NodeState::Idle => {
                self.last_arrival = now;
                if let Phase::Running(current) = &self.phase {
                    let (number, size) = (current.number, current.round.members().len() as u32);
                    let max = self.config.nodes().max();
                    if let (true, Some(wait)) = (size < max, self.churn.wait(now)) {
                        settings.metrics.join_deferred();
                        note = self.deferred_note(number, wait, now);
                    } else if size < max {
                        let detail =
                            format!("{who} joined; round {number} had {size} of max {max} nodes");
                        self.end_round(EndReason::NodeJoined, detail, now);
                        note = format!("round {number} ended to take this node in");
                    } else {
                        note = format!(
                            "round {number} is full (max {max} nodes): waiting for a later round"
                        );
                    }
                }
            }
        }
        self.try_close(now, settings);
        self.notify();
        let node = &self.nodes[&node_id];
        let round = match node.last_round.as_ref() {
            Some(r) if node.state == NodeState::Member => r.number,
            _ => self.next_round(),
        };
        if note.is_empty() {
            note = match &self.phase {
                Phase::Running(r) if r.number == round => format!("round {round} formed"),
                _ => self.pending(now, settings.last_call).detail,
            };
        }
        Ok(Joined {
            node_id,
            round,
            note,
            host: node.host.clone(),
            heartbeat_timeout: settings.timeout,
            // The rules never draw one: the caller's edge does (`Local`).
            secret: None,
        })
    }

    pub(super) fn leave(&mut self, node_id: &str, now: Instant) {
        let Some(node) = self.nodes.remove(node_id) else {
            return;
        };
        if node.state == NodeState::Member {
            let detail = format!("{} left", node.describe(node_id));
            self.end_round(EndReason::NodeLeft, detail, now);
        }
        self.notify();
    }

    /// Nodes silent for more than `timeout` are gone; a member among them ends its round.
    pub(super) fn lose_silent(&mut self, now: Instant, timeout: Duration) {
        let lost: Vec<String> = self
            .nodes
            .iter()
            .filter(|(_, n)| now.saturating_duration_since(n.last_seen) > timeout)
            .map(|(id, _)| id.clone())
            .collect();
        if lost.is_empty() {
            return;
        }
        let mut members = Vec::new();
        for id in &lost {
            let node = self.nodes.remove(id).expect("listed above");
            tracing::info!(rdzv_id = %self.id, node = %node.describe(id),
                silent_for_more_than = %duration(timeout), "node gone");
            if node.state == NodeState::Member {
                members.push(node.describe(id));
            }
        }
        if !members.is_empty() {
            let detail = format!(
                "{} silent for more than {}",
                members.join(", "),
                duration(timeout)
            );
            self.end_round(EndReason::NodeLost, detail, now);
        }
        self.notify();
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::super::tests::{LAST_CALL, TIMEOUT, config, ended, join_as, registry, round_of};
    use super::super::{Refusal, Waited};
    use crate::outcome::{EndReason, RoundStatus};

    #[test]
    fn a_late_joiner_waits_when_the_round_is_full() {
        let (mut r, t0, c) = (registry(), Instant::now(), config(1, 2, "", 0));
        join_as(&mut r, &c, "a", 1000, t0).unwrap();
        join_as(&mut r, &c, "b", 1001, t0).unwrap();
        let late = join_as(&mut r, &c, "c", 1002, t0).unwrap();
        assert_eq!(late.round, 2);
        assert_eq!(
            late.note,
            "round 1 is full (max 2 nodes): waiting for a later round"
        );
        assert_eq!(
            r.heartbeat("job", "a", 1, 0, t0).unwrap(),
            RoundStatus::Running
        );
        // b leaves: the round ends without counting a restart; c was first to wait, and a
        // rejoining closes round 2 at max.
        r.leave("job", "b", t0);
        assert_eq!(ended(&mut r, "a", 1, t0).reason, EndReason::NodeLeft);
        join_as(&mut r, &c, "a", 1000, t0).unwrap();
        assert_eq!(
            round_of(&mut r, "c", 0, t0),
            Some((2, 0, vec!["a".into(), "c".into()], 1))
        );
    }

    #[test]
    fn a_new_node_below_max_ends_the_round() {
        let (mut r, t0, c) = (registry(), Instant::now(), config(1, 3, "", 0));
        join_as(&mut r, &c, "a", 1000, t0).unwrap();
        r.tick(t0 + LAST_CALL);
        assert_eq!(round_of(&mut r, "a", 0, t0 + LAST_CALL).unwrap().2, ["a"]);
        let t1 = t0 + LAST_CALL * 2;
        let joined = join_as(&mut r, &c, "b", 1001, t1).unwrap();
        assert_eq!(joined.note, "round 1 ended to take this node in");
        let end = ended(&mut r, "a", 1, t1);
        assert_eq!((end.reason, end.restart_count), (EndReason::NodeJoined, 0));
        assert_eq!(
            end.detail,
            "node b on 127.0.0.1 joined; round 1 had 1 of max 3 nodes"
        );
        join_as(&mut r, &c, "a", 1000, t1).unwrap();
        r.tick(t1 + LAST_CALL);
        // a keeps rank 0: members are in first-join order.
        assert_eq!(
            round_of(&mut r, "b", 0, t1 + LAST_CALL).unwrap().2,
            ["a", "b"]
        );
    }

    #[test]
    fn a_silent_node_is_lost_and_counted() {
        let (mut r, t0, c) = (registry(), Instant::now(), config(1, 2, "", 2));
        join_as(&mut r, &c, "a", 1000, t0).unwrap();
        join_as(&mut r, &c, "b", 1001, t0).unwrap();
        let t1 = t0 + TIMEOUT / 2;
        r.heartbeat("job", "a", 1, 0, t1).unwrap();
        r.tick(t0 + TIMEOUT + Duration::from_millis(1));
        let end = ended(&mut r, "a", 1, t1 + TIMEOUT / 2);
        assert_eq!((end.reason, end.restart_count), (EndReason::NodeLost, 1));
        assert_eq!(
            end.detail,
            "node b on 127.0.0.1 silent for more than 15.0 s"
        );
        assert!(matches!(
            r.heartbeat("job", "b", 1, 0, t1),
            Err(Refusal::NotFound(_))
        ));
        let t2 = t1 + TIMEOUT / 2;
        join_as(&mut r, &c, "a", 1000, t2).unwrap();
        r.tick(t2 + LAST_CALL);
        assert_eq!(
            round_of(&mut r, "a", 1, t2 + LAST_CALL),
            Some((2, 1, vec!["a".into()], 0))
        );
    }

    #[test]
    fn rejoining_while_a_member_ends_the_round() {
        let (mut r, t0, c) = (registry(), Instant::now(), config(1, 1, "", 0));
        join_as(&mut r, &c, "a", 1000, t0).unwrap();
        let joined = join_as(&mut r, &c, "a", 1000, t0).unwrap();
        assert_eq!(joined.round, 2, "{}", joined.note);
        assert_eq!(ended(&mut r, "a", 1, t0).reason, EndReason::NodeLeft);
        assert_eq!(round_of(&mut r, "a", 1, t0).unwrap().0, 2);
    }

    #[test]
    fn a_retried_join_is_the_same_node() {
        let (mut r, t0, c) = (registry(), Instant::now(), config(2, 2, "", 0));
        join_as(&mut r, &c, "a", 1000, t0).unwrap();
        join_as(&mut r, &c, "a", 1000, t0).unwrap();
        let Waited::Pending(p) = r.wait("job", "a", 0, t0).unwrap() else {
            panic!("a retried join counted twice");
        };
        assert_eq!(p.waiting, 1);
    }
}
