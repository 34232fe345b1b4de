//! The faults a run injects, how each is made, and how the job is made whole again after it
//! was measured (so that the next fault finds three hosts training).

use std::time::Duration;

use nix::sys::signal::Signal;

use super::job::{HOSTS, Job};
use super::marks::{Mark, What};
use crate::signal::signal;
use crate::wall_clock::now_ns;

/// The host the host faults take: never host 0, whose agent serves the rendezvous.
const LOST: usize = HOSTS - 1;

/// A kind of fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Fault {
    /// A task that is not the chief SIGKILLed.
    TaskKilled,
    /// A task that is not the chief SIGSTOPped: alive, but no progress.
    TaskStopped,
    /// The last host's link set down: its packets vanish, the others go on without it.
    LinkDown,
    /// The last host's agent and tasks SIGKILLed at once (the host loses its power).
    HostKilled,
}

/// A fault made: when, and what to undo.
pub(super) struct Injected {
    pub(super) fault: Fault,
    /// When, in nanoseconds since the Unix epoch (just before the signal or the link change).
    pub(super) ns: u128,
    /// The task signalled, for a task fault.
    victim: Option<u32>,
}

impl Fault {
    pub(super) const ALL: [Fault; 4] = [
        Fault::TaskKilled,
        Fault::TaskStopped,
        Fault::LinkDown,
        Fault::HostKilled,
    ];

    pub(super) fn label(self) -> &'static str {
        match self {
            Fault::TaskKilled => "a task SIGKILLed",
            Fault::TaskStopped => "a task SIGSTOPped (hung)",
            Fault::LinkDown => "a host's link set down",
            Fault::HostKilled => "a host's agent and tasks SIGKILLed",
        }
    }

    /// Issue 35's target for the fault to the first step after the restart, in ms.
    pub(super) fn target_ms(self) -> f64 {
        match self {
            Fault::TaskKilled => 1500.0,
            Fault::TaskStopped => 7000.0,
            Fault::LinkDown | Fault::HostKilled => 5000.0,
        }
    }

    /// How long a recovery is waited for before it counts as none: a hung task without a
    /// watchdog is never noticed, so its wait is capped shorter.
    pub(super) fn cap(self) -> Duration {
        match self {
            Fault::TaskStopped => Duration::from_secs(60),
            _ => Duration::from_secs(120),
        }
    }

    /// Whether it loses a host (the others go on with 2).
    fn loses_host(self) -> bool {
        matches!(self, Fault::LinkDown | Fault::HostKilled)
    }

    /// Makes the fault in `job`, training in round `round`.
    pub(super) fn inject(self, job: &mut Job, round: u32) -> Result<Injected, String> {
        let victim = match self {
            Fault::TaskKilled | Fault::TaskStopped => Some(
                victim(&job.marks(), round)
                    .ok_or_else(|| format!("no running task but the chief in round {round}"))?,
            ),
            Fault::LinkDown | Fault::HostKilled => None,
        };
        let ns = now_ns();
        match (self, victim) {
            (Fault::TaskKilled, Some(pid)) => signal(pid, Signal::SIGKILL),
            (Fault::TaskStopped, Some(pid)) => signal(pid, Signal::SIGSTOP),
            (Fault::LinkDown, _) => job.hosts().link(LOST, false),
            (Fault::HostKilled, _) => job.kill_host(LOST),
            _ => unreachable!("a task fault has its victim"),
        }
        Ok(Injected {
            fault: self,
            ns,
            victim,
        })
    }
}

impl Injected {
    /// The hosts whose agents live through the fault.
    pub(super) fn survivors(&self) -> Vec<usize> {
        (0..HOSTS)
            .filter(|&h| !(self.fault.loses_host() && h == LOST))
            .collect()
    }

    /// Undoes what the fault left once it was measured: a stopped task killed (and
    /// continued, so that it dies at once), a lost host's agent started again (after what
    /// was left in the host is killed and its link is up), to rejoin.
    pub(super) fn repair(&self, job: &mut Job) -> Result<(), String> {
        match self.fault {
            Fault::TaskKilled => Ok(()),
            Fault::TaskStopped => {
                if let Some(pid) = self.victim.filter(|&pid| net_hosts::running(pid)) {
                    signal(pid, Signal::SIGKILL);
                    signal(pid, Signal::SIGCONT);
                }
                Ok(())
            }
            Fault::LinkDown => {
                job.kill_host(LOST);
                job.hosts().link(LOST, true);
                job.start(LOST)
            }
            Fault::HostKilled => job.start(LOST),
        }
    }
}

/// A running task of round `round` that is not the chief, by its start mark's pid, on the
/// first host that has one.
pub(super) fn victim(marks: &[Mark], round: u32) -> Option<u32> {
    marks
        .iter()
        .filter(|m| m.round == round && m.what == What::Start && !m.is_chief())
        .map(|m| u32::try_from(m.value).unwrap_or(0))
        .find(|&pid| pid != 0 && net_hosts::running(pid))
}
