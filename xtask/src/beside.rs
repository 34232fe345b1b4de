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

use std::process::Command;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::tally::{self, Suite};
use crate::workspace::{self, Beside};
use crate::{features, guide_rust, package, public_api, python};

/// A check or a build: `Err` says what failed.
type Step = fn() -> Result<(), String>;

/// The builds the suites after the workspace's tests need, in the order they need them.
const BUILDS: &[(&str, Step)] = &[
    (
        "build: the wheel, its CLI static for musl (the image's too)",
        python::build_ahead,
    ),
    (
        "build: the tests without default features",
        features::build_tests,
    ),
];

/// The checks, which the package suite follows in their thread (its check takes the
/// dependencies `cargo doc` compiled).
const CHECKS: &[(&str, Step)] = &[
    ("check: clippy, each crate's feature sets", features::check),
    (
        "check: the Rust guide page's crate alone",
        guide_rust::clippy_alone,
    ),
    // An API change without its listing regenerated: the review would not show it.
    ("check: public-API listings", public_api_listings),
    // Broken intra-doc links and bad doc markup fail like any other warning.
    ("check: cargo doc, as docs.rs builds too", docs),
];

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
        builds: std::thread::spawn(|| run_steps(BUILDS)),
        checks: std::thread::spawn(|| {
            let steps = run_steps(CHECKS);
            let started = Instant::now();
            let package = package::suite();
            eprintln!(
                "xtask: beside: the package suite took {:.1?}",
                started.elapsed()
            );
            (steps, package)
        }),
    }
}

/// Puts the calling thread at idle priority and runs `steps` one after another.
fn run_steps(steps: &'static [(&'static str, Step)]) -> Outcomes {
    if let Err(e) = idle_priority() {
        eprintln!("xtask: beside: {e}; its builds run at normal priority");
    }
    steps
        .iter()
        .map(|(name, step)| {
            let started = Instant::now();
            let outcome = step();
            if let Err(e) = &outcome {
                eprintln!("xtask: beside: {name} failed: {e}");
            }
            (*name, started.elapsed(), outcome)
        })
        .collect()
}

impl Running {
    /// Waits for every step.
    pub(crate) fn finish(self) -> Done {
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

/// Puts the calling thread under `SCHED_IDLE` (`chrt`, util-linux's, which the test command's
/// installs ensure), so the processes it starts inherit it.
fn idle_priority() -> Result<(), String> {
    // `/proc/thread-self` links to `PID/task/TID`.
    let me = std::fs::read_link("/proc/thread-self")
        .map_err(|e| format!("cannot read /proc/thread-self: {e}"))?;
    let tid = me
        .file_name()
        .ok_or_else(|| format!("/proc/thread-self is {}, not PID/task/TID", me.display()))?;
    workspace::run(Command::new("chrt").args(["--idle", "--pid", "0"]).arg(tid))
}
