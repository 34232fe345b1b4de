//! The report of a run: today's launcher beside tfcluster's new behaviours for each fault,
//! where a recovery's time goes, goodput, memory, notes; printed, and written to its section
//! of `docs/benchmarks.md` after a full run.

use std::fmt::Write as _;

use crate::stats::{Summary, median};
use crate::table::{self, Row, Spread, Target};

use super::fault::Fault;
use super::measure::{Figures, Plan, Recoveries};
use super::recovery::MILESTONES;
use super::side::{Flags, Side};

/// Issue 35's targets beyond the faults': goodput, an agent's memory.
const GOODPUT: f64 = 0.90;
const AGENT_MB: f64 = 12.0;

/// What the report says of the run besides the figures.
pub(super) struct Context<'a> {
    pub(super) machine: &'a str,
    pub(super) load_before: &'a str,
    pub(super) load_after: &'a str,
    pub(super) flags: &'a Flags,
    pub(super) plan: Plan,
    pub(super) notes: &'a [String],
}

/// The report of `sides` (today's launcher first).
pub(super) fn render(sides: &[Figures], context: &Context) -> String {
    let mut out = header(sides, context);
    let baseline = sides.iter().find(|f| f.side == Side::Baseline);
    let new = sides.iter().find(|f| f.side == Side::New);
    let rows: Vec<Row> = Fault::ALL
        .iter()
        .filter_map(|&fault| row(fault, baseline, new))
        .collect();
    out.push_str(&table::render(
        "today's launcher",
        "today / tfcluster",
        &rows,
    ));
    out.push_str(
        "\nWhere a recovery's time goes (medians, ms after the fault, the last task or \
         surviving agent to get there; then the steps redone):\n\n",
    );
    for figures in sides {
        for recoveries in &figures.recoveries {
            let _ = writeln!(out, "- {}", milestones(figures.side, recoveries));
        }
    }
    out.push_str("\nGoodput (the steps kept at the run's mean step time, checkpoints included, over the wall time):\n\n");
    for figures in sides {
        let _ = writeln!(out, "- {}", goodput(figures));
    }
    out.push_str(
        "\nResident memory (VmRSS) while training, before the first fault (most of an agent's \
         is the binary's pages the kernel mapped for it, shared by every process of the host \
         that runs the binary; its private part is RssAnon):\n\n",
    );
    for figures in sides {
        let _ = writeln!(out, "- {}", memory(figures));
    }
    let mut notes = context.notes.to_vec();
    for figures in sides {
        for r in figures.recoveries.iter().filter(|r| r.missed > 0) {
            notes.push(format!(
                "{}: {}: not recovered in {} s, {} of {} times (then the task was killed to go on)",
                figures.side.label(),
                r.fault.label(),
                r.fault.cap().as_secs(),
                r.missed,
                r.missed + r.found.len()
            ));
        }
    }
    if !notes.is_empty() {
        out.push_str("\nNotes:\n\n");
        for note in notes {
            let _ = writeln!(out, "- {note}");
        }
    }
    out
}

/// The title, the machine and its load, the commands and how the figures were taken.
fn header(sides: &[Figures], context: &Context) -> String {
    let mut out = String::from("## Goodput under failures\n\n");
    let _ = writeln!(out, "Machine: {}.\n", context.machine);
    let _ = writeln!(
        out,
        "Load average (1, 5, 15 min) at the start of the run: {}; at its end: {}.\n",
        context.load_before, context.load_after
    );
    let commands: Vec<String> = sides
        .iter()
        .map(|f| format!("{}: `{}`", f.side.label(), f.command))
        .collect();
    let _ = writeln!(
        out,
        "Command: `cargo xtask bench-goodput` (release build; today's launcher, then tfcluster, \
         one after the other in one run). Three hosts, each a network namespace on a bridge \
         (the `net-hosts` crate), an agent each, host 0's serving the built-in rendezvous; \
         one task a host of real TensorFlow 2.21 MultiWorkerMirroredStrategy training a \
         linear model (`xtask/src/bench_goodput/goodput_train.py`): a step of 0.1 s (a sleep \
         after each all-reduced step), a checkpoint every 10 steps to a directory every host \
         shares, restored at each round's start, and a timestamped line at each point below \
         (the wall clock, which every namespace shares); the agents run with `-v` and their \
         log lines are read for the rest. {}. Each fault is made {} time(s) on one job once \
         its round has made {} steps and (tfcluster) every agent's warm interpreter for the \
         next round has done its imports (three TensorFlow imports beside the training take \
         8–14 s on these two cores, and a restart before then waits for them), and timed \
         from the fault to the first step of the next round that trains (every task's): a task that is not the chief SIGKILLed; the same \
         SIGSTOPped (a hung task: only a watchdog notices it; waited for 60 s at most, then \
         killed to go on); the last host's link set down (the others go on with 2 hosts); the \
         last host's agent and tasks SIGKILLed at once. After a host fault its agent is \
         started again and rejoins before the next fault. Goodput: a job of its own trains \
         for {:.0} min with a task that is not the chief SIGKILLed every 60 s but in the last \
         minute. Medians (least–most, n); the ratio is today's figure over tfcluster's. All \
         hosts share this machine's cores, and so do its other users: absolute figures move \
         with its load.\n",
        commands.join("; "),
        context.plan.repeats,
        super::measure::STEADY_STEPS,
        context.plan.goodput.as_secs_f64() / 60.0,
    );
    let missing = context.flags.missing();
    if !missing.is_empty() {
        let _ = writeln!(
            out,
            "Issue 35's flags not in this build: {}; each side ran with the nearest it has, \
             as above (without `--watchdog` no side notices a hung task itself; without \
             `--no-prewarm` no side holds warm interpreters).\n",
            missing.join(", ")
        );
    }
    out
}

/// The row of `fault`: today's time to the first step beside tfcluster's; `None` when
/// tfcluster's never recovered (a note says so).
fn row(fault: Fault, baseline: Option<&Figures>, new: Option<&Figures>) -> Option<Row> {
    let times = |figures: Option<&Figures>| {
        let found = &of(figures?, fault).found;
        Summary::of(&found.iter().map(|r| r.first_step).collect::<Vec<_>>())
    };
    let ours = times(new)?;
    let what = format!(
        "{}: the fault to the first training step after the restart",
        fault.label()
    );
    let target = Target::AtMost(fault.target_ms());
    let row = match times(baseline) {
        Some(theirs) => {
            Row::new(&what, theirs.median, ours.median, target).peer_spread(spread(&theirs))
        }
        None => Row::new(&what, 0.0, ours.median, target).without_peer(),
    };
    Some(row.ours_spread(spread(&ours)))
}

fn of(figures: &Figures, fault: Fault) -> &Recoveries {
    figures
        .recoveries
        .iter()
        .find(|r| r.fault == fault)
        .expect("every fault has its recoveries")
}

fn spread(summary: &Summary) -> Spread {
    Spread {
        min: summary.min,
        max: summary.max,
        count: summary.count,
    }
}

/// A recovery's milestones as a sentence.
fn milestones(side: Side, recoveries: &Recoveries) -> String {
    let mut line = format!("{}, {}: ", side.label(), recoveries.fault.label());
    if recoveries.found.is_empty() {
        line.push_str("no recovery measured.");
        return line;
    }
    let parts: Vec<String> = MILESTONES
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let at: Vec<f64> = recoveries
                .found
                .iter()
                .filter_map(|r| r.milestones()[i])
                .collect();
            if at.is_empty() {
                format!("{name} —")
            } else {
                format!("{name} {:.0}", median(at))
            }
        })
        .collect();
    let redone = median(recoveries.found.iter().map(|r| r.redone as f64).collect());
    let _ = write!(
        line,
        "{}; {redone:.0} steps redone (n={}).",
        parts.join(", "),
        recoveries.found.len()
    );
    line
}

/// The goodput line of a side.
fn goodput(figures: &Figures) -> String {
    let label = figures.side.label();
    let Some(run) = figures.run else {
        return format!("{label}: not measured.");
    };
    let g = run.goodput;
    let target = if figures.side == Side::New {
        let met = if g.ratio >= GOODPUT {
            "met"
        } else {
            "**not met**"
        };
        format!(" Target ≥ {:.0}%: {met}.", GOODPUT * 100.0)
    } else {
        String::new()
    };
    format!(
        "{label}: {:.1}% over {:.0} min, {} faults made: {} steps kept of {} ended, a step \
         {:.0} ms on average.{target}",
        g.ratio * 100.0,
        run.minutes,
        run.faults,
        g.productive,
        g.ended,
        g.step_ms
    )
}

/// The memory line of a side.
fn memory(figures: &Figures) -> String {
    let m = &figures.memory;
    let range = |values: &[f64]| {
        let least = values.iter().copied().fold(f64::INFINITY, f64::min);
        let most = values.iter().copied().fold(0.0, f64::max);
        format!("{least:.1}–{most:.1} MB (n={})", values.len())
    };
    if m.agents_mb.is_empty() {
        return format!("{}: not measured.", figures.side.label());
    }
    let most = m.agents_mb.iter().copied().fold(0.0, f64::max);
    let met = if most <= AGENT_MB {
        "met"
    } else {
        "**not met**"
    };
    let warm = if m.warm_mb.is_empty() {
        "none held".to_owned()
    } else {
        format!("{} each", range(&m.warm_mb))
    };
    format!(
        "{}: agents {} (target ≤ {AGENT_MB} MB: {met}), of it private (RssAnon) {}; tasks {}; \
         warm interpreters: {warm}.",
        figures.side.label(),
        range(&m.agents_mb),
        range(&m.agents_private_mb),
        range(&m.tasks_mb)
    )
}
