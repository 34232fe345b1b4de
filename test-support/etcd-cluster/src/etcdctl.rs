//! etcdctl run against a cluster's members (with its TLS files, from inside a member's host),
//! and what its answers say: members' health, their statuses, who leads.

use std::process::Output;
use std::time::{Duration, Instant};

use crate::EtcdCluster;
use crate::cluster::POLL;
use crate::process::{command, run_bounded, shown_output};

/// How long one etcdctl may run (its own timeouts are seconds: more means it hangs).
const ETCDCTL_TIMEOUT: Duration = Duration::from_secs(30);

/// What a member says of itself in `etcdctl endpoint status` ([`EtcdCluster::status`]): etcd's
/// own member ids, not this crate's indexes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemberStatus {
    /// Its member id.
    pub id: u64,
    /// The id of the member it takes for the leader (its own when it leads); 0 while it knows
    /// of none.
    pub leader: u64,
    /// The raft term it is in: each election starts a later one.
    pub raft_term: u64,
}

impl EtcdCluster {
    /// Which member leads now, as the members that run (neither killed nor stopped) say in
    /// `etcdctl endpoint status`: the member whose status names itself as leader, when a
    /// majority of all the members name it. `None` while there is none (an election is under
    /// way, or too few members run).
    pub fn leader(&self) -> Option<usize> {
        self.leader_and_statuses().0
    }

    /// Waits up to `timeout` for a member to lead ([`leader`](Self::leader)) and returns it.
    ///
    /// # Panics
    ///
    /// When none leads by then; the message holds the members' statuses and log tails.
    pub fn wait_leader(&self, timeout: Duration) -> usize {
        let deadline = Instant::now() + timeout;
        loop {
            let (leader, statuses) = self.leader_and_statuses();
            if let Some(leader) = leader {
                return leader;
            }
            if Instant::now() >= deadline {
                panic!(
                    "no etcd member leads after {timeout:?}; the running members' statuses:\n{}\n{}",
                    statuses,
                    self.tails()
                );
            }
            std::thread::sleep(POLL);
        }
    }

    /// What member `i` says of itself, asked of it alone (whether this crate has killed or
    /// stopped it or not): `None` when it does not answer within a second.
    ///
    /// # Panics
    ///
    /// When there is no member `i`, or etcdctl cannot be run.
    pub fn status(&self, i: usize) -> Option<MemberStatus> {
        let endpoint = self.member(i).client_url.as_str();
        let output = self.etcdctl_via(i, &[endpoint], &status_args());
        statuses(&output).first().map(|&(_, status)| status)
    }

    /// The leader elected after `old`, the status of member `killed` while it led, as etcd
    /// itself says it: `killed` no longer answers, every other member answers and follows the
    /// same leader, one of them, in a later term. Waits (up to `timeout`) for an election
    /// first. `Err` says what the members said instead.
    pub fn elected_after(
        &self,
        killed: usize,
        old: &MemberStatus,
        timeout: Duration,
    ) -> Result<MemberStatus, String> {
        if let Some(status) = self.status(killed) {
            return Err(format!("m{killed} answers after it was killed: {status:?}"));
        }
        self.wait_leader(timeout);
        let left: Vec<Option<MemberStatus>> = (0..self.members.len())
            .filter(|&i| i != killed)
            .map(|i| self.status(i))
            .collect();
        let said = || format!("the leader {old:?} was killed; the members left say {left:?}");
        let left: Vec<MemberStatus> = left.iter().flatten().copied().collect();
        let elected = left.iter().find(|s| s.id == s.leader).copied();
        match elected {
            Some(new)
                if left.len() + 1 == self.members.len()
                    && new.id != old.id
                    && left
                        .iter()
                        .all(|s| s.leader == new.id && s.raft_term > old.raft_term) =>
            {
                Ok(new)
            }
            _ => Err(said()),
        }
    }

    /// Runs `etcdctl ARGS` (API v3) against the members that run (neither killed nor stopped;
    /// all of them when none does), with the cluster's TLS files when it has TLS, from inside the
    /// host of the first running member for [`start_in_hosts`](Self::start_in_hosts), and
    /// returns what it printed and how it exited, success or not.
    ///
    /// # Panics
    ///
    /// When etcdctl cannot be run, or runs for more than 30 s (it is killed; commands that
    /// never end, such as `watch`, do not belong here).
    pub fn etcdctl(&self, args: &[&str]) -> Output {
        let live = self.live();
        let via = live.first().copied().unwrap_or(0);
        let endpoints: Vec<&str> = if live.is_empty() {
            self.members.iter().map(|m| m.client_url.as_str()).collect()
        } else {
            live.iter()
                .map(|&i| self.members[i].client_url.as_str())
                .collect()
        };
        self.etcdctl_via(via, &endpoints, args)
    }

    /// etcdctl as run beside member `via`, against `endpoints`, with the TLS files if any.
    pub(crate) fn etcdctl_via(&self, via: usize, endpoints: &[&str], args: &[&str]) -> Output {
        let mut command = command(&self.members[via].etcdctl);
        command.arg(format!("--endpoints={}", endpoints.join(",")));
        if let Some(tls) = &self.tls {
            command
                .arg("--cacert")
                .arg(&tls.ca)
                .arg("--cert")
                .arg(&tls.client_cert)
                .arg("--key")
                .arg(&tls.client_key);
        }
        command.args(args);
        run_bounded(&mut command, &self.dir, ETCDCTL_TIMEOUT)
    }

    /// The leader by [`leader`](Self::leader)'s rule, and the statuses it came from, for
    /// messages.
    fn leader_and_statuses(&self) -> (Option<usize>, String) {
        let live = self.live();
        let Some(&via) = live.first() else {
            return (None, "    (no member runs)".to_owned());
        };
        let endpoints: Vec<&str> = live
            .iter()
            .map(|&i| self.members[i].client_url.as_str())
            .collect();
        let output = self.etcdctl_via(via, &endpoints, &status_args());
        let statuses: Vec<(usize, MemberStatus)> = statuses(&output)
            .into_iter()
            .filter_map(|(endpoint, status)| {
                let i = self.members.iter().position(|m| m.client_url == endpoint)?;
                Some((i, status))
            })
            .collect();
        let leader = statuses.iter().find_map(|&(i, status)| {
            let named = statuses
                .iter()
                .filter(|(_, s)| s.leader == status.id)
                .count();
            (status.id == status.leader && 2 * named > self.members.len()).then_some(i)
        });
        (leader, shown_output(&output))
    }
}

/// etcdctl's arguments that check members' health: every endpoint named must commit a read
/// through raft, or etcdctl exits 1. The read waits for a leader; the first election of a new
/// cluster can take a second (split votes), and a read that gives up early costs a retry, so it
/// may wait 3 s. The dial is short: only listening members are asked.
pub(crate) fn health_args() -> [&'static str; 4] {
    [
        "endpoint",
        "health",
        "--dial-timeout=500ms",
        "--command-timeout=3s",
    ]
}

/// etcdctl's arguments that ask members for their status, as JSON; a member that does not
/// answer within a second is left out.
fn status_args() -> [&'static str; 6] {
    [
        "endpoint",
        "status",
        "-w",
        "json",
        "--dial-timeout=1s",
        "--command-timeout=1s",
    ]
}

/// The statuses in the output of etcdctl run with [`status_args`], by endpoint: those of the
/// members that answered, even when others did not (etcdctl exits 1 then).
fn statuses(output: &Output) -> Vec<(String, MemberStatus)> {
    serde_json::from_slice::<serde_json::Value>(&output.stdout)
        .ok()
        .and_then(|value| value.as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(|entry| {
            let endpoint = entry["Endpoint"].as_str()?.to_owned();
            let status = &entry["Status"];
            // Member ids are u64s, often above i64's range; JSON holds them as decimal
            // numbers. `leader` is left out (0) while a member knows of none.
            let id = status["header"]["member_id"].as_u64()?;
            let leader = status["leader"].as_u64().unwrap_or(0);
            let raft_term = status["raftTerm"].as_u64()?;
            Some((
                endpoint,
                MemberStatus {
                    id,
                    leader,
                    raft_term,
                },
            ))
        })
        .collect()
}
