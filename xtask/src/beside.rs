//! The checks and builds the test command runs beside its tests, at the CPU's idle priority.
//!
//! The checks of each feature set, the nightly docs, the packaged copies, the static musl
//! binary and the wheel compile for minutes and share nothing with the tests' build. Here
//! they run in two threads whose processes the kernel gives the CPU only when no other
//! process wants it (`SCHED_IDLE`, inherited by every process started from the thread), so
//! they take the time the tests leave idle rather than slowing the tests: one thread makes
//! the builds, the other the checks and then the package suite, each in a target directory
//! of its own ([`Beside`]), so no cargo waits on another's lock. Two, not one, because one
//! cargo run leaves a core idle wherever a crate waits for the one before it, most of all
//! once the tests are done and only these run. A suite that needs one of the builds (the
//! wheel, the static binary) runs its own build of it after, and cargo finds the work done,
//! or waits for that build alone. How much they gain is how much idle time the tests leave:
//! CONTRIBUTING.md has the figures.
//!
//! Idle priority is for work nothing waits on. On a machine whose cores other work keeps
//! busy, work under `SCHED_IDLE` gets almost no CPU, so where the tests do wait (a suite's
//! build in a directory a step is building in, then the end of the run) that step is
//! hurried ([`wait_for`], [`Running::finish`]): it, and every process it started, run at
//! normal priority from then on.

use std::cell::Cell;
use std::path::Path;
use std::process::Command;
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::tally::{self, Suite};
use crate::workspace::{self, Beside};
use crate::{features, guide_rust, package, public_api, python};

/// A check or a build: `Err` says what failed.
type Step = fn() -> Result<(), String>;

/// The builds the suites after the workspace's tests need, in the order they need them,
/// each with the directory it builds in.
const BUILDS: &[(&str, Beside, Step)] = &[
    (
        "build: the wheel, its CLI static for musl (the image's too)",
        Beside::Cli,
        python::build_ahead,
    ),
    (
        "build: the tests without default features",
        Beside::WithoutFeatures,
        features::build_tests,
    ),
];

/// The checks, which the package suite follows in their thread (its check takes the
/// dependencies `cargo doc` compiled).
const CHECKS: &[(&str, Beside, Step)] = &[
    (
        "check: clippy, each crate's feature sets",
        Beside::Checks,
        features::check,
    ),
    (
        "check: the Rust guide page's crate alone",
        Beside::Checks,
        guide_rust::clippy_alone,
    ),
    // An API change without its listing regenerated: the review would not show it.
    (
        "check: public-API listings",
        Beside::Checks,
        public_api_listings,
    ),
    // Broken intra-doc links and bad doc markup fail like any other warning.
    (
        "check: cargo doc, as docs.rs builds too",
        Beside::Checks,
        docs,
    ),
];

/// Which directory each thread's step builds in, and which the tests wait for.
static PRIORITIES: Mutex<Priorities> = Mutex::new(Priorities {
    steps: Vec::new(),
    waited: Vec::new(),
    finishing: false,
});

struct Priorities {
    /// Each thread beside (its id in `/proc/self/task`) and the directory its step builds in.
    steps: Vec<(String, Beside)>,
    /// The directories the tests have waited for: a step building there runs at normal
    /// priority.
    waited: Vec<Beside>,
    /// The tests are done and wait for everything.
    finishing: bool,
}

impl Priorities {
    fn hurries(&self, dir: Beside) -> bool {
        self.finishing || self.waited.contains(&dir)
    }
}

thread_local! {
    /// Whether this thread is one of those beside the tests.
    static BESIDE: Cell<bool> = const { Cell::new(false) };
}

/// What ran beside: each step's name, wall time and outcome, and the package suite.
pub(crate) struct Done {
    pub(crate) steps: Outcomes,
    pub(crate) package: Suite,
}

/// Each step's name, wall time and outcome.
type Outcomes = Vec<(&'static str, Duration, Result<(), String>)>;

/// The threads running [`BUILDS`], and [`CHECKS`] with the package suite.
pub(crate) struct Running {
    builds: JoinHandle<Outcomes>,
    checks: JoinHandle<(Outcomes, Suite)>,
}

/// Starts the steps in two threads at idle priority.
pub(crate) fn start() -> Running {
    Running {
        builds: std::thread::spawn(|| {
            let steps = run_steps(BUILDS);
            retire();
            steps
        }),
        checks: std::thread::spawn(|| {
            let steps = run_steps(CHECKS);
            // At the last check's priority, in its directory.
            let started = Instant::now();
            let package = package::suite();
            eprintln!(
                "xtask: beside: the package suite took {:.1?}",
                started.elapsed()
            );
            retire();
            (steps, package)
        }),
    }
}

/// Runs `steps` one after another, each at idle priority unless the tests wait for it.
fn run_steps(steps: &'static [(&'static str, Beside, Step)]) -> Outcomes {
    BESIDE.set(true);
    steps
        .iter()
        .map(|(name, dir, step)| {
            if let Err(e) = starting(*dir) {
                eprintln!("xtask: beside: {e}; {name} runs at normal priority");
            }
            let started = Instant::now();
            let outcome = step();
            if let Err(e) = &outcome {
                eprintln!("xtask: beside: {name} failed: {e}");
            }
            (*name, started.elapsed(), outcome)
        })
        .collect()
}

/// Notes that the calling thread's next step builds in `dir`, and puts the thread at idle
/// priority unless the tests have waited for `dir` (or are done): what it starts inherits it.
fn starting(dir: Beside) -> Result<(), String> {
    let me = this_thread()?;
    let mut priorities = lock();
    let policy = if priorities.hurries(dir) {
        "--other"
    } else {
        "--idle"
    };
    priorities.steps.retain(|(thread, _)| *thread != me);
    priorities.steps.push((me.clone(), dir));
    // Under the lock: a wait for `dir` now either sees this step or is seen by it.
    chrt(policy, &[], &me)
}

/// Notes that the calling thread has no step left (a wait hurries it no more).
fn retire() {
    if let Ok(me) = this_thread() {
        lock().steps.retain(|(thread, _)| *thread != me);
    }
}

/// Called where the tests are about to wait for what builds in `dir` (cargo's lock of the
/// directory): the step building there, and every step there after, run at normal priority.
/// Nothing on the threads beside.
pub(crate) fn wait_for(dir: Beside) {
    if BESIDE.get() {
        return;
    }
    let mut priorities = lock();
    if !priorities.waited.contains(&dir) {
        priorities.waited.push(dir);
    }
    hurry(&priorities, |step| step == dir);
}

/// Puts each thread beside whose step builds where `hurried`, and every process it started,
/// at normal priority.
fn hurry(priorities: &Priorities, hurried: impl Fn(Beside) -> bool) {
    for (thread, dir) in &priorities.steps {
        if hurried(*dir) {
            eprintln!(
                "xtask: beside: the tests wait for {dir:?}: its step runs at normal priority"
            );
            if let Err(e) = to_normal(thread) {
                eprintln!("xtask: beside: {e}");
            }
        }
    }
}

fn lock() -> std::sync::MutexGuard<'static, Priorities> {
    // A thread that panicked holding it left plain data: use it.
    PRIORITIES.lock().unwrap_or_else(|e| e.into_inner())
}

impl Running {
    /// Waits for every step, at normal priority from now on.
    pub(crate) fn finish(self) -> Done {
        {
            let mut priorities = lock();
            priorities.finishing = true;
            hurry(&priorities, |_| true);
        }
        let panicked = |what: &'static str| {
            vec![(what, Duration::ZERO, Err("its thread panicked".to_owned()))]
        };
        let mut steps = self
            .builds
            .join()
            .unwrap_or_else(|_| panicked("the builds beside the tests"));
        let (checks, package) = self.checks.join().unwrap_or_else(|_| {
            (
                panicked("the checks beside the tests"),
                tally::broken_suite(package::SUITE, "its thread panicked".to_owned()),
            )
        });
        steps.extend(checks);
        Done { steps, package }
    }
}

fn public_api_listings() -> Result<(), String> {
    public_api::run(true)
}

fn docs() -> Result<(), String> {
    workspace::run(
        Beside::Checks
            .cargo()
            .args(["doc", "--workspace", "--no-deps", "--all-features"])
            .env("RUSTDOCFLAGS", "-D warnings"),
    )?;
    features::docs_rs()
}

/// The calling thread's id, as `/proc/self/task` names it.
fn this_thread() -> Result<String, String> {
    // `/proc/thread-self` links to `PID/task/TID`.
    let me = std::fs::read_link("/proc/thread-self")
        .map_err(|e| format!("cannot read /proc/thread-self: {e}"))?;
    me.file_name()
        .map(|tid| tid.to_string_lossy().into_owned())
        .ok_or_else(|| format!("/proc/thread-self is {}, not PID/task/TID", me.display()))
}

/// Sets the scheduling `policy` (`--idle`, `--other`) of `pid` with `chrt` (util-linux's,
/// which the test command's installs ensure); with `--all-tasks`, of every thread of it.
fn chrt(policy: &str, flags: &[&str], pid: &str) -> Result<(), String> {
    workspace::stdout(
        Command::new("chrt")
            .args(flags)
            .args([policy, "--pid", "0", pid]),
    )
    .map(drop)
}

/// Puts this process's thread `tid`, and every process it started and theirs, under
/// `SCHED_OTHER`. The thread first and each process before its children are read, so a process
/// started meanwhile is started normal or read; twice, for a thread started between a
/// process's threads being listed and set.
fn to_normal(tid: &str) -> Result<(), String> {
    chrt("--other", &[], tid)?;
    for _ in 0..2 {
        let mut pending = children(&Path::new("/proc/self/task").join(tid));
        while let Some(pid) = pending.pop() {
            // It may have exited since it was listed: nothing to do then.
            if chrt("--other", &["--all-tasks"], &pid).is_err() {
                continue;
            }
            let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
                continue;
            };
            for task in tasks.flatten() {
                pending.extend(children(&task.path()));
            }
        }
    }
    Ok(())
}

/// The processes a thread (`/proc/PID/task/TID`) started that are still its children.
fn children(task: &Path) -> Vec<String> {
    std::fs::read_to_string(task.join("children"))
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Child, Stdio};
    use std::sync::mpsc;

    /// The scheduling policy of process `pid` (field 41 of its stat): 0 normal, 5 idle.
    fn policy(pid: u32) -> u32 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let after_name = &stat[stat.rfind(')').unwrap() + 1..];
        after_name
            .split_whitespace()
            .nth(38)
            .unwrap()
            .parse()
            .unwrap()
    }

    #[test]
    fn a_step_the_tests_wait_for_runs_at_normal_priority_with_what_it_started() {
        let (started, step) = mpsc::channel::<Child>();
        let (waited, done) = mpsc::channel::<()>();
        // A thread beside whose step builds in the CLI's directory and started a shell that
        // started a child of its own: both inherit the step's idle priority.
        let beside = std::thread::spawn(move || {
            BESIDE.set(true);
            starting(Beside::Cli).unwrap();
            let shell = Command::new("sh")
                .args(["-c", "sleep 60 & echo $!; wait"])
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            started.send(shell).unwrap();
            done.recv().unwrap();
        });
        let mut shell = step.recv().unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(shell.stdout.as_mut().unwrap()),
            &mut line,
        )
        .unwrap();
        let sleep: u32 = line.trim().parse().unwrap();
        assert_eq!((policy(shell.id()), policy(sleep)), (5, 5));

        // Another directory's wait leaves it idle; its own puts both back to normal.
        wait_for(Beside::WithoutFeatures);
        assert_eq!((policy(shell.id()), policy(sleep)), (5, 5));
        wait_for(Beside::Cli);
        assert_eq!((policy(shell.id()), policy(sleep)), (0, 0));

        let _ = Command::new("kill").arg(sleep.to_string()).status();
        shell.wait().unwrap();
        waited.send(()).unwrap();
        beside.join().unwrap();
    }
}
