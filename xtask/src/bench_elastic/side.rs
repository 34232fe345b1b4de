//! Every measurement of one launcher: its rendezvous and its restarts at each size, a size
//! larger than the first only when it fits (torchrun's memory), a failure kept as a note.

use std::path::Path;

use crate::stats::Summary;

use super::agents::{Launcher, MAX_RESTARTS};
use super::figures::{Restarted, Side, Sized, medians};
use super::{RENDEZVOUS, RESTARTS, TORCH_MEMORY_SHARE, measure};

/// Every measurement of one launcher; `larger_fits` says whether a size larger than the
/// first may run, given the figures so far, or why not. A measurement that fails is a note
/// (and its size's later runs are not made), so that one failure does not lose the run.
pub(super) fn measure_side(
    launcher: &Launcher,
    dir: &Path,
    notes: &mut Vec<String>,
    larger_fits: impl Fn(usize, &Side) -> Result<(), String>,
) -> Side {
    let name = launcher.name();
    let ours = launcher.is_ours();
    let mut side = Side::default();
    let mut gate = Gate {
        decided: Vec::new(),
        larger_fits,
    };

    eprintln!("xtask: {name}'s rendezvous");
    for (i, &(nodes, our_runs, their_runs)) in RENDEZVOUS.iter().enumerate() {
        if !gate.allows(i, nodes, &side, notes) {
            side.rendezvous.push(None);
            continue;
        }
        let runs = if ours { our_runs } else { their_runs };
        let found = rendezvous_runs(launcher, nodes, runs, dir, notes);
        side.rendezvous
            .push(Sized::of(&found, launcher.first_serves()));
    }

    eprintln!("xtask: {name}'s restarts");
    for (i, &(nodes, our_jobs, their_jobs)) in RESTARTS.iter().enumerate() {
        if !gate.allows(i, nodes, &side, notes) {
            side.restart.push(None);
            continue;
        }
        let jobs = if ours { our_jobs } else { their_jobs };
        side.restart
            .push(restart_jobs(launcher, nodes, jobs, dir, notes));
    }
    side
}

/// Whether each size may run, decided once for each size (the rendezvous's answer holds for
/// the restarts); a reason why not becomes a note.
struct Gate<F> {
    /// Sizes decided so far, and whether each may run.
    decided: Vec<(usize, bool)>,
    /// Whether a size larger than the first may run, given the figures so far, or why not.
    larger_fits: F,
}

impl<F: Fn(usize, &Side) -> Result<(), String>> Gate<F> {
    /// Whether size `nodes` (the `i`th) may run.
    fn allows(&mut self, i: usize, nodes: usize, side: &Side, notes: &mut Vec<String>) -> bool {
        if let Some(&(_, verdict)) = self.decided.iter().find(|(n, _)| *n == nodes) {
            return verdict;
        }
        let fits = if i == 0 {
            Ok(())
        } else {
            (self.larger_fits)(nodes, side)
        };
        let verdict = fits.map_err(|why| notes.push(why)).is_ok();
        self.decided.push((nodes, verdict));
        verdict
    }
}

/// `runs` rendezvous of `nodes` agents, each printed as it ends; the first failure is a note
/// and ends them.
fn rendezvous_runs(
    launcher: &Launcher,
    nodes: usize,
    runs: usize,
    dir: &Path,
    notes: &mut Vec<String>,
) -> Vec<measure::Rendezvous> {
    let name = launcher.name();
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
    found
}

/// `jobs` jobs of `nodes` agents, each killing a task [`MAX_RESTARTS`] times, and the figures
/// of their restarts; the first failed job is a note and ends them.
fn restart_jobs(
    launcher: &Launcher,
    nodes: usize,
    jobs: usize,
    dir: &Path,
    notes: &mut Vec<String>,
) -> Option<Restarted> {
    let name = launcher.name();
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
    Summary::of(&times).map(|times| Restarted {
        times,
        phases: medians(&phases),
    })
}

/// Whether torchrun's `nodes` agents may run: when their memory, projected from its 8 (the
/// first rendezvous size of `side`), fits in [`TORCH_MEMORY_SHARE`] of the memory available.
pub(super) fn torchrun_fits(nodes: usize, side: &Side) -> Result<(), String> {
    let (Some(Some(first)), Some(available)) = (side.rendezvous.first(), available_mb()) else {
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
            "torchrun with {nodes} agents was not run: at {rss:.0} MB an agent they would take \
             {:.1} GB, over half the {:.1} GB available on this machine then (2 cores, shared)",
            need / 1024.0,
            available / 1024.0
        ))
    }
}

/// The memory available now (MemAvailable), in MB.
fn available_mb() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}
