//! Hosts whose tasks keep failing: each failure counted against its host (the address its
//! tasks are reached at), and a host that failed the job's
//! [`BadHostPolicy`](crate::BadHostPolicy) `failures` times within its window, while no
//! other host's tasks failed in it, set aside: the next rounds form without it until its
//! cooldown (doubled each time) ends. If the job's `min` nodes cannot be had without it, the
//! round waits for the cooldown.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::job::Job;
use crate::error::duration;
use crate::job_status::HostAside;

/// What the job remembers of a host whose tasks failed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct HostRecord {
    /// When its tasks failed, within the window (oldest first).
    pub(super) failures: Vec<Instant>,
    /// Set aside until then.
    pub(super) aside_until: Option<Instant>,
    /// How many times it was set aside.
    pub(super) times_aside: u32,
    /// Why it was last set aside.
    pub(super) reason: String,
}

/// The most hosts whose failures a job remembers: beyond, the ones that failed least
/// recently are forgotten (a job has at most `MAX_NODES` hosts at once).
const MAX_HOSTS: usize = crate::MAX_NODES as usize;

impl Job {
    /// A task of `host` failed at `now` (`failure`, for the reason); returns the reason when
    /// the host is set aside by it.
    pub(super) fn host_failed(
        &mut self,
        host: &str,
        failure: &str,
        now: Instant,
    ) -> Option<String> {
        let policy = self.config.bad_hosts();
        let since = now.checked_sub(policy.window);
        for record in self.hosts.values_mut() {
            record
                .failures
                .retain(|&t| since.is_none_or(|since| t > since));
        }
        if !self.hosts.contains_key(host) && self.hosts.len() >= MAX_HOSTS {
            self.forget_a_host();
        }
        let record = self.hosts.entry(host.to_owned()).or_default();
        record.failures.push(now);
        let count = record.failures.len() as u32;
        if count < policy.failures {
            return None;
        }
        // Failures on other hosts too are the job's (or the network's), not this host's.
        let others_failed = self
            .hosts
            .iter()
            .any(|(h, r)| h != host && !r.failures.is_empty());
        if others_failed {
            return None;
        }
        let record = self.hosts.get_mut(host).expect("recorded above");
        let cooldown = policy.cooldown_for(record.times_aside);
        record.times_aside += 1;
        record.failures.clear();
        record.aside_until = Some(now + cooldown);
        record.reason = format!(
            "its tasks failed {count} times within {} while no other host's did (the last: \
             {failure}); set aside for {} (time {})",
            duration(policy.window),
            duration(cooldown),
            record.times_aside
        );
        tracing::warn!(rdzv_id = %self.id, host, reason = %record.reason, "a host is set aside");
        Some(record.reason.clone())
    }

    /// `host`'s node left ahead of its cloud's notice: the host is out of the job's rounds
    /// until `until` (its deadline), counted as no failure and no time set aside.
    pub(super) fn host_departs(&mut self, host: &str, until: Instant, reason: String) {
        if !self.hosts.contains_key(host) && self.hosts.len() >= MAX_HOSTS {
            self.forget_a_host();
        }
        let record = self.hosts.entry(host.to_owned()).or_default();
        if record.aside_until.is_none_or(|aside| aside < until) {
            record.aside_until = Some(until);
            record.reason = reason;
        }
        tracing::info!(rdzv_id = %self.id, host, reason = %record.reason, "a host leaves ahead of its cloud's notice: out of the job's rounds until its deadline");
    }

    /// Forgets the host whose latest failure is the oldest, and that is not set aside.
    fn forget_a_host(&mut self) {
        let oldest = self
            .hosts
            .iter()
            .filter(|(_, r)| r.aside_until.is_none())
            .min_by_key(|(_, r)| r.failures.last().copied())
            .map(|(h, _)| h.clone());
        if let Some(host) = oldest {
            self.hosts.remove(&host);
        }
    }

    /// Whether `host` is set aside at `now`.
    pub(super) fn is_aside(&self, host: &str, now: Instant) -> bool {
        self.hosts
            .get(host)
            .and_then(|r| r.aside_until)
            .is_some_and(|until| now < until)
    }

    /// The hosts set aside at `now`, for an operator.
    pub(super) fn hosts_aside(&self, now: Instant) -> Vec<HostAside> {
        self.hosts
            .iter()
            .filter_map(|(host, r)| {
                let until = r.aside_until.filter(|&until| now < until)?;
                Some(HostAside {
                    host: host.clone(),
                    // Whole milliseconds, as the wire carries them.
                    remaining: Duration::from_millis(
                        until.saturating_duration_since(now).as_millis() as u64,
                    ),
                    times: r.times_aside,
                    reason: r.reason.clone(),
                })
            })
            .collect()
    }

    /// When the first set-aside host comes back: a round waiting for it closes then (the
    /// etcd backend wakes its waiters; the memory store ticks instead).
    #[cfg(feature = "etcd")]
    pub(super) fn next_return(&self, now: Instant) -> Option<Instant> {
        self.hosts
            .values()
            .filter_map(|r| r.aside_until)
            .filter(|&until| now < until)
            .min()
    }
}

/// A job's hosts by address, in order (the etcd record keeps them so).
pub(super) type Hosts = BTreeMap<String, HostRecord>;

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::super::tests::{config, join_on, registry, report};
    use crate::outcome::TaskStatus;
    use crate::{BadHostPolicy, JobPhase};

    const POLICY: BadHostPolicy = BadHostPolicy {
        failures: 2,
        window: Duration::from_secs(60),
        cooldown: Duration::from_secs(10),
    };

    #[test]
    fn a_host_failing_alone_is_set_aside_and_the_next_round_forms_without_it() {
        let (mut r, t0) = (registry(), Instant::now());
        let c = config(2, 3, "", 9).with_bad_hosts(POLICY);
        let all = |r: &mut _, t| {
            for (id, host) in [("a", "10.0.0.1"), ("b", "10.0.0.2"), ("c", "10.0.0.3")] {
                join_on(r, &c, id, host, 1000, t).unwrap();
            }
        };
        all(&mut r, t0);
        // c's task is SIGKILLed in rounds 1 and 2 (no crash-loop signature): c is set aside.
        for round in 1..=2 {
            let t = t0 + Duration::from_secs(round);
            let killed = report(&mut r, "c", round, 0, TaskStatus::Signaled(9), "", t);
            killed.unwrap();
            all(&mut r, t);
        }
        let t = t0 + Duration::from_secs(3);
        let status = r.status("job", t).unwrap();
        let JobPhase::Running(round) = &status.phase else {
            panic!("no round: {:?}", status.phase);
        };
        assert_eq!(round.number(), 3);
        let hosts: Vec<&str> = round.members().iter().map(|m| m.host.as_str()).collect();
        assert_eq!(hosts, ["10.0.0.1", "10.0.0.2"]);
        let aside = &status.hosts_aside[0];
        assert_eq!((aside.host.as_str(), aside.times), ("10.0.0.3", 1));
        assert_eq!(aside.remaining, Duration::from_secs(9));
        assert!(
            aside.reason.starts_with(
                "its tasks failed 2 times within 60.0 s while no other host's did (the last: \
                 task worker:2 (local task 0 of node c on 10.0.0.3) was killed by signal 9 in \
                 round 2); set aside for 10.0 s (time 1)"
            ),
            "{}",
            aside.reason
        );
        // Its next time is twice as long; once back, it may be in a round again.
        let record = &r.jobs["job"].hosts["10.0.0.3"];
        assert_eq!(record.times_aside, 1);
        let back = t0 + Duration::from_secs(13);
        assert!(!r.jobs["job"].is_aside("10.0.0.3", back));
    }

    #[test]
    fn hosts_failing_alike_are_not_set_aside_and_the_only_host_waits_its_cooldown() {
        let (mut r, t0) = (registry(), Instant::now());
        let c = config(1, 2, "", 9).with_bad_hosts(POLICY);
        join_on(&mut r, &c, "a", "10.0.0.1", 1000, t0).unwrap();
        join_on(&mut r, &c, "b", "10.0.0.2", 1000, t0).unwrap();
        for (round, id) in [(1, "a"), (2, "b"), (3, "a"), (4, "b")] {
            let t = t0 + Duration::from_secs(round);
            report(&mut r, id, round, 0, TaskStatus::Signaled(9), "", t).unwrap();
            join_on(&mut r, &c, "a", "10.0.0.1", 1000, t).unwrap();
            join_on(&mut r, &c, "b", "10.0.0.2", 1000, t).unwrap();
        }
        let t = t0 + Duration::from_secs(5);
        assert!(r.status("job", t).unwrap().hosts_aside.is_empty());

        // One host, min 1: set aside, the round waits for its cooldown, then forms.
        let (mut r, t0) = (registry(), Instant::now());
        let c = config(1, 1, "", 9).with_bad_hosts(POLICY);
        join_on(&mut r, &c, "a", "10.0.0.1", 1000, t0).unwrap();
        for round in 1..=2 {
            let t = t0 + Duration::from_secs(round);
            report(&mut r, "a", round, 0, TaskStatus::Signaled(9), "", t).unwrap();
            join_on(&mut r, &c, "a", "10.0.0.1", 1000, t).unwrap();
        }
        let t = t0 + Duration::from_secs(3);
        let status = r.status("job", t).unwrap();
        let JobPhase::Forming { detail, .. } = &status.phase else {
            panic!("a round formed: {:?}", status.phase);
        };
        assert!(
            detail.contains("10.0.0.1 is set aside for 9.0 s more"),
            "{detail}"
        );
        r.tick(t0 + Duration::from_secs(12));
        assert!(matches!(
            r.status("job", t0 + Duration::from_secs(12)).unwrap().phase,
            JobPhase::Running(_)
        ));
    }
}
