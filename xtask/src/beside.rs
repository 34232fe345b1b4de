//! The checks and builds the test command runs beside its tests, at the CPU's idle priority.
//!
//! The checks of each feature set, the nightly docs, the packaged copies, the static musl
//! binary and the wheel compile for minutes and share nothing with the tests' build. Here
//! they run in a thread whose processes the kernel gives the CPU only when no other process
//! wants it (`SCHED_IDLE`, inherited by every process started from the thread), so they take
//! the time the tests leave idle rather than slowing the tests, each in a target directory
//! of its own ([`Beside`]), so no cargo waits on another's lock: a suite that needs one of
//! the builds (the wheel, the static binary) runs its own build of it after, and cargo finds
//! the work done, or waits for that build alone. How much they gain is how much idle time
//! the tests leave: CONTRIBUTING.md has the figures.

use std::process::Command;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::tally::{self, Suite};
use crate::workspace::{self, Beside};
use crate::{features, guide_rust, image, package, public_api, python};

/// A check or a build: `Err` says what failed.
type Step = fn() -> Result<(), String>;

/// The steps, in order: first the builds the suites after the workspace's tests need, then
/// the checks, then the package suite.
const STEPS: &[(&str, Step)] = &[
    (
        "build: the wheel (and the CLI with its default features)",
        python::build_ahead,
    ),
    ("build: tfcluster, static for musl", build_static),
    (
        "build: the tests without default features",
        features::build_tests,
    ),
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
    pub(crate) steps: Vec<(&'static str, Duration, Result<(), String>)>,
    pub(crate) package: Suite,
}

/// The thread running [`STEPS`] and the package suite.
pub(crate) struct Running(JoinHandle<Done>);

/// Starts the steps in a thread at idle priority.
pub(crate) fn start() -> Running {
    Running(std::thread::spawn(|| {
        if let Err(e) = idle_priority() {
            eprintln!("xtask: beside: {e}; its builds run at normal priority");
        }
        let steps = STEPS
            .iter()
            .map(|(name, step)| {
                let started = Instant::now();
                let outcome = step();
                if let Err(e) = &outcome {
                    eprintln!("xtask: beside: {name} failed: {e}");
                }
                (*name, started.elapsed(), outcome)
            })
            .collect();
        let started = Instant::now();
        let package = package::suite();
        eprintln!(
            "xtask: beside: the package suite took {:.1?}",
            started.elapsed()
        );
        Done { steps, package }
    }))
}

impl Running {
    /// Waits for every step.
    pub(crate) fn finish(self) -> Done {
        self.0.join().unwrap_or_else(|_| Done {
            steps: vec![(
                "the steps beside the tests",
                Duration::ZERO,
                Err("their thread panicked".to_owned()),
            )],
            package: tally::broken_suite(package::SUITE, "its thread panicked".to_owned()),
        })
    }
}

fn build_static() -> Result<(), String> {
    image::build_static().map(drop)
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
