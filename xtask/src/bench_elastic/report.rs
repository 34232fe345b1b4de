//! The report of a run: the table of our figures beside torchrun's, then where the time of a
//! rendezvous and of a restart goes, then the notes; printed, and written to its section of
//! `docs/benchmarks.md`.

use std::fmt::Write as _;

use crate::stats::Summary;
use crate::table::{self, Row, Spread, Target};

use super::agents::MAX_RESTARTS;
use super::figures::{Ours, Side, Sized};
use super::{AGENT_MB, ETCD_RENDEZVOUS_64_MS, ETCD_RESTART_MS, RENDEZVOUS, RESTARTS};

/// The report of `ours` beside `theirs` (torchrun's, when measured) on `machine`, with the
/// load average before and after and the run's `notes`.
pub(super) fn render(
    ours: &[Ours],
    theirs: Option<&Side>,
    machine: &str,
    load_before: &str,
    load_after: &str,
    notes: &[String],
) -> String {
    let (mut rows, phases) = rendezvous_rows(ours, theirs);
    let (restarts, restart_phases) = restart_rows(ours, theirs);
    rows.extend(restarts);
    rows.extend(memory_rows(ours, theirs));

    let mut out = header(machine, load_before, load_after);
    out.push_str(&table::render("torchrun", "torchrun / ours", &rows));
    out.push_str("\nWhere the time of a rendezvous goes (medians):\n\n");
    push_list(&mut out, &phases);
    if !restart_phases.is_empty() {
        out.push_str("\nWhere the time of a restart goes (medians):\n\n");
        push_list(&mut out, &restart_phases);
    }
    if !notes.is_empty() {
        out.push_str("\nNotes:\n\n");
        push_list(&mut out, notes);
    }
    out
}

/// The title, the machine, its load and how the figures were taken.
fn header(machine: &str, load_before: &str, load_after: &str) -> String {
    let mut out = String::from("## Elastic launch beside torchrun\n\n");
    let _ = writeln!(out, "Machine: {machine}.\n");
    let _ = writeln!(
        out,
        "Load average (1, 5, 15 min) at the start of the run: {load_before}; at its end: \
         {load_after}.\n"
    );
    let _ = writeln!(
        out,
        "Command: `cargo xtask bench-elastic` (release build; ours on the built-in rendezvous, \
         ours on etcd, then torchrun, one after the other in one run; all on loopback). \
         `tfcluster -v run --rdzv 127.0.0.1:PORT --nodes N --tasks-per-node 1 --grace 0s \
         --max-restarts {MAX_RESTARTS}`; on etcd the same with `--rdzv \
         etcd://127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3`, a local three-member etcd started once \
         for the run (the `etcd-cluster` crate: data in memory, heartbeat 50 ms, election \
         500 ms), each job under its own `--rdzv-id`; beside `torchrun --nnodes N:N \
         --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:PORT \
         --monitor-interval 0.1 --max-restarts {MAX_RESTARTS} --no-python`. All run the same \
         task, a small Rust program (std only, `rustc -O`) that writes its start time (the wall \
         clock, shared by all processes) to a file and sleeps; `-v` logs what our agents do, \
         read here for the joins and the phases below. With min = max no last call is waited \
         for. Rendezvous: the first agent (which serves the rendezvous; on etcd, where none \
         serves, it makes the job's record) is started, then the others but one; once each has \
         joined, the clock starts as the last agent process is spawned and stops at the last \
         task's start. Restart: one task is killed (SIGKILL, a different host each time); the \
         clock runs from the kill to the last start of the next round's tasks. Targets: issue \
         18's for the built-in rendezvous and every agent's memory, issue 22's for etcd (64 \
         agents ≤ {ETCD_RENDEZVOUS_64_MS} ms, a restart ≤ {ETCD_RESTART_MS} ms). Medians \
         (least–most, n runs); the ratio is torchrun's figure over ours. All agents, tasks and \
         etcd members share this machine's cores, and so do its other users: absolute figures \
         move with its load, compare ratios.\n"
    );
    out
}

/// `lines` as a list, one item a line.
fn push_list(out: &mut String, lines: &[String]) {
    for line in lines {
        let _ = writeln!(out, "- {line}");
    }
}

/// The rows of the rendezvous times, by size then launcher, and where each one's time goes.
fn rendezvous_rows(ours: &[Ours], theirs: Option<&Side>) -> (Vec<Row>, Vec<String>) {
    let mut rows = Vec::new();
    let mut phases = Vec::new();
    for (i, &(nodes, ..)) in RENDEZVOUS.iter().enumerate() {
        let their = sized(theirs, i);
        for (k, our) in ours.iter().enumerate() {
            let Some(figures) = sized(Some(&our.side), i) else {
                continue;
            };
            let target = if nodes == 64 {
                Target::AtMost(our.rendezvous_64_ms)
            } else {
                Target::None
            };
            rows.push(timed_row(
                &format!(
                    "rendezvous{}, {nodes} agents: the last agent's start to every task started",
                    our.on
                ),
                &figures.times,
                their.map(|t| &t.times),
                target,
            ));
            // torchrun's CPU time once, beside the built-in rendezvous's.
            phases.push(where_it_goes(
                nodes,
                our.label,
                figures,
                their.filter(|_| k == 0),
            ));
        }
    }
    (rows, phases)
}

/// The rows of the restart times, by size then launcher, and where each one's time goes.
fn restart_rows(ours: &[Ours], theirs: Option<&Side>) -> (Vec<Row>, Vec<String>) {
    let mut rows = Vec::new();
    let mut phases = Vec::new();
    for (i, &(nodes, ..)) in RESTARTS.iter().enumerate() {
        let their = theirs.and_then(|t| t.restart.get(i).copied().flatten());
        for our in ours {
            let Some(Some(figures)) = our.side.restart.get(i) else {
                continue;
            };
            rows.push(timed_row(
                &format!(
                    "restart{}, {nodes} agents: a task's SIGKILL to every task of the next round \
                     started",
                    our.on
                ),
                &figures.times,
                their.as_ref().map(|t| &t.times),
                Target::AtMost(our.restart_ms),
            ));
            if let Some((ended, holding)) = figures.phases {
                phases.push(format!(
                    "{nodes} agents, {}: every agent has seen the round end {ended:.1} ms after \
                     the kill, every agent holds the next round at {holding:.1} ms, every task \
                     of it has started at {:.1} ms.",
                    our.label, figures.times.median
                ));
            }
        }
    }
    (rows, phases)
}

/// The rows of the agents' memory, by rendezvous size then launcher.
fn memory_rows(ours: &[Ours], theirs: Option<&Side>) -> Vec<Row> {
    let mut rows = Vec::new();
    for (i, &(nodes, ..)) in RENDEZVOUS.iter().enumerate() {
        let their = sized(theirs, i);
        for our in ours {
            if let Some(figures) = sized(Some(&our.side), i) {
                rows.extend(agent_memory_rows(nodes, our, figures, their));
            }
        }
    }
    rows
}

/// The memory rows of `nodes` agents of `our` (its `figures`) beside torchrun's (`their`):
/// the agents that only join, the one that also serves, the most private memory.
fn agent_memory_rows(nodes: usize, our: &Ours, figures: &Sized, their: Option<&Sized>) -> Vec<Row> {
    let on = our.on;
    let joiners = if our.first_serves {
        "the most of the agents that only join"
    } else {
        "the most of any agent (every agent is equal: none serves the rendezvous)"
    };
    [
        memory_row(
            format!(
                "an agent's resident memory (VmRSS) while its task runs{on}, {nodes} agents: \
                 {joiners}"
            ),
            figures,
            their,
            |s| Some(s.joiner_mb),
            Target::AtMost(AGENT_MB),
        ),
        memory_row(
            format!(
                "same{on}, {nodes} agents: the agent that also serves the rendezvous \
                 (torchrun's: hosts the c10d store)"
            ),
            figures,
            their,
            |s| s.serving_mb,
            Target::AtMost(AGENT_MB),
        ),
        memory_row(
            format!(
                "same{on}, {nodes} agents: the most private memory (RssAnon) of any agent; \
                 the rest of VmRSS is the binary's and libraries' pages, which a host's \
                 agents share"
            ),
            figures,
            their,
            |s| Some(s.private_mb),
            Target::None,
        ),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// A memory row `what` of the figure `of` picks, ours beside torchrun's when it has one;
/// `None` when ours has none.
fn memory_row(
    what: String,
    ours: &Sized,
    theirs: Option<&Sized>,
    of: fn(&Sized) -> Option<f64>,
    target: Target,
) -> Option<Row> {
    let ours = of(ours)?;
    let row = Row::memory(&what, theirs.and_then(of).unwrap_or(0.0), ours, target);
    Some(if theirs.and_then(of).is_some() {
        row
    } else {
        row.without_peer()
    })
}

fn spread(summary: &Summary) -> Spread {
    Spread {
        min: summary.min,
        max: summary.max,
        count: summary.count,
    }
}

/// A row of our summary beside torchrun's (when measured).
fn timed_row(what: &str, ours: &Summary, theirs: Option<&Summary>, target: Target) -> Row {
    let row = Row::new(what, theirs.map_or(0.0, |t| t.median), ours.median, target)
        .ours_spread(spread(ours));
    match theirs {
        Some(t) => row.peer_spread(spread(t)),
        None => row.without_peer(),
    }
}

/// The phases and CPU time of a rendezvous of `nodes` agents of `label` ("ours", "ours on
/// etcd"), as a sentence; torchrun's CPU time after it when given.
fn where_it_goes(nodes: usize, label: &str, ours: &Sized, theirs: Option<&Sized>) -> String {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let total = ours.times.median;
    let (agents, tasks, servers) = ours.cpu_ms;
    let mut line = format!("{nodes} agents, {label}: ");
    if let Some((joined, holding)) = ours.phases {
        let _ = write!(
            line,
            "the last agent's join is answered {joined:.1} ms after its start, every agent \
             holds the round at {holding:.1} ms, every task has started at {total:.1} ms. "
        );
    }
    let _ = write!(
        line,
        "CPU time meanwhile: {agents:.0} ms in the agents (the last one's start-up included), \
         {tasks:.0} ms in the tasks (fork, exec, writing the mark)"
    );
    if servers > 0.0 {
        let _ = write!(line, ", {servers:.0} ms in etcd's members");
    }
    let _ = write!(
        line,
        ": on {cores} cores at least {:.0} ms, even with nothing else running.",
        (agents + tasks + servers) / cores as f64
    );
    if let Some(theirs) = theirs {
        let _ = write!(
            line,
            " torchrun: {:.0} ms in the agents (the last one's Python and torch imports \
             included), {:.0} ms in the tasks.",
            theirs.cpu_ms.0, theirs.cpu_ms.1
        );
    }
    line
}

/// The figures of rendezvous size `i` of `side`, if measured.
fn sized(side: Option<&Side>, i: usize) -> Option<&Sized> {
    side.and_then(|s| s.rendezvous.get(i))
        .and_then(Option::as_ref)
}
