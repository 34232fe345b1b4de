//! The figures of a run: each launcher's [`Side`] (by rendezvous and restart size), summed
//! from its measurements, and our launcher on one backend as the report shows it ([`Ours`]).

use crate::stats::{Summary, median};

use super::measure;

/// The figures of one launcher; `None` where not measured.
#[derive(Default)]
pub(super) struct Side {
    /// By rendezvous size, as [`RENDEZVOUS`](super::RENDEZVOUS).
    pub(super) rendezvous: Vec<Option<Sized>>,
    /// By restart size, as [`RESTARTS`](super::RESTARTS).
    pub(super) restart: Vec<Option<Restarted>>,
}

/// One restart size's figures over its restarts.
#[derive(Clone, Copy)]
pub(super) struct Restarted {
    pub(super) times: Summary,
    /// Medians (ours): every agent having seen the round end, and every agent holding the
    /// next round, after the kill.
    pub(super) phases: Option<(f64, f64)>,
}

/// One rendezvous size's figures over its runs.
pub(super) struct Sized {
    pub(super) times: Summary,
    /// The most resident memory (VmRSS) of an agent that only joins (on etcd: of any), in MB.
    pub(super) joiner_mb: f64,
    /// The most resident memory of the agent that also serves the rendezvous (torchrun's:
    /// hosts the c10d store), in MB; `None` on etcd, where none does.
    pub(super) serving_mb: Option<f64>,
    /// The most private memory (RssAnon) of any agent, in MB.
    pub(super) private_mb: f64,
    /// Medians: the last agent's join answered and every agent holding the round (ours).
    pub(super) phases: Option<(f64, f64)>,
    /// Medians: CPU time of the agents, of the tasks and of what serves the rendezvous beside
    /// the agents (etcd's members) during the rendezvous.
    pub(super) cpu_ms: (f64, f64, f64),
}

impl Sized {
    /// The figures of `runs`; `first_serves`: whether the first agent also serves the
    /// rendezvous (its memory apart).
    pub(super) fn of(runs: &[measure::Rendezvous], first_serves: bool) -> Option<Self> {
        let times = Summary::of(&runs.iter().map(|r| r.ms).collect::<Vec<_>>())?;
        let most = |values: &mut dyn Iterator<Item = f64>| values.fold(0.0, f64::max);
        let joiners = usize::from(first_serves);
        let phases: Vec<(f64, f64)> = runs.iter().filter_map(|r| r.phases).collect();
        Some(Self {
            times,
            joiner_mb: most(
                &mut runs
                    .iter()
                    .flat_map(|r| r.memory[joiners..].iter().map(|m| m.resident_mb)),
            ),
            serving_mb: first_serves
                .then(|| most(&mut runs.iter().map(|r| r.memory[0].resident_mb))),
            private_mb: most(
                &mut runs
                    .iter()
                    .flat_map(|r| r.memory.iter().map(|m| m.private_mb)),
            ),
            phases: medians(&phases),
            cpu_ms: (
                median(runs.iter().map(|r| r.agent_cpu_ms).collect()),
                median(runs.iter().map(|r| r.task_cpu_ms).collect()),
                median(runs.iter().map(|r| r.server_cpu_ms).collect()),
            ),
        })
    }
}

/// The medians of each half of `pairs`; `None` when there are none.
pub(super) fn medians(pairs: &[(f64, f64)]) -> Option<(f64, f64)> {
    (!pairs.is_empty()).then(|| {
        (
            median(pairs.iter().map(|p| p.0).collect()),
            median(pairs.iter().map(|p| p.1).collect()),
        )
    })
}

/// Our launcher on one backend, as the report shows it.
pub(super) struct Ours {
    pub(super) side: Side,
    /// What the rows say after the work: "" (the built-in rendezvous), " on etcd".
    pub(super) on: &'static str,
    /// The line of where the time goes: "ours", "ours on etcd".
    pub(super) label: &'static str,
    /// The targets: the rendezvous of 64 agents, a restart (ms).
    pub(super) rendezvous_64_ms: f64,
    pub(super) restart_ms: f64,
    /// Whether its first agent also serves the rendezvous.
    pub(super) first_serves: bool,
}
