//! Whether a join is taken: its fields on their own (ids, host, name, one distinct port per
//! task, an address TensorFlow can use, a smallest round whose `TF_CONFIG` could fit), then
//! against its job (the same config, a job not finished, room under its node cap, no address
//! a waiting or running node holds, hosts compared by
//! [`canonical_host`](super::host_identity::canonical_host)). Each refusal names the value.

use std::time::{Duration, Instant};

use cluster_spec::__private::quote::quote;
use cluster_spec::ClusterSpec;

use super::calls::{JoinArgs, Refusal};
use super::host_identity::{ambiguous_ipv4, canonical_host};
use super::job::{Job, Phase};
use super::node::NodeState;
use super::round_size::never_fits;
use crate::WireError;
use crate::assignment::task_address;
use crate::error::duration;

/// The longest rendezvous id, node id, host or name accepted.
pub(crate) const MAX_ID_LEN: usize = 128;
const MAX_HOST_LEN: usize = 253;

/// Checks a join's fields, before its job is looked up.
pub(super) fn check_args(args: &JoinArgs) -> Result<(), Refusal> {
    // First, as a gRPC request's ports are checked when it is decoded: a join made in this
    // process (the etcd backend) is refused alike.
    if args.ports.contains(&0) {
        return Err(Refusal::InvalidArgument(
            WireError::Port { port: 0 }.to_string(),
        ));
    }
    check_text("rendezvous id", &args.rdzv_id, MAX_ID_LEN)?;
    if let Some(id) = &args.node_id {
        check_node_id(id)?;
    }
    check_text("host", &args.host, MAX_HOST_LEN)?;
    if !args.name.is_empty() {
        // Names go into every message about the node: no spaces or control characters.
        check_text("node name", &args.name, MAX_HOST_LEN)?;
    }
    let tpn = args.config.tasks_per_node() as usize;
    if args.ports.len() != tpn {
        return Err(Refusal::InvalidArgument(format!(
            "the node gives {} ports for {tpn} tasks per node",
            args.ports.len()
        )));
    }
    // Two of its own tasks on one port would make a cluster TensorFlow cannot start.
    for (i, port) in args.ports.iter().enumerate() {
        if args.ports[..i].contains(port) {
            return Err(Refusal::InvalidArgument(format!(
                "the node gives port {port} twice, for local tasks {} and {i}",
                args.ports[..i]
                    .iter()
                    .position(|p| p == port)
                    .unwrap_or_default()
            )));
        }
    }
    if let Some(why) = ambiguous_ipv4(&args.host) {
        return Err(Refusal::InvalidArgument(why));
    }
    let min = args.config.nodes().min();
    if let Some(why) = never_fits(min, tpn as u32, &args.host, &args.ports) {
        return Err(Refusal::InvalidArgument(why));
    }
    // The address check is cluster-spec's, so a node the rendezvous takes always fits a
    // round's cluster.
    let addresses: Vec<String> = args
        .ports
        .iter()
        .map(|&p| task_address(&args.host, p))
        .collect();
    ClusterSpec::builder()
        .job("worker", &addresses)
        .build()
        .map_err(|e| Refusal::InvalidArgument(e.to_string()))?;
    Ok(())
}

impl Job {
    /// Checks a join against this job: node `node_id` (new or not) may join it now.
    pub(super) fn admit(
        &self,
        node_id: &str,
        args: &JoinArgs,
        now: Instant,
        timeout: Duration,
    ) -> Result<(), Refusal> {
        if self.config != args.config {
            return Err(Refusal::FailedPrecondition(format!(
                "rendezvous {:?} runs a job with another config: {}",
                self.id,
                self.config.differences(&args.config).join(", ")
            )));
        }
        if let Phase::Done(done) = &self.phase {
            return Err(Refusal::FailedPrecondition(format!(
                "rendezvous {:?} is finished ({done}); a new job needs a new rendezvous id",
                self.id
            )));
        }
        // A job holds at most twice its max nodes (members, waiting and idle together): one
        // caller cannot grow it without bound.
        let cap = 2 * self.config.nodes().max() as usize;
        if !self.nodes.contains_key(node_id) && self.nodes.len() >= cap {
            return Err(Refusal::ResourceExhausted(format!(
                "job {} holds {} nodes, its cap (twice its max of {}); node {} can join once \
                 one leaves or is silent for {}",
                quote(&self.id, 0),
                self.nodes.len(),
                self.config.nodes().max(),
                quote(node_id, 0),
                duration(timeout)
            )));
        }
        // Two tasks on one address would make a cluster TensorFlow cannot start. Only nodes
        // that wait or run hold their addresses: an idle node's round ended, its tasks are
        // stopping, and it joins again with fresh ports, so a port its dead task let go of
        // may go to another agent of its host.
        let host = canonical_host(&args.host);
        for (other_id, other) in &self.nodes {
            if *other_id != node_id
                && other.state != NodeState::Idle
                && canonical_host(&other.host) == host
                && let Some(port) = args.ports.iter().find(|p| other.ports.contains(p))
            {
                return Err(Refusal::AlreadyExists(format!(
                    "address {} is held by {} (heard from {} ago); it is free when that node \
                     leaves or is silent for {}",
                    task_address(&args.host, *port),
                    other.describe(other_id),
                    duration(now.saturating_duration_since(other.last_seen)),
                    duration(timeout)
                )));
            }
        }
        Ok(())
    }
}

/// A rendezvous id, host: 1 to `max` bytes, no whitespace or control characters.
fn check_text(what: &str, value: &str, max: usize) -> Result<(), Refusal> {
    let bad = value
        .char_indices()
        .find(|(_, c)| c.is_whitespace() || c.is_control());
    if value.is_empty() || value.len() > max || bad.is_some() {
        let why = match bad {
            Some((at, c)) => format!("{c:?} at byte {at}"),
            None if value.is_empty() => "it is empty".to_owned(),
            None => format!("it is longer than {max} bytes"),
        };
        return Err(Refusal::InvalidArgument(format!(
            "invalid {what} {}: {why}",
            quote(value, bad.map_or(0, |(at, _)| at))
        )));
    }
    Ok(())
}

/// A node id: 1 to 128 bytes of ASCII letters, digits, `.`, `_` and `-`.
fn check_node_id(id: &str) -> Result<(), Refusal> {
    let bad = id
        .char_indices()
        .find(|&(_, c)| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')));
    if id.is_empty() || id.len() > MAX_ID_LEN || bad.is_some() {
        let why = match bad {
            Some((at, c)) => format!("{c:?} at byte {at}; ids use letters, digits, '.', '_', '-'"),
            None if id.is_empty() => "it is empty".to_owned(),
            None => format!("it is longer than {MAX_ID_LEN} bytes"),
        };
        return Err(Refusal::InvalidArgument(format!(
            "invalid node id {}: {why}",
            quote(id, bad.map_or(0, |(at, _)| at))
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::super::tests::{config, ended, join_as, registry, report, round_of};
    use super::super::{JoinArgs, Refusal};
    use crate::outcome::TaskStatus;
    use crate::rendezvous::{Credentials, Proof};

    #[test]
    fn refusals_name_the_values() {
        let (mut r, t0, c) = (registry(), Instant::now(), config(2, 4, "", 0));
        join_as(&mut r, &c, "a", 1000, t0).unwrap();
        let other = config(2, 3, "chief=1", 0);
        let err = join_as(&mut r, &other, "b", 1001, t0).unwrap_err();
        assert!(matches!(err, Refusal::FailedPrecondition(_)));
        assert_eq!(
            err.to_string(),
            "rendezvous \"job\" runs a job with another config: nodes 2:4 (this node: 2:3), layout \
             \"\" (this node: \"chief=1\")"
        );
        let err = join_as(&mut r, &c, "b", 1000, t0).unwrap_err();
        assert!(matches!(err, Refusal::AlreadyExists(_)));
        assert_eq!(
            err.to_string(),
            "address 127.0.0.1:1000 is held by node a on 127.0.0.1 (heard from 0 ms ago); it is free \
             when that node leaves or is silent for 15.0 s"
        );
        let err = join_as(&mut r, &c, "b c", 1001, t0).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid node id \"b c\": ' ' at byte 1; ids use letters, digits, '.', '_', '-'"
        );
        let mut args = JoinArgs {
            rdzv_id: "job".into(),
            config: c.clone(),
            node_id: None,
            host: "host name".into(),
            ports: vec![1],
            name: String::new(),
            peer: None,
            credentials: Credentials::default(),
        };
        assert_eq!(
            r.join(args.clone(), &Proof::default(), t0)
                .unwrap_err()
                .to_string(),
            "invalid host \"host name\": ' ' at byte 4"
        );
        args.host = "h".into();
        args.ports = vec![1, 2];
        assert_eq!(
            r.join(args, &Proof::default(), t0).unwrap_err().to_string(),
            "the node gives 2 ports for 1 tasks per node"
        );
    }

    fn args(host: &str, ports: Vec<u16>, tasks_per_node: u32) -> JoinArgs {
        JoinArgs {
            rdzv_id: "job".into(),
            config: crate::JobConfig::new(crate::NodeRange::new(2, 2).unwrap(), tasks_per_node)
                .unwrap(),
            node_id: None,
            host: host.into(),
            ports,
            name: String::new(),
            peer: None,
            credentials: Credentials::default(),
        }
    }

    #[test]
    fn duplicate_ports_and_numeric_hosts_that_are_no_address_are_refused() {
        let (mut r, t0) = (registry(), Instant::now());
        let err = r
            .join(args("h", vec![1000, 1001, 1000], 3), &Proof::default(), t0)
            .unwrap_err();
        assert!(matches!(err, Refusal::InvalidArgument(_)), "{err:?}");
        assert_eq!(
            err.to_string(),
            "the node gives port 1000 twice, for local tasks 0 and 2"
        );
        let err = r
            .join(args("127.000.0.9", vec![1000], 1), &Proof::default(), t0)
            .unwrap_err();
        assert!(
            matches!(&err, Refusal::InvalidArgument(m) if m.starts_with("host \"127.000.0.9\" is no IPv4 address")),
            "{err:?}"
        );
    }

    #[test]
    fn aliases_of_a_host_do_not_hold_its_ports_twice() {
        let (mut r, t0) = (registry(), Instant::now());
        r.join(args("127.0.0.1", vec![1000], 1), &Proof::default(), t0)
            .unwrap();
        for alias in ["localhost", "LOCALHOST.", "::1", "ip6-localhost"] {
            let err = r
                .join(args(alias, vec![1000], 1), &Proof::default(), t0)
                .unwrap_err();
            assert!(matches!(err, Refusal::AlreadyExists(_)), "{alias}: {err:?}");
        }
        r.join(args("127.0.0.9", vec![1000], 1), &Proof::default(), t0)
            .unwrap();
    }

    #[test]
    fn a_job_holds_at_most_twice_its_max_nodes() {
        let (mut r, t0) = (registry(), Instant::now());
        // Max 2: the first two form a round, two more wait for a later one, a fifth is refused.
        for port in 1000..1004 {
            r.join(args("h", vec![port], 1), &Proof::default(), t0)
                .unwrap();
        }
        let mut fifth = args("h", vec![1004], 1);
        fifth.node_id = Some("e".into());
        let err = r.join(fifth, &Proof::default(), t0).unwrap_err();
        assert!(matches!(err, Refusal::ResourceExhausted(_)), "{err:?}");
        assert_eq!(
            err.to_string(),
            "job \"job\" holds 4 nodes, its cap (twice its max of 2); node \"e\" can join once \
             one leaves or is silent for 15.0 s"
        );
    }

    #[test]
    fn a_port_let_go_by_a_failed_round_may_go_to_another_node_of_the_host() {
        let (mut r, t0, c) = (registry(), Instant::now(), config(2, 2, "", 3));
        join_as(&mut r, &c, "a", 1000, t0).unwrap();
        join_as(&mut r, &c, "b", 1001, t0).unwrap();
        assert_eq!(round_of(&mut r, "a", 0, t0).unwrap().0, 1);
        // a's task dies and lets go of port 1000; b rejoins first and is given it.
        report(&mut r, "a", 1, 0, TaskStatus::Signaled(9), "", t0).unwrap();
        ended(&mut r, "b", 1, t0);
        join_as(&mut r, &c, "b", 1000, t0).unwrap();
        // Now b holds it: a, joining again, must not take it back.
        let err = join_as(&mut r, &c, "a", 1000, t0).unwrap_err();
        assert!(matches!(err, Refusal::AlreadyExists(_)), "{err}");
        join_as(&mut r, &c, "a", 1002, t0).unwrap();
        let (number, restarts, members, _) = round_of(&mut r, "a", 1, t0).unwrap();
        assert_eq!(
            (number, restarts, members),
            (2, 1, vec!["a".into(), "b".into()])
        );
    }
}
