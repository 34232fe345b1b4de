//! The measurements, the same for every launcher: the rendezvous (the last agent's start to
//! every task started), a restart (a task's SIGKILL to every task of the next round started)
//! and the agents' memory while their tasks run; for the rendezvous also the CPU time it
//! took, and (ours) its phases from the agents' logs.

use std::path::Path;
use std::time::Duration;

use nix::sys::signal::Signal;

use super::agents::{Agents, Launcher, Memory};
use super::mark::{self, Mark};
use crate::agent_log;
use crate::child::cpu_ms;
use crate::wall_clock::now_ns;

/// How long agents may take to join, and tasks to start: generous, as 64 agents or torch's
/// imports on two busy cores are slow.
const JOIN_TIMEOUT: Duration = Duration::from_secs(300);
const START_TIMEOUT: Duration = Duration::from_secs(120);

/// One rendezvous as measured.
pub(super) struct Rendezvous {
    /// Milliseconds from the last agent's start to the last task's start.
    pub(super) ms: f64,
    /// Each agent's memory while the tasks run, in start order (the first serves the
    /// rendezvous, but on etcd).
    pub(super) memory: Vec<Memory>,
    /// Ours (either backend), from the agents' logs: milliseconds from the last agent's start to its join
    /// answered, and to every agent holding the round.
    pub(super) phases: Option<(f64, f64)>,
    /// CPU time used from the last agent's start to the last task's start: by the agents
    /// (the last one's start-up included), and by the tasks up to their marks (fork, exec,
    /// the mark) — on a machine of few cores, the floor of the figure.
    pub(super) agent_cpu_ms: f64,
    pub(super) task_cpu_ms: f64,
    /// Meanwhile, by what serves the rendezvous beside the agents (etcd's members); 0 where
    /// nothing does.
    pub(super) server_cpu_ms: f64,
}

/// Starts `nodes` agents, the last once the others wait in the rendezvous, and times it.
pub(super) fn rendezvous(
    launcher: &Launcher,
    nodes: usize,
    dir: &Path,
) -> Result<Rendezvous, String> {
    let mut agents = Agents::new(launcher, nodes, dir.to_path_buf())?;
    agents.start_all_but_last(JOIN_TIMEOUT)?;
    let servers_cpu = || {
        launcher
            .servers()
            .iter()
            .map(|&pid| cpu_ms(pid))
            .sum::<f64>()
    };
    let cpu_before: f64 = agents.pids().into_iter().map(cpu_ms).sum();
    let server_cpu_before = servers_cpu();
    let start = now_ns();
    agents.start_one()?;
    let marks = agents.wait_for_tasks(0, START_TIMEOUT)?;
    let agent_cpu_ms = agents.pids().into_iter().map(cpu_ms).sum::<f64>() - cpu_before;
    let server_cpu_ms = servers_cpu() - server_cpu_before;
    let ms = ms_since(start, &marks);
    // The agents settle into watching their tasks; the tasks sleep.
    std::thread::sleep(Duration::from_millis(500));
    let memory = agents.memory()?;
    let task_cpu_ms = marks.iter().map(|m| cpu_ms(m.pid)).sum();
    let phases = if launcher.is_ours() {
        phases(&agents, start)
    } else {
        None
    };
    // Kept beside the marks and logs, for a look at one run.
    let _ = std::fs::write(dir.join("start_ns"), format!("{start}\n"));
    agents.stop(Duration::from_secs(20));
    Ok(Rendezvous {
        ms,
        memory,
        phases,
        agent_cpu_ms,
        task_cpu_ms,
        server_cpu_ms,
    })
}

/// From our agents' logs: the last agent's join answered, and every agent holding round 1,
/// in milliseconds after `start_ns`.
fn phases(agents: &Agents, start_ns: u128) -> Option<(f64, f64)> {
    let count = agents.pids().len();
    let joined = agent_log::first_ns(&agents.log_text(count - 1), " joined ")?;
    let formed = every_agent(agents, "round formed round=1 ")?;
    Some((ms_after(start_ns, joined), ms_after(start_ns, formed)))
}

/// From our agents' logs: when every agent had logged a line containing `needle` (the last
/// one's first such line), in nanoseconds since the Unix epoch.
fn every_agent(agents: &Agents, needle: &str) -> Option<u128> {
    (0..agents.pids().len())
        .map(|i| agent_log::first_ns(&agents.log_text(i), needle))
        .collect::<Option<Vec<_>>>()?
        .into_iter()
        .max()
}

/// Milliseconds from `start_ns` to `ns`.
fn ms_after(start_ns: u128, ns: u128) -> f64 {
    ns.saturating_sub(start_ns) as f64 / 1e6
}

/// What a run of restarts saw.
pub(super) struct Restarts {
    /// Milliseconds from each kill to every task of the next round started.
    pub(super) ms: Vec<f64>,
    /// Ours, from the agents' logs, for each restart timed: milliseconds from the kill to
    /// every agent having seen its round end, and to every agent holding the next round.
    pub(super) phases: Vec<(f64, f64)>,
    /// Anything unexpected (more tasks started than the round has), to report.
    pub(super) notes: Vec<String>,
    /// Why the kills stopped before the last, if they did (a restart that did not come):
    /// [`ms`](Self::ms) holds the restarts before.
    pub(super) failed: Option<String>,
}

/// Starts a job of `nodes` agents, then `kills` times kills one running task (SIGKILL, a
/// different node each time) and times the restart; an error when the job does not start.
pub(super) fn restarts(
    launcher: &Launcher,
    nodes: usize,
    kills: usize,
    dir: &Path,
) -> Result<Restarts, String> {
    let settle = if launcher.is_ours() {
        Duration::from_millis(500)
    } else {
        Duration::from_secs(3)
    };
    let mut agents = Agents::new(launcher, nodes, dir.to_path_buf())?;
    agents.start_all_but_last(JOIN_TIMEOUT)?;
    agents.start_one()?;
    let marks_dir = agents.marks();
    let mut round = agents.wait_for_tasks(0, START_TIMEOUT)?;
    let mut found = Restarts {
        ms: Vec::new(),
        phases: Vec::new(),
        notes: Vec::new(),
        failed: None,
    };
    // Each restart timed: its kill, and the round its tasks saw.
    let mut timed = Vec::new();
    let mut since = 0;
    for kill in 0..kills {
        std::thread::sleep(settle);
        let started = mark::read(&marks_dir)
            .iter()
            .filter(|m| m.ns > since)
            .count();
        if started > nodes {
            found.notes.push(format!(
                "{}: {started} tasks started in a round of {nodes} (an extra restart)",
                launcher.name()
            ));
        }
        // The rounds' tasks in start order; a different victim each time.
        let victim = &round[kill % nodes];
        if !mark::is_mark_task(victim.pid) {
            found.failed = Some(format!(
                "task {} is gone before kill {} (logs in {})",
                victim.pid,
                kill + 1,
                dir.display()
            ));
            break;
        }
        since = now_ns();
        crate::signal::signal(victim.pid, Signal::SIGKILL);
        round = match agents.wait_for_tasks(since, START_TIMEOUT) {
            Ok(round) => round,
            Err(e) => {
                found.failed = Some(format!("after kill {}: {e}", kill + 1));
                break;
            }
        };
        found.ms.push(ms_since(since, &round));
        timed.push((since, round[0].round.clone()));
        if launcher.is_ours() {
            let rounds: Vec<&str> = round.iter().map(|m| m.round.as_str()).collect();
            if rounds.iter().any(|r| *r != rounds[0]) {
                found.notes.push(format!(
                    "{}: one restart's tasks saw rounds {rounds:?}",
                    launcher.name()
                ));
            }
        }
    }
    if launcher.is_ours() {
        found.phases = restart_phases(&agents, &timed);
    }
    agents.stop(Duration::from_secs(20));
    Ok(found)
}

/// Ours, from the agents' logs: for each restart `timed` (its kill, and the round its tasks
/// saw), milliseconds from the kill to every agent having seen the round before end, and to
/// every agent holding the round; a restart whose log lines are missing is left out.
fn restart_phases(agents: &Agents, timed: &[(u128, String)]) -> Vec<(f64, f64)> {
    timed
        .iter()
        .filter_map(|(kill, round)| {
            let next: u32 = round.parse().ok()?;
            let ended = every_agent(
                agents,
                &format!("round ended round={} ", next.checked_sub(1)?),
            )?;
            let formed = every_agent(agents, &format!("round formed round={next} "))?;
            Some((ms_after(*kill, ended), ms_after(*kill, formed)))
        })
        .collect()
}

/// Milliseconds from `start_ns` to the last of `marks`.
fn ms_since(start_ns: u128, marks: &[Mark]) -> f64 {
    ms_after(
        start_ns,
        marks.iter().map(|m| m.ns).max().unwrap_or(start_ns),
    )
}
