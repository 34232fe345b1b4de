//! `bench-goodput --preemption`: what spot VMs' preemptions cost MultiWorkerMirroredStrategy
//! training when the agents follow the cloud's notices (`--preemption-notices gce`) beside
//! today's behaviour (`off`: the same VM's end is a crash), one side after the other in one
//! run.
//!
//! The training (`preemption_goodput_train.py`) checkpoints only through TensorFlow's
//! PreemptionCheckpointHandler, which saves at one step on every worker once one is told to
//! stop. Three network-namespace hosts, a task each, each host with its own GCE metadata
//! stand-in (`metadata.rs`); `schedule.rs` says when a host gets a notice, when its VM dies
//! and when a fresh one comes back. The figures come from the tasks' marks: steps trained
//! again, the job's restart count, the time from a notice (a kill, without notices) to the
//! first step of a round without that host, and goodput over the run at the step time
//! measured before its first notice.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use super::goodput::Goodput;
use super::interrupt;
use super::job::{HOSTS, Job};
use super::marks::{Mark, What};
use super::measure::{START_TIMEOUT, STEADY_STEPS};
use super::metadata::Metadata;
use super::schedule::{self, Event};
use super::side::COMMON;
use crate::stats::median;
use crate::wall_clock::now_ns;

/// The training script of this part.
const SCRIPT: &str = "xtask/src/bench_goodput/preemption_goodput_train.py";
/// Goodput the agents that follow notices are to keep (issue 66).
const GOODPUT: f64 = 0.95;
/// What an agent prints when it left the job on a notice (`tfcluster run`).
const LEFT: &str = "left the job ahead of the cloud's notice";

/// Whether the agents follow the cloud's notices: the two sides of the comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Notices {
    Gce,
    Off,
}

impl Notices {
    /// The side with notices first: the one the target is for.
    pub(super) const BOTH: [Notices; 2] = [Notices::Gce, Notices::Off];

    /// Its `--preemption-notices` value.
    fn flag(self) -> &'static str {
        match self {
            Notices::Gce => "gce",
            Notices::Off => "off",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Notices::Gce => "notices followed (`--preemption-notices gce`)",
            Notices::Off => "today's behaviour (`off`: the VM's end is a crash)",
        }
    }
}

/// One side's figures.
#[derive(Clone, Debug)]
pub(super) struct Figures {
    notices: Notices,
    command: String,
    /// Hosts preempted (a notice, then the VM killed).
    preempted: usize,
    /// Agents that left the job on a notice, by their own message.
    left: usize,
    /// Checkpoints the handler saved (the chief's `saved` marks).
    saves: usize,
    steps_lost: u64,
    restarts: u64,
    /// From each notice (a kill, without notices) to the first step of a round without the
    /// host, in milliseconds; a preemption without one is not here.
    without_ms: Vec<f64>,
    goodput: Option<Goodput>,
}

/// Measures `notices` over `length` with a preemption each `every`, its files under `dir`.
pub(super) fn measure(
    notices: Notices,
    python: &Path,
    length: Duration,
    every: Duration,
    dir: &Path,
) -> Result<Figures, String> {
    let script = crate::workspace::root().join(SCRIPT).display().to_string();
    let mut flags = COMMON.to_vec();
    flags.extend(["--preemption-notices", notices.flag()]);
    let command = [python.display().to_string(), script];
    let slug = format!("preemption-{}", notices.flag());
    let mut job = Job::running(&slug, &flags, &command, dir.to_path_buf())?;
    let metadata = Metadata::start(&mut job)?;
    job.start_all()?;
    eprintln!("xtask: {slug}: waiting for steady training");
    job.wait_steady(HOSTS, STEADY_STEPS, START_TIMEOUT)?;
    let start_ns = now_ns();
    let started = Instant::now();
    let mut first_notice_ns = None;
    // Each preemption's host and the time its loss is measured from.
    let mut faults: Vec<(usize, u128)> = Vec::new();
    for (at, event) in schedule::events(length, every) {
        interrupt::sleep(at.saturating_sub(started.elapsed()))?;
        let ns = now_ns();
        match event {
            Event::Notice(h) => {
                metadata.preempted(h, true);
                first_notice_ns.get_or_insert(ns);
                if notices == Notices::Gce {
                    faults.push((h, ns));
                }
            }
            Event::Kill(h) => {
                job.kill_host(h);
                metadata.preempted(h, false);
                if notices == Notices::Off {
                    faults.push((h, ns));
                }
            }
            Event::Back(h) => job.start(h)?,
        }
        eprintln!("xtask: {slug}: {event:?} at {at:?}");
    }
    interrupt::sleep(length.saturating_sub(started.elapsed()))?;
    let end_ns = now_ns();
    let marks: Vec<Mark> = job.marks().into_iter().filter(|m| m.ns <= end_ns).collect();
    let left = (0..HOSTS).map(|h| job.log(h).matches(LEFT).count()).sum();
    let addresses: Vec<String> = (0..HOSTS)
        .map(|h| job.hosts().address(h).to_string())
        .collect();
    let command = job.command_line();
    drop(job);
    drop(metadata);
    // The step time before the first notice, all three hosts training.
    let undisturbed = first_notice_ns
        .and_then(|first| Goodput::of(&marks, start_ns, first))
        .map(|g| g.step_ms);
    let goodput = Goodput::of(&marks, start_ns, end_ns)
        .map(|g| undisturbed.map_or(g, |step_ms| g.at_step_ms(step_ms)));
    Ok(Figures {
        notices,
        command,
        preempted: faults.len(),
        left,
        saves: marks
            .iter()
            .filter(|m| m.what == What::Saved && m.is_chief())
            .count(),
        steps_lost: steps_trained_again(&marks),
        restarts: marks
            .iter()
            .filter(|m| m.what == What::Restarts)
            .map(|m| m.value)
            .max()
            .unwrap_or(0),
        without_ms: faults
            .iter()
            .filter_map(|&(h, ns)| without_ms(&marks, &addresses[h], ns))
            .collect(),
        goodput,
    })
}

/// Steps trained again: each step number the chiefs ended more than once, counted once a
/// time again.
fn steps_trained_again(marks: &[Mark]) -> u64 {
    let mut steps: Vec<u64> = marks
        .iter()
        .filter(|m| m.what == What::Step && m.is_chief())
        .map(|m| m.value)
        .collect();
    let ended = steps.len();
    steps.sort_unstable();
    steps.dedup();
    (ended - steps.len()) as u64
}

/// From `at` to the first step after it of a later round than the one training then, none
/// of whose tasks is on the host at `address`.
fn without_ms(marks: &[Mark], address: &str, at: u128) -> Option<f64> {
    let training = marks
        .iter()
        .filter(|m| m.ns <= at)
        .map(|m| m.round)
        .max()
        .unwrap_or(0);
    let on_host = format!("{address}/");
    let has_host = |round: u32| {
        marks
            .iter()
            .any(|m| m.round == round && m.what == What::Start && m.task.starts_with(&on_host))
    };
    marks
        .iter()
        .filter(|m| m.what == What::Step && m.ns > at && m.round > training)
        .filter(|m| !has_host(m.round))
        .map(|m| (m.ns - at) as f64 / 1e6)
        .reduce(f64::min)
}

/// The report's section: both sides as a table, then the commands.
pub(super) fn render(sides: &[Figures], length: Duration, every: Duration) -> String {
    let mut out = String::from(
        "## MultiWorkerMirroredStrategy under spot preemptions: the cloud's notices followed, or not\n\n",
    );
    let _ = writeln!(
        out,
        "MultiWorkerMirroredStrategy (`preemption_goodput_train.py`: checkpoints only by \
         TensorFlow's PreemptionCheckpointHandler) on 3 network-namespace hosts, a task each, \
         TensorFlow 2.21, each host with its own GCE metadata stand-in. Every {} s for {} s, a \
         spot notice on host 1 or 2 in turn (`instance/preempted: TRUE`); {} s later the \
         host's agent and tasks are killed (its VM stops; after the agent left on its own, what \
         is left), the notice withdrawn, and {} s after that a fresh agent starts there and \
         rejoins. Host 0 gets none: its agent serves the built-in rendezvous, whose hand-over \
         is not built yet. Without notices the kill is a crash. Goodput: the steps kept, at \
         the step time measured in the same job before the first notice, over the run's \
         length.\n",
        every.as_secs(),
        length.as_secs(),
        schedule::KILL_AFTER.as_secs(),
        schedule::BACK_AFTER.as_secs()
    );
    let _ = writeln!(
        out,
        "| agents | preemptions | left on the notice | handler saves | steps lost | restarts counted | notice (or kill) to the first step without the host (median) | goodput |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|");
    for side in sides {
        let without = if side.without_ms.is_empty() {
            "—".to_owned()
        } else {
            format!(
                "{:.1} s (n={})",
                median(side.without_ms.clone()) / 1000.0,
                side.without_ms.len()
            )
        };
        let goodput = side
            .goodput
            .map_or("—".to_owned(), |g| format!("{:.1}%", 100.0 * g.ratio));
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {without} | {goodput} |",
            side.notices.label(),
            side.preempted,
            side.left,
            side.saves,
            side.steps_lost,
            side.restarts
        );
    }
    if let Some(side) = sides.iter().find(|s| s.notices == Notices::Gce) {
        let met = match side.goodput {
            Some(g) if g.ratio >= GOODPUT => "met",
            Some(_) => "**not met**",
            None => "not measured",
        };
        let _ = writeln!(
            out,
            "\nTarget with notices: goodput ≥ {:.0}%: {met}.",
            GOODPUT * 100.0
        );
    }
    let _ = writeln!(out, "\nCommands:\n");
    for side in sides {
        let _ = writeln!(out, "- `{}`", side.command);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mark(task: &str, round: u32, what: What, s: f64, value: u64) -> Mark {
        Mark::at(task, round, what, s, value)
    }

    #[test]
    fn the_figures_come_from_the_marks() {
        let mut marks = Vec::new();
        for (round, hosts, t) in [(1, &["a", "b", "c"][..], 0.0), (2, &["a", "b"], 20.0)] {
            for (i, host) in hosts.iter().enumerate() {
                marks.push(mark(
                    &format!("{host}/worker:{i}"),
                    round,
                    What::Start,
                    t,
                    1,
                ));
            }
        }
        // Round 1 ends steps 1 to 10; round 2 restores 8 and ends 9 to 12 from t = 25.
        marks.extend((1..=10).map(|s| mark("a/worker:0", 1, What::Step, s as f64, s)));
        marks.extend((9..=12).map(|s| mark("a/worker:0", 2, What::Step, 16.0 + s as f64, s)));
        // Another task's steps are the same steps.
        marks.push(mark("b/worker:1", 1, What::Step, 3.0, 3));
        assert_eq!(steps_trained_again(&marks), 2);
        // Host c noticed at t = 10.5: round 2, without it, ends its first step at t = 25.
        assert_eq!(without_ms(&marks, "c", 10_500_000_000), Some(14_500.0));
        // Host b is in round 2: no step without it.
        assert_eq!(without_ms(&marks, "b", 10_500_000_000), None);
    }
}
