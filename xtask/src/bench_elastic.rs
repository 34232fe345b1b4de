//! `cargo xtask bench-elastic`: the elastic launch (`tfcluster run --rdzv`) beside torchrun's
//! c10d rendezvous, one after the other in one run on this machine, on loopback; prints the
//! figures and writes them to their section of `docs/benchmarks.md`. Not part of `test`.
//!
//! Both launchers run the same task (`mark_task.rs`), one per agent, with
//! min = max agents. Measured (issue 18's "Speed"): the rendezvous, from the last agent's
//! start to every task started, with 8 and 64 agents; a restart, from a task's SIGKILL to
//! every task of the next round started, with 8 agents (`--grace 0s`; torchrun's
//! `--monitor-interval 0.1`); and each agent's resident memory while its tasks run.

mod agents;
mod logs;
mod mark;
mod measure;
mod signal;
mod torch;

use std::fmt::Write as _;
use std::process::Command;

use crate::child::target_dir;
use crate::stats::{Summary, median};
use crate::table::{self, Row, Spread, Target};
use crate::{docs_section, machine, workspace};
use agents::{Launcher, MAX_RESTARTS};

/// Rendezvous sizes and how often each is measured: ours, torchrun's.
const RENDEZVOUS: [(usize, usize, usize); 2] = [(8, 7, 3), (64, 5, 1)];
/// The restart measurement's size, and its jobs (each killing a task `MAX_RESTARTS` times):
/// ours, torchrun's.
const RESTART_NODES: usize = 8;
const RESTART_JOBS: (usize, usize) = (2, 1);
/// Issue 18's targets.
const RENDEZVOUS_64_MS: f64 = 50.0;
const RESTART_MS: f64 = 300.0;
const AGENT_MB: f64 = 10.0;
/// torchrun's 64 agents run only when their memory, projected from its 8, fits in this
/// share of the memory available.
const TORCH_MEMORY_SHARE: f64 = 0.5;

/// The figures of one launcher; `None` where not measured.
#[derive(Default)]
struct Side {
    /// By rendezvous size, as [`RENDEZVOUS`].
    rendezvous: Vec<Option<Sized>>,
    restart: Option<Summary>,
}

/// One rendezvous size's figures over its runs.
struct Sized {
    times: Summary,
    /// The most resident memory (VmRSS) of an agent that only joins, in MB.
    joiner_mb: f64,
    /// The most resident memory of the agent that also serves the rendezvous (torchrun's:
    /// hosts the c10d store), in MB.
    serving_mb: f64,
    /// The most private memory (RssAnon) of any agent, in MB.
    private_mb: f64,
    /// Medians: the last agent's join answered and every agent holding the round (ours).
    phases: Option<(f64, f64)>,
    /// Medians: CPU time of the agents and of the tasks during the rendezvous.
    cpu_ms: (f64, f64),
}

impl Sized {
    fn of(runs: &[measure::Rendezvous]) -> Option<Self> {
        let times = Summary::of(&runs.iter().map(|r| r.ms).collect::<Vec<_>>())?;
        let most = |values: &mut dyn Iterator<Item = f64>| values.fold(0.0, f64::max);
        let phases: Vec<(f64, f64)> = runs.iter().filter_map(|r| r.phases).collect();
        Some(Self {
            times,
            joiner_mb: most(
                &mut runs
                    .iter()
                    .flat_map(|r| r.memory[1..].iter().map(|m| m.resident_mb)),
            ),
            serving_mb: most(&mut runs.iter().map(|r| r.memory[0].resident_mb)),
            private_mb: most(
                &mut runs
                    .iter()
                    .flat_map(|r| r.memory.iter().map(|m| m.private_mb)),
            ),
            phases: (!phases.is_empty()).then(|| {
                (
                    median(phases.iter().map(|p| p.0).collect()),
                    median(phases.iter().map(|p| p.1).collect()),
                )
            }),
            cpu_ms: (
                median(runs.iter().map(|r| r.agent_cpu_ms).collect()),
                median(runs.iter().map(|r| r.task_cpu_ms).collect()),
            ),
        })
    }
}

pub(crate) fn run() -> Result<(), String> {
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
    let torch = torch::ensure();
    if let Err(why) = &torch {
        eprintln!("xtask: torch is not measured: {why}");
    }
    let dir = target_dir().join("bench-elastic");
    let mut notes = Vec::new();

    eprintln!("xtask: 1/4 our rendezvous");
    let ours = measure_side(&Launcher::Ours, &dir, &mut notes, |_, _| Ok(()))?;

    let theirs = match &torch {
        Ok(torch) => {
            eprintln!("xtask: 3/4 torchrun's rendezvous");
            let launcher = Launcher::Torchrun(torch.torchrun.clone());
            let fits = |nodes: usize, side: &Side| -> Result<(), String> {
                let (Some(Some(first)), Some(available)) =
                    (side.rendezvous.first(), available_mb())
                else {
                    return Err(format!(
                        "torchrun with {nodes} agents was not run: its memory with 8 is unknown"
                    ));
                };
                let rss = first.joiner_mb.max(first.serving_mb);
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
            Some(measure_side(&launcher, &dir, &mut notes, fits)?)
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
        &format!("{}; {torch_line}", machine::describe()),
        &load_before,
        &load_after,
        &notes,
    );
    print!("{report}");
    let path = workspace::root().join("docs/benchmarks.md");
    docs_section::write(&path, "bench-elastic", &report)?;
    eprintln!("xtask: wrote its section of {}", path.display());
    Ok(())
}

/// Every measurement of one launcher; `larger_fits` says whether a rendezvous larger than
/// the first may run, given the figures so far, or why not.
fn measure_side(
    launcher: &Launcher,
    dir: &std::path::Path,
    notes: &mut Vec<String>,
    larger_fits: impl Fn(usize, &Side) -> Result<(), String>,
) -> Result<Side, String> {
    let name = launcher.name();
    let ours = matches!(launcher, Launcher::Ours);
    let mut side = Side::default();
    for (i, &(nodes, our_runs, their_runs)) in RENDEZVOUS.iter().enumerate() {
        let allowed = if i == 0 {
            Ok(())
        } else {
            larger_fits(nodes, &side)
        };
        if let Err(why) = allowed {
            notes.push(why);
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
                        "xtask: {name}, {nodes} agents: {:.1} ms (CPU: agents {:.0} ms, tasks {:.0} ms), agents {:.1}-{:.1} MB",
                        one.ms,
                        one.agent_cpu_ms,
                        one.task_cpu_ms,
                        resident.clone().fold(f64::INFINITY, f64::min),
                        resident.fold(0.0, f64::max)
                    );
                    found.push(one);
                }
                Err(e) if !ours => {
                    notes.push(format!("torchrun with {nodes} agents failed: {e}"));
                    break;
                }
                Err(e) => return Err(e),
            }
        }
        side.rendezvous.push(Sized::of(&found));
    }

    eprintln!("xtask: {}/4 {name}'s restarts", if ours { 2 } else { 4 });
    let jobs = if ours { RESTART_JOBS.0 } else { RESTART_JOBS.1 };
    let mut times = Vec::new();
    for job in 0..jobs {
        let at = dir.join(format!("{name}-restart{RESTART_NODES}-{job}"));
        match measure::restarts(launcher, RESTART_NODES, MAX_RESTARTS as usize, &at) {
            Ok(found) => {
                eprintln!("xtask: {name} restarts: {:?} ms", found.ms);
                times.extend(found.ms);
                notes.extend(found.notes);
            }
            Err(e) if !ours => {
                notes.push(format!("torchrun's restarts failed: {e}"));
                break;
            }
            Err(e) => return Err(e),
        }
    }
    side.restart = Summary::of(&times);
    Ok(side)
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
    ours: &Side,
    theirs: Option<&Side>,
    machine: &str,
    load_before: &str,
    load_after: &str,
    notes: &[String],
) -> String {
    let mut rows = Vec::new();
    let mut phases = Vec::new();
    for (i, &(nodes, ..)) in RENDEZVOUS.iter().enumerate() {
        let Some(our) = sized(Some(ours), i) else {
            continue;
        };
        let their = sized(theirs, i);
        let target = if nodes == 64 {
            Target::AtMost(RENDEZVOUS_64_MS)
        } else {
            Target::None
        };
        rows.push(timed_row(
            &format!("rendezvous, {nodes} agents: the last agent's start to every task started"),
            &our.times,
            their.map(|t| &t.times),
            target,
        ));
        phases.push(where_it_goes(nodes, our, their));
    }
    if let Some(our) = &ours.restart {
        let their = theirs.and_then(|t| t.restart);
        rows.push(timed_row(
            &format!(
                "restart, {RESTART_NODES} agents: a task's SIGKILL to every task of the next round started"
            ),
            our,
            their.as_ref(),
            Target::AtMost(RESTART_MS),
        ));
    }
    for (i, &(nodes, ..)) in RENDEZVOUS.iter().enumerate() {
        let Some(our) = sized(Some(ours), i) else {
            continue;
        };
        let their = sized(theirs, i);
        let memory = |what: String, of: fn(&Sized) -> f64, target: Target| {
            let row = Row::memory(&what, their.map_or(0.0, of), of(our), target);
            if their.is_some() {
                row
            } else {
                row.without_peer()
            }
        };
        rows.push(memory(
            format!(
                "an agent's resident memory (VmRSS) while its task runs, {nodes} agents: the most \
                 of the agents that only join"
            ),
            |s| s.joiner_mb,
            Target::AtMost(AGENT_MB),
        ));
        rows.push(memory(
            format!(
                "same, {nodes} agents: the agent that also serves the rendezvous (torchrun's: \
                 hosts the c10d store)"
            ),
            |s| s.serving_mb,
            Target::AtMost(AGENT_MB),
        ));
        rows.push(memory(
            format!(
                "same, {nodes} agents: the most private memory (RssAnon) of any agent; the rest \
                 of VmRSS is the binary's and libraries' pages, which a host's agents share"
            ),
            |s| s.private_mb,
            Target::None,
        ));
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
        "Command: `cargo xtask bench-elastic` (release build; ours, then torchrun, one after \
         the other in one run; all on loopback). `tfcluster -v run --rdzv 127.0.0.1:PORT --nodes N \
         --tasks-per-node 1 --grace 0s --max-restarts {MAX_RESTARTS}` beside `torchrun --nnodes \
         N:N --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:PORT \
         --monitor-interval 0.1 --max-restarts {MAX_RESTARTS} --no-python`; both run the same \
         task, a small Rust program (std only, `rustc -O`) that writes its start time (the wall \
         clock, shared by all processes) to a file and sleeps; `-v` logs what our agents do, read here for the joins \
         and the phases below. With min = max no last call is waited for. \
         Rendezvous: the first agent (which serves the rendezvous) is started, then the others \
         but one; once each has joined, the clock starts as the last agent process is spawned \
         and stops at the last task's start. Restart: one task is killed (SIGKILL, a different \
         host each time); the clock runs from the kill to the last start of the next round's \
         tasks. Medians (least–most, n runs); the ratio is torchrun's figure over ours. All \
         agents and tasks share this machine's cores, and so do its other users: absolute \
         figures move with its load, compare ratios.\n"
    );
    out.push_str(&table::render("torchrun", "torchrun / ours", &rows));
    out.push_str("\nWhere the time of a rendezvous goes (medians):\n\n");
    for line in phases {
        let _ = writeln!(out, "- {line}");
    }
    if !notes.is_empty() {
        out.push_str("\nNotes:\n\n");
        for note in notes {
            let _ = writeln!(out, "- {note}");
        }
    }
    out
}

/// The phases and CPU time of a rendezvous of `nodes` agents, as a sentence.
fn where_it_goes(nodes: usize, ours: &Sized, theirs: Option<&Sized>) -> String {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let total = ours.times.median;
    let (agents, tasks) = ours.cpu_ms;
    let mut line = format!("{nodes} agents, ours: ");
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
         {tasks:.0} ms in the tasks (fork, exec, writing the mark): on {cores} cores at least \
         {:.0} ms, even with nothing else running.",
        (agents + tasks) / cores as f64
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
