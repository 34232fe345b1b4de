//! A job's nodes: who they are, whether each waits, runs in a round or idles, and what their
//! joining, leaving and going silent do to the running round.

use std::time::{Duration, Instant};

use super::calls::{JoinArgs, Joined, Refusal, Settings};
use super::formed::FormedRound;
use super::job::{Job, Phase};
use super::node::{Node, NodeState, StandingNotice};
use crate::error::duration;
use crate::host_notice::{HostNotice, MAX_DEPARTURE_ASIDE};
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
            notice: None,
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
                    let host = &self.nodes[&node_id].host;
                    if size < max && self.is_aside(host, now) {
                        // Ending the round could not take it in.
                        note = format!(
                            "host {host} is out of the job's rounds for now (see the job's \
                             hosts set aside): waiting"
                        );
                    } else if let (true, Some(wait)) = (size < max, self.churn.wait(now)) {
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

    /// Node `node_id` leaves; with a `notice` that has a deadline, ahead of it: a planned
    /// end of its round, and its host out of the job's rounds until the deadline.
    pub(super) fn leave(&mut self, node_id: &str, notice: Option<&HostNotice>, now: Instant) {
        let Some(node) = self.nodes.remove(node_id) else {
            return;
        };
        let who = node.describe(node_id);
        let departure = notice.filter(|n| n.is_departure());
        if let Some(notice) = departure {
            self.departed = Some(now);
            let notice = StandingNotice::at(notice, now);
            let until = notice.deadline.map(|d| d.min(now + MAX_DEPARTURE_ASIDE));
            if let Some(until) = until {
                let reason = format!("its node left ahead of a {}", notice.as_of(now));
                self.host_departs(&node.host, until, reason);
            }
        }
        if node.state == NodeState::Member {
            match departure {
                Some(notice) => {
                    let detail = format!("{who} left ahead of its {}", notice.bounded());
                    self.end_round(EndReason::NodeDeparted, detail, now);
                }
                None => self.end_round(EndReason::NodeLeft, format!("{who} left"), now),
            }
        }
        self.notify();
    }

    /// The most urgent departure notice standing for a member of `round` that runs a
    /// parameter server and not the chief, as of `now`: what the chief saves ahead of.
    pub(super) fn server_notice(&self, round: &FormedRound, now: Instant) -> Option<HostNotice> {
        self.nodes
            .iter()
            .filter(|(id, _)| round.runs_job(id, "ps") && !round.runs_job(id, "chief"))
            .filter_map(|(_, n)| n.notice.as_ref().filter(|n| n.deadline.is_some()))
            .min_by_key(|n| n.deadline)
            .map(|n| n.as_of(now))
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

    use super::super::tests::{
        LAST_CALL, TIMEOUT, config, ended, join_as, join_on, registry, round_of,
    };
    use super::super::{Refusal, Waited};
    use crate::host_notice::HostNotice;
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
            r.heartbeat("job", "a", 1, (0, 0), None, t0).unwrap(),
            RoundStatus::Running
        );
        // b leaves: the round ends without counting a restart; c was first to wait, and a
        // rejoining closes round 2 at max.
        r.leave("job", "b", None, t0);
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
        r.heartbeat("job", "a", 1, (0, 0), None, t1).unwrap();
        r.tick(t0 + TIMEOUT + Duration::from_millis(1));
        let end = ended(&mut r, "a", 1, t1 + TIMEOUT / 2);
        assert_eq!((end.reason, end.restart_count), (EndReason::NodeLost, 1));
        assert_eq!(
            end.detail,
            "node b on 127.0.0.1 silent for more than 15.0 s"
        );
        assert!(matches!(
            r.heartbeat("job", "b", 1, (0, 0), None, t1),
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

    fn spot_notice(remaining_s: u64) -> HostNotice {
        HostNotice {
            cloud: "gce".into(),
            kind: "preemption".into(),
            remaining: Some(Duration::from_secs(remaining_s)),
            detail: "TRUE".into(),
        }
    }

    #[test]
    fn a_notice_in_the_heartbeats_shows_in_the_status_until_withdrawn() {
        let (mut r, t0, c) = (registry(), Instant::now(), config(2, 2, "", 0));
        join_as(&mut r, &c, "a", 1000, t0).unwrap();
        join_as(&mut r, &c, "b", 1001, t0).unwrap();
        let before = r.status("job", t0).unwrap().digest;
        let notice = spot_notice(30);
        r.heartbeat("job", "b", 1, (0, 0), Some((&notice, t0)), t0)
            .unwrap();
        let status = r.status("job", t0 + Duration::from_secs(1)).unwrap();
        let shown = status.nodes[1].notice.as_ref().expect("b's notice shows");
        assert_eq!(shown.remaining, Some(Duration::from_secs(29)));
        assert_eq!(
            shown.to_string(),
            "gce preemption notice (TRUE), deadline in 29 s"
        );
        assert_ne!(status.digest, before, "a long poll of the status wakes");
        // The same beat checked again seconds later (a long poll does, as the job changes):
        // its deadline counts from when it came, so nothing changed.
        let changes = r.jobs["job"].notices;
        let later = t0 + Duration::from_secs(8);
        r.heartbeat("job", "b", 1, (0, 0), Some((&notice, t0)), later)
            .unwrap();
        assert_eq!(r.jobs["job"].notices, changes);
        // Restated a second later, from a clock a little off: the same notice, no change.
        let t1 = t0 + Duration::from_secs(1);
        let restated = spot_notice(30);
        r.heartbeat("job", "b", 1, (0, 0), Some((&restated, t1)), t1)
            .unwrap();
        assert_eq!(r.status("job", t1).unwrap().digest, status.digest);
        r.heartbeat("job", "b", 1, (0, 0), None, t1).unwrap();
        assert!(r.status("job", t1).unwrap().nodes[1].notice.is_none());
        assert_eq!(r.status("job", t1).unwrap().digest, before);
        // Still one round: a notice alone ends nothing.
        assert_eq!(
            r.heartbeat("job", "a", 1, (0, 0), None, t1),
            Ok(RoundStatus::Running)
        );
    }

    #[test]
    fn leaving_ahead_of_a_notice_is_planned_and_keeps_the_host_out_until_its_deadline() {
        let (mut r, t0, c) = (registry(), Instant::now(), config(1, 3, "", 0));
        join_on(&mut r, &c, "a", "10.0.0.1", 1000, t0).unwrap();
        join_on(&mut r, &c, "b", "10.0.0.2", 1000, t0).unwrap();
        join_on(&mut r, &c, "c", "10.0.0.3", 1000, t0).unwrap();
        r.leave("job", "c", Some(&spot_notice(30)), t0);
        let end = ended(&mut r, "a", 1, t0);
        assert_eq!(
            (end.reason, end.restart_count),
            (EndReason::NodeDeparted, 0)
        );
        assert_eq!(
            end.detail,
            "node c on 10.0.0.3 left ahead of its gce preemption notice (TRUE), deadline in 30 s"
        );
        let aside = &r.status("job", t0).unwrap().hosts_aside;
        assert_eq!(aside.len(), 1);
        assert_eq!((aside[0].host.as_str(), aside[0].times), ("10.0.0.3", 0));
        assert!(
            aside[0]
                .reason
                .contains("its node left ahead of a gce preemption notice"),
            "{}",
            aside[0].reason
        );
        // The survivors form the next round at once; the host comes back while its notice
        // stands (a new agent there) and waits.
        join_on(&mut r, &c, "a", "10.0.0.1", 1000, t0).unwrap();
        join_on(&mut r, &c, "b", "10.0.0.2", 1000, t0).unwrap();
        let t1 = t0 + Duration::from_secs(1);
        join_on(&mut r, &c, "d", "10.0.0.3", 1000, t1).unwrap();
        r.tick(t1 + LAST_CALL);
        assert_eq!(round_of(&mut r, "a", 1, t1).unwrap().2, ["a", "b"]);
        assert!(
            round_of(&mut r, "d", 0, t1 + LAST_CALL).is_none(),
            "out until the deadline"
        );
        // Past the deadline it is a host like any other: it joins the running round's next.
        let t2 = t0 + Duration::from_secs(31);
        r.tick(t2);
        assert!(r.status("job", t2).unwrap().hosts_aside.is_empty());
    }

    #[test]
    fn a_departure_keeps_its_host_out_for_an_hour_at_most_and_a_rebalance_not_at_all() {
        let (mut r, t0, c) = (registry(), Instant::now(), config(1, 3, "", 0));
        join_on(&mut r, &c, "a", "10.0.0.1", 1000, t0).unwrap();
        join_on(&mut r, &c, "b", "10.0.0.2", 1000, t0).unwrap();
        let t1 = t0 + LAST_CALL;
        r.tick(t1);
        assert_eq!(round_of(&mut r, "a", 0, t1).unwrap().2, ["a", "b"]);
        // A year ahead (a forged or garbled notice): an hour.
        r.leave("job", "b", Some(&spot_notice(365 * 24 * 3600)), t1);
        let aside = r.status("job", t1).unwrap().hosts_aside;
        assert_eq!(aside[0].remaining, crate::host_notice::MAX_DEPARTURE_ASIDE);
        // A rebalance recommendation has no deadline: leaving with it is a plain leave.
        join_on(&mut r, &c, "a", "10.0.0.1", 1000, t1).unwrap();
        assert_eq!(round_of(&mut r, "a", 1, t1).unwrap().2, ["a"]);
        let rebalance = HostNotice {
            kind: "rebalance".into(),
            remaining: None,
            ..spot_notice(0)
        };
        r.leave("job", "a", Some(&rebalance), t1);
        let status = r.status("job", t1).unwrap();
        assert_eq!(status.last_end.unwrap().reason, EndReason::NodeLeft);
        assert_eq!(status.hosts_aside.len(), 1, "only b's host");
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
