//! `cargo xtask bench-elastic`: the elastic launch (`tfcluster run --rdzv`) on its built-in
//! rendezvous and on etcd, beside torchrun's c10d rendezvous, one after the other in one run
//! on this machine, on loopback; prints the figures and writes them to their section of
//! `docs/benchmarks.md`. Not part of `test`.
//!
//! Every launcher runs the same task (`mark_task.rs`), one per agent, with min = max agents.
//! Measured (issue 18's "Speed", issue 22's for etcd): the rendezvous, from the last agent's
//! start to every task started, with 8 and 64 agents; a restart, from a task's SIGKILL to
//! every task of the next round started, with 8 and 64 agents (`--grace 0s`; torchrun's
//! `--monitor-interval 0.1`); and each agent's resident memory while its tasks run. Ours on
//! etcd keeps its rendezvous in a local three-member etcd (`etcd_rdzv.rs`) started for the run.
//!
//! `--only built-in` or `--only etcd` measures that launcher alone and prints its figures
//! without writing the document, whose section comes from a run of every launcher.

mod agents;
mod etcd_rdzv;
mod logs;
mod mark;
mod measure;
mod signal;
mod torch;

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use crate::child::target_dir;
use crate::stats::{Summary, median};
use crate::table::{self, Row, Spread, Target};
use crate::{docs_section, machine, workspace};
use agents::{Launcher, MAX_RESTARTS};

/// Rendezvous sizes and how often each is measured: ours (either backend), torchrun's.
const RENDEZVOUS: [(usize, usize, usize); 2] = [(8, 7, 3), (64, 5, 1)];
/// Restart sizes and their jobs (each killing a task `MAX_RESTARTS` times): ours (either
/// backend), torchrun's.
const RESTARTS: [(usize, usize, usize); 2] = [(8, 2, 1), (64, 2, 1)];
/// Issue 18's targets (the built-in rendezvous).
const RENDEZVOUS_64_MS: f64 = 50.0;
const RESTART_MS: f64 = 300.0;
const AGENT_MB: f64 = 10.0;
/// Issue 22's targets (the rendezvous on a local three-member etcd).
const ETCD_RENDEZVOUS_64_MS: f64 = 200.0;
const ETCD_RESTART_MS: f64 = 500.0;
/// torchrun's 64 agents run only when their memory, projected from its 8, fits in this
/// share of the memory available.
const TORCH_MEMORY_SHARE: f64 = 0.5;

/// The figures of one launcher; `None` where not measured.
#[derive(Default)]
struct Side {
    /// By rendezvous size, as [`RENDEZVOUS`].
    rendezvous: Vec<Option<Sized>>,
    /// By restart size, as [`RESTARTS`].
    restart: Vec<Option<Restarted>>,
}

/// One restart size's figures over its restarts.
#[derive(Clone, Copy)]
struct Restarted {
    times: Summary,
    /// Medians (ours): every agent having seen the round end, and every agent holding the
    /// next round, after the kill.
    phases: Option<(f64, f64)>,
}

/// One rendezvous size's figures over its runs.
struct Sized {
    times: Summary,
    /// The most resident memory (VmRSS) of an agent that only joins (on etcd: of any), in MB.
    joiner_mb: f64,
    /// The most resident memory of the agent that also serves the rendezvous (torchrun's:
    /// hosts the c10d store), in MB; `None` on etcd, where none does.
    serving_mb: Option<f64>,
    /// The most private memory (RssAnon) of any agent, in MB.
    private_mb: f64,
    /// Medians: the last agent's join answered and every agent holding the round (ours).
    phases: Option<(f64, f64)>,
    /// Medians: CPU time of the agents, of the tasks and of what serves the rendezvous beside
    /// the agents (etcd's members) during the rendezvous.
    cpu_ms: (f64, f64, f64),
}

impl Sized {
    /// The figures of `runs`; `first_serves`: whether the first agent also serves the
    /// rendezvous (its memory apart).
    fn of(runs: &[measure::Rendezvous], first_serves: bool) -> Option<Self> {
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
fn medians(pairs: &[(f64, f64)]) -> Option<(f64, f64)> {
    (!pairs.is_empty()).then(|| {
        (
            median(pairs.iter().map(|p| p.0).collect()),
            median(pairs.iter().map(|p| p.1).collect()),
        )
    })
}

/// Our launcher on one backend, as the report shows it.
struct Ours {
    side: Side,
    /// What the rows say after the work: "" (the built-in rendezvous), " on etcd".
    on: &'static str,
    /// The line of where the time goes: "ours", "ours on etcd".
    label: &'static str,
    /// The targets: the rendezvous of 64 agents, a restart (ms).
    rendezvous_64_ms: f64,
    restart_ms: f64,
    /// Whether its first agent also serves the rendezvous.
    first_serves: bool,
}

/// Which launchers a run measures: every one, or one of ours alone (`--only`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Only {
    All,
    BuiltIn,
    Etcd,
}

impl Only {
    fn parse(args: &[&str]) -> Result<Self, String> {
        match args {
            [] => Ok(Self::All),
            ["--only", "built-in"] => Ok(Self::BuiltIn),
            ["--only", "etcd"] => Ok(Self::Etcd),
            _ => Err(format!(
                "bench-elastic {args:?}: expected no arguments, or --only built-in|etcd"
            )),
        }
    }
}

pub(crate) fn run(args: &[&str]) -> Result<(), String> {
    let only = Only::parse(args)?;
    let load_before = machine::load();
    workspace::run(Command::new("cargo").args([
        "build",
        "--release",
        "-p",
        "tfcluster",
        "--bin",
        "tfcluster",
    ]))?;
    mark::build()?;
    let torch = match only {
        Only::All => torch::ensure(),
        Only::BuiltIn | Only::Etcd => Err("not asked for (--only)".into()),
    };
    if let Err(why) = &torch {
        eprintln!("xtask: torch is not measured: {why}");
    }
    let dir = target_dir().join("bench-elastic");
    let mut notes = Vec::new();
    let mut ours = Vec::new();

    if only != Only::Etcd {
        let side = measure_side(&Launcher::Ours, &dir, &mut notes, |_, _| Ok(()));
        ours.push(Ours {
            side,
            on: "",
            label: "ours",
            rendezvous_64_ms: RENDEZVOUS_64_MS,
            restart_ms: RESTART_MS,
            first_serves: true,
        });
    }
    let mut etcd_line = String::new();
    if only != Only::BuiltIn {
        let (cluster, etcd) = etcd_rdzv::start()?;
        etcd_line = format!(
            "; {} ({} members on loopback)",
            etcd_rdzv::version(),
            etcd_rdzv::MEMBERS
        );
        eprintln!("xtask: etcd runs at {}", etcd.rdzv);
        let side = measure_side(&Launcher::OursEtcd(etcd), &dir, &mut notes, |_, _| Ok(()));
        // Killed now: its members' idle work is no part of torchrun's figures.
        drop(cluster);
        ours.push(Ours {
            side,
            on: " on etcd",
            label: "ours on etcd",
            rendezvous_64_ms: ETCD_RENDEZVOUS_64_MS,
            restart_ms: ETCD_RESTART_MS,
            first_serves: false,
        });
    }

    let theirs = match &torch {
        Ok(torch) => {
            let launcher = Launcher::Torchrun(torch.torchrun.clone());
            let fits = |nodes: usize, side: &Side| -> Result<(), String> {
                let (Some(Some(first)), Some(available)) =
                    (side.rendezvous.first(), available_mb())
                else {
                    return Err(format!(
                        "torchrun with {nodes} agents was not run: its memory with 8 is unknown"
                    ));
                };
                let rss = first.joiner_mb.max(first.serving_mb.unwrap_or(0.0));
                let need = rss * nodes as f64;
                if need <= available * TORCH_MEMORY_SHARE {
                    Ok(())
                } else {
                    Err(format!(
                        "torchrun with {nodes} agents was not run: at {rss:.0} MB an agent they \
                         would take {:.1} GB, over half the {:.1} GB available on this machine \
                         then (2 cores, shared)",
                        need / 1024.0,
                        available / 1024.0
                    ))
                }
            };
            Some(measure_side(&launcher, &dir, &mut notes, fits))
        }
        Err(_) => None,
    };
    let load_after = machine::load();

    let torch_line = match &torch {
        Ok(torch) => format!("torch {} (run on the CPU)", torch.version),
        Err(why) => {
            notes.push(format!("torch was not measured: {why}"));
            "torch not installed".into()
        }
    };
    let report = render(
        &ours,
        theirs.as_ref(),
        &format!("{}; {torch_line}{etcd_line}", machine::describe()),
        &load_before,
        &load_after,
        &notes,
    );
    print!("{report}");
    if only == Only::All {
        let path = workspace::root().join("docs/benchmarks.md");
        docs_section::write(&path, "bench-elastic", &report)?;
        eprintln!("xtask: wrote its section of {}", path.display());
    } else {
        eprintln!("xtask: --only: docs/benchmarks.md is left as it was");
    }
    Ok(())
}

/// Every measurement of one launcher; `larger_fits` says whether a size larger than the
/// first may run, given the figures so far, or why not. A measurement that fails is a note
/// (and its size's later runs are not made), so that one failure does not lose the run.
fn measure_side(
    launcher: &Launcher,
    dir: &Path,
    notes: &mut Vec<String>,
    larger_fits: impl Fn(usize, &Side) -> Result<(), String>,
) -> Side {
    let name = launcher.name();
    let ours = launcher.is_ours();
    let mut side = Side::default();
    // Whether size `nodes` (the `i`th) may run, decided once for each size (the rendezvous's
    // answer holds for the restarts); a reason why not becomes a note.
    let mut decided: Vec<(usize, bool)> = Vec::new();
    let mut allowed = |i: usize, nodes: usize, side: &Side, notes: &mut Vec<String>| {
        if let Some(&(_, verdict)) = decided.iter().find(|(n, _)| *n == nodes) {
            return verdict;
        }
        let fits = if i == 0 {
            Ok(())
        } else {
            larger_fits(nodes, side)
        };
        let verdict = fits.map_err(|why| notes.push(why)).is_ok();
        decided.push((nodes, verdict));
        verdict
    };

    eprintln!("xtask: {name}'s rendezvous");
    for (i, &(nodes, our_runs, their_runs)) in RENDEZVOUS.iter().enumerate() {
        if !allowed(i, nodes, &side, notes) {
            side.rendezvous.push(None);
            continue;
        }
        let runs = if ours { our_runs } else { their_runs };
        let mut found = Vec::new();
        for run in 0..runs {
            let at = dir.join(format!("{name}-rdzv{nodes}-{run}"));
            match measure::rendezvous(launcher, nodes, &at) {
                Ok(one) => {
                    let resident = one.memory.iter().map(|m| m.resident_mb);
                    eprintln!(
                        "xtask: {name}, {nodes} agents: {:.1} ms (CPU: agents {:.0} ms, tasks {:.0} ms, servers {:.0} ms), agents {:.1}-{:.1} MB",
                        one.ms,
                        one.agent_cpu_ms,
                        one.task_cpu_ms,
                        one.server_cpu_ms,
                        resident.clone().fold(f64::INFINITY, f64::min),
                        resident.fold(0.0, f64::max)
                    );
                    found.push(one);
                }
                Err(e) => {
                    notes.push(format!("{name} with {nodes} agents failed: {e}"));
                    break;
                }
            }
        }
        side.rendezvous
            .push(Sized::of(&found, launcher.first_serves()));
    }

    eprintln!("xtask: {name}'s restarts");
    for (i, &(nodes, our_jobs, their_jobs)) in RESTARTS.iter().enumerate() {
        if !allowed(i, nodes, &side, notes) {
            side.restart.push(None);
            continue;
        }
        let jobs = if ours { our_jobs } else { their_jobs };
        let mut times = Vec::new();
        let mut phases = Vec::new();
        for job in 0..jobs {
            let at = dir.join(format!("{name}-restart{nodes}-{job}"));
            let found = measure::restarts(launcher, nodes, MAX_RESTARTS as usize, &at);
            let failed = match found {
                Ok(found) => {
                    eprintln!("xtask: {name} restarts, {nodes} agents: {:?} ms", found.ms);
                    times.extend(found.ms);
                    phases.extend(found.phases);
                    notes.extend(found.notes);
                    found.failed
                }
                Err(e) => Some(e),
            };
            if let Some(e) = failed {
                notes.push(format!(
                    "{name}'s restarts with {nodes} agents failed (job {}): {e}",
                    job + 1
                ));
                break;
            }
        }
        side.restart
            .push(Summary::of(&times).map(|times| Restarted {
                times,
                phases: medians(&phases),
            }));
    }
    side
}

/// The memory available now (MemAvailable), in MB.
fn available_mb() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
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

fn render(
    ours: &[Ours],
    theirs: Option<&Side>,
    machine: &str,
    load_before: &str,
    load_after: &str,
    notes: &[String],
) -> String {
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
    let mut restart_phases = Vec::new();
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
                restart_phases.push(format!(
                    "{nodes} agents, {}: every agent has seen the round end {ended:.1} ms after \
                     the kill, every agent holds the next round at {holding:.1} ms, every task \
                     of it has started at {:.1} ms.",
                    our.label, figures.times.median
                ));
            }
        }
    }
    for (i, &(nodes, ..)) in RENDEZVOUS.iter().enumerate() {
        let their = sized(theirs, i);
        for our in ours {
            let Some(figures) = sized(Some(&our.side), i) else {
                continue;
            };
            let memory = |what: String, of: fn(&Sized) -> Option<f64>, target: Target| {
                let ours = of(figures)?;
                let row = Row::memory(&what, their.and_then(of).unwrap_or(0.0), ours, target);
                Some(if their.and_then(of).is_some() {
                    row
                } else {
                    row.without_peer()
                })
            };
            let on = our.on;
            let joiners = if our.first_serves {
                "the most of the agents that only join"
            } else {
                "the most of any agent (every agent is equal: none serves the rendezvous)"
            };
            rows.extend(memory(
                format!(
                    "an agent's resident memory (VmRSS) while its task runs{on}, {nodes} agents: \
                     {joiners}"
                ),
                |s| Some(s.joiner_mb),
                Target::AtMost(AGENT_MB),
            ));
            rows.extend(memory(
                format!(
                    "same{on}, {nodes} agents: the agent that also serves the rendezvous \
                     (torchrun's: hosts the c10d store)"
                ),
                |s| s.serving_mb,
                Target::AtMost(AGENT_MB),
            ));
            rows.extend(memory(
                format!(
                    "same{on}, {nodes} agents: the most private memory (RssAnon) of any agent; \
                     the rest of VmRSS is the binary's and libraries' pages, which a host's \
                     agents share"
                ),
                |s| Some(s.private_mb),
                Target::None,
            ));
        }
    }

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
    out.push_str(&table::render("torchrun", "torchrun / ours", &rows));
    out.push_str("\nWhere the time of a rendezvous goes (medians):\n\n");
    for line in phases {
        let _ = writeln!(out, "- {line}");
    }
    if !restart_phases.is_empty() {
        out.push_str("\nWhere the time of a restart goes (medians):\n\n");
        for line in restart_phases {
            let _ = writeln!(out, "- {line}");
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
