//! `bench-goodput --pss`: what a lost worker costs ParameterServerStrategy training, whole
//! rounds restarted (`--restart-scope round`, torchrun's model and this launcher's before its
//! failure domains) beside the worker restarted in place (`auto`), one after the other in one
//! run; and how long a crash loop runs before the job stops, with the rule and without it.
//!
//! The training (`pss_goodput_train.py`) runs on three network-namespace hosts, three tasks a
//! host: the chief and both parameter servers on host 0, six workers on hosts 1 and 2. A
//! worker is SIGKILLed every [`KILL_EVERY`]; the figures come from the tasks' marks: steps
//! lost (done since the last checkpoint, then redone), the chief's and the parameter servers'
//! restarts, the time from each kill to the killed task serving again, goodput. Hosts are not
//! set aside (`--bad-host-failures 1000`): the kills go round the workers, two hosts', and
//! would set one aside after three, which is the rule working, not the restart measured.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use super::goodput::Goodput;
use super::interrupt;
use super::job::Job;
use super::marks::{Mark, What};
use crate::signal::signal;
use crate::stats::median;
use crate::wall_clock::now_ns;

/// The training script of this part.
const SCRIPT: &str = "xtask/src/bench_goodput/pss_goodput_train.py";
/// How often a worker is killed.
const KILL_EVERY: Duration = Duration::from_secs(30);
/// The job's tasks: 3 hosts × 3.
const TASKS: usize = 9;
/// Steps the chief makes before the first kill (it has checkpointed, every 50).
const STEADY_STEPS: u64 = 60;
/// How long the first round may take to train (nine TensorFlow imports on two cores).
const START_TIMEOUT: Duration = Duration::from_secs(300);

/// The two ways of restarting a lost worker this part compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Scope {
    /// `--restart-scope round`: every task restarts, the chief from its checkpoint.
    Round,
    /// `--restart-scope auto`: the worker alone, in place.
    Task,
}

impl Scope {
    pub(super) const BOTH: [Scope; 2] = [Scope::Round, Scope::Task];

    fn flag(self) -> &'static str {
        match self {
            Scope::Round => "round",
            Scope::Task => "auto",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Scope::Round => "whole round (`--restart-scope round`)",
            Scope::Task => "failure domain (`auto`: the worker in place)",
        }
    }
}

/// One side's figures.
#[derive(Clone, Debug)]
pub(super) struct Figures {
    scope: Scope,
    command: String,
    kills: usize,
    /// From each kill to the killed task's `serving` mark, in milliseconds.
    back_ms: Vec<f64>,
    chief_restarts: usize,
    ps_restarts: usize,
    steps_redone: u64,
    goodput: Option<Goodput>,
}

/// Measures `scope` for `length`, its files under `dir`.
pub(super) fn measure(
    scope: Scope,
    python: &Path,
    length: Duration,
    dir: &Path,
) -> Result<Figures, String> {
    let script = crate::workspace::root().join(SCRIPT).display().to_string();
    let flags = [
        "--nodes",
        "3",
        "--tasks-per-node",
        "3",
        "--layout",
        "chief=1,ps=2",
        "--max-restarts",
        "1000",
        "--max-task-restarts",
        "1000",
        "--restart-scope",
        scope.flag(),
        // The kills are the bench's, not a bad host's: no host is set aside for them.
        "--bad-host-failures",
        "1000",
    ];
    let command = [python.display().to_string(), script];
    let mut job = Job::running(
        &format!("pss-{}", scope.flag()),
        &flags,
        &command,
        dir.to_path_buf(),
    )?;
    job.start_all()?;
    eprintln!("xtask: pss {}: waiting for steady training", scope.flag());
    job.wait_steady(TASKS, STEADY_STEPS, START_TIMEOUT)?;
    let start_ns = now_ns();
    let started = Instant::now();
    let mut kills: Vec<(String, u128)> = Vec::new();
    let mut turn = 0usize;
    while started.elapsed() + KILL_EVERY <= length {
        interrupt::sleep(KILL_EVERY)?;
        let marks = job.marks();
        let Some((task, pid)) = worker_to_kill(&marks, turn) else {
            continue;
        };
        turn += 1;
        signal(pid, Signal::SIGKILL);
        eprintln!("xtask: pss {}: killed {task} ({pid})", scope.flag());
        kills.push((task, now_ns()));
    }
    interrupt::sleep(length.saturating_sub(started.elapsed()))?;
    let end_ns = now_ns();
    let marks = job.marks();
    let command = job.command_line();
    drop(job);
    let starts = |job: &str| {
        marks
            .iter()
            .filter(|m| m.what == What::Start && m.ns > start_ns && m.task.contains(job))
            .count()
    };
    Ok(Figures {
        scope,
        command,
        back_ms: kills
            .iter()
            .filter_map(|(task, at)| back_ms(&marks, task, *at))
            .collect(),
        kills: kills.len(),
        chief_restarts: starts("/chief:"),
        ps_restarts: starts("/ps:"),
        steps_redone: steps_redone(&marks),
        goodput: Goodput::of(&marks, start_ns, end_ns),
    })
}

/// The worker to kill on turn `turn` (round robin over the newest round's workers), and its
/// latest process's pid.
fn worker_to_kill(marks: &[Mark], turn: usize) -> Option<(String, u32)> {
    let round = marks.iter().map(|m| m.round).max()?;
    let mut workers: Vec<(String, u64, u128)> = Vec::new();
    for m in marks
        .iter()
        .filter(|m| m.round == round && m.what == What::Start && m.task.contains("/worker:"))
    {
        match workers.iter_mut().find(|(t, _, _)| *t == m.task) {
            Some(w) if w.2 < m.ns => *w = (m.task.clone(), m.value, m.ns),
            Some(_) => {}
            None => workers.push((m.task.clone(), m.value, m.ns)),
        }
    }
    workers.sort();
    let (task, pid, _) = workers.get(turn % workers.len().max(1))?.clone();
    Some((task, u32::try_from(pid).ok()?))
}

/// From a kill of `task` at `at` to the first `serving` mark of that task after it.
fn back_ms(marks: &[Mark], task: &str, at: u128) -> Option<f64> {
    marks
        .iter()
        .filter(|m| m.what == What::Serving && m.task == task && m.ns > at)
        .map(|m| (m.ns - at) as f64 / 1e6)
        .reduce(f64::min)
}

/// Steps done and then lost with a round: for each round after the first, the chief's last
/// step of the round before less what the next one restored.
fn steps_redone(marks: &[Mark]) -> u64 {
    let chief = |round: u32, what: What| {
        marks
            .iter()
            .filter(|m| m.round == round && m.what == what && m.task.ends_with("/chief:0"))
            .map(|m| m.value)
            .max()
    };
    let last = marks.iter().map(|m| m.round).max().unwrap_or(0);
    (2..=last)
        .filter_map(|r| Some(chief(r - 1, What::Step)?.saturating_sub(chief(r, What::Restored)?)))
        .sum()
}

/// How long a crash loop runs before the job stops: three hosts whose tasks all fail the same
/// way half a second after their start, `--max-restarts 3`; with the rule (the default) and
/// without it (`--allow-crash-loops`).
pub(super) fn crash_loop_seconds(allow: bool, dir: &Path) -> Result<(f64, String), String> {
    let mut flags = vec![
        "--nodes",
        "3",
        "--max-restarts",
        "3",
        "--rdzv-last-call",
        "1s",
    ];
    if allow {
        flags.push("--allow-crash-loops");
    }
    let command = [
        "sh",
        "-c",
        "sleep 0.5; echo 'ValueError: bad input' >&2; exit 1",
    ]
    .map(str::to_owned);
    let id = if allow {
        "loop-allowed"
    } else {
        "loop-stopped"
    };
    let mut job = Job::running(id, &flags, &command, dir.to_path_buf())?;
    let started = Instant::now();
    job.start_all()?;
    if !job.wait_all(Duration::from_secs(300))? {
        return Err(format!("the crash loop ({id}) did not stop within 300 s"));
    }
    Ok((started.elapsed().as_secs_f64(), job.command_line()))
}

/// The report's section: the two sides, then the crash loop.
pub(super) fn render(sides: &[Figures], loops: &[(bool, f64, String)], length: Duration) -> String {
    let mut out = String::from(
        "## ParameterServerStrategy under failures: the worker in place, or the round\n\n",
    );
    let _ = writeln!(
        out,
        "ParameterServerStrategy (`pss_goodput_train.py`: a `ClusterCoordinator` loop, a \
         checkpoint every 50 steps) on 3 network-namespace hosts, 3 tasks each (chief and both \
         parameter servers on host 0, 6 workers), a worker SIGKILLed every {} s for {} min, \
         TensorFlow 2.21, warm interpreters:\n",
        KILL_EVERY.as_secs(),
        length.as_secs() / 60
    );
    let _ = writeln!(
        out,
        "| restart | kills | chief restarts | ps restarts | steps lost | kill to serving again (median) | goodput |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|");
    for side in sides {
        let back = if side.back_ms.is_empty() {
            "—".to_owned()
        } else {
            format!("{:.1} s", median(side.back_ms.clone()) / 1000.0)
        };
        let goodput = side
            .goodput
            .map_or("—".to_owned(), |g| format!("{:.1}%", 100.0 * g.ratio));
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {back} | {goodput} |",
            side.scope.label(),
            side.kills,
            side.chief_restarts,
            side.ps_restarts,
            side.steps_redone
        );
    }
    let _ = writeln!(out, "\nCommands:\n");
    for side in sides {
        let _ = writeln!(out, "- `{}`", side.command);
    }
    let _ = writeln!(
        out,
        "\nA crash loop (every task of 3 hosts fails the same way 0.5 s after its start, \
         `--max-restarts 3`), wall time until every agent exited:\n"
    );
    let _ = writeln!(out, "| crash-loop rule | until the job stopped |");
    let _ = writeln!(out, "|---|---|");
    for (allow, seconds, _) in loops {
        let rule = if *allow {
            "off (`--allow-crash-loops`): every restart spent"
        } else {
            "on (the default): stopped at the second failure"
        };
        let _ = writeln!(out, "| {rule} | {seconds:.1} s |");
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
        let marks = [
            mark("h0/chief:0", 1, What::Restored, 1.0, 0),
            mark("h0/chief:0", 1, What::Step, 5.0, 70),
            mark("h1/worker:0", 1, What::Start, 1.0, 100),
            mark("h1/worker:1", 1, What::Start, 1.0, 101),
            mark("h1/worker:1", 1, What::Start, 8.0, 102),
            mark("h1/worker:1", 1, What::Serving, 9.5, 0),
            mark("h0/chief:0", 2, What::Restored, 12.0, 50),
            mark("h1/worker:0", 2, What::Start, 11.0, 200),
        ];
        assert_eq!(steps_redone(&marks), 20);
        assert_eq!(back_ms(&marks, "h1/worker:1", 7_000_000_000), Some(2500.0));
        assert_eq!(
            worker_to_kill(&marks[..6], 1),
            Some(("h1/worker:1".to_owned(), 102))
        );
        assert_eq!(
            worker_to_kill(&marks, 0),
            Some(("h1/worker:0".to_owned(), 200))
        );
    }
}
