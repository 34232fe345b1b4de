//! The checks and builds the test command runs beside its tests, at the CPU's idle priority.
//!
//! On CI's two cores the tests leave much of the CPU idle (they wait on TensorFlow's imports
//! and steps, on other processes, on timeouts), while the checks of each feature set, the
//! nightly docs, the packaged copies, the static musl binary and the wheel compile for
//! minutes and share nothing with the tests' build. Run one after the other they were a
//! third of the command's time. Here they run in a thread whose processes the kernel gives
//! the CPU only when no other process wants it (`SCHED_IDLE`, inherited by every process
//! started from the thread), so they fill the tests' idle time without slowing the tests,
//! in a target directory of their own ([`workspace::beside_target`]) so neither side waits
//! on cargo's lock of the other's. A suite that needs one of the builds (the wheel, the
//! static binary) runs its own build of it after: cargo finds the work done, or waits for it.

use std::path::Path;
use std::process::Command;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::tally::{self, Suite};
use crate::{features, guide_rust, image, package, public_api, python, workspace};

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
pub(crate) struct Beside(JoinHandle<Done>);

impl Beside {
    /// Starts the steps in a thread at idle priority.
    pub(crate) fn start() -> Self {
        Self(std::thread::spawn(|| {
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
        workspace::cargo_beside()
            .args(["doc", "--workspace", "--no-deps", "--all-features"])
            .env("RUSTDOCFLAGS", "-D warnings"),
    )?;
    features::docs_rs()
}

/// Puts the calling thread under `SCHED_IDLE` (`chrt`, util-linux's, which the test command's
/// installs ensure), so the processes it starts inherit it.
fn idle_priority() -> Result<(), String> {
    let me = std::fs::read_link("/proc/thread-self")
        .map_err(|e| format!("cannot read /proc/thread-self: {e}"))?;
    let tid = me
        .file_name()
        .and_then(|tid| tid.to_str())
        .filter(|_| me.parent().and_then(Path::file_name) == Some("task".as_ref()))
        .ok_or_else(|| format!("/proc/thread-self is {}, not PID/task/TID", me.display()))?
        .to_owned();
    workspace::run(Command::new("chrt").args(["--idle", "--pid", "0", &tid]))
}
