//! `cargo xtask bench-goodput`: what a failure costs TensorFlow training under `tfcluster
//! run --rdzv` (issue 35), today's launcher beside the new behaviours, one after the other
//! in one run; prints the figures and, after a full run, writes them to their section of
//! `docs/benchmarks.md`. By hand, not part of `test`: it takes about half an hour.
//!
//! Each side runs real TensorFlow 2.21 MultiWorkerMirroredStrategy (`goodput_train.py`, one
//! task a host) on three network-namespace hosts (`job.rs`), makes each fault of `fault.rs`
//! and reads from the tasks' marks and the agents' logs where the time from the fault to
//! the first step after it goes (`recovery.rs`); then trains on a job of its own with a task
//! killed every minute and measures goodput (`goodput.rs`). Which flags each side runs with
//! is `side.rs`'s, the one place they are written. Every process and namespace it made is
//! gone at its end, on an error or a Ctrl-C too (`interrupt.rs`).
//!
//! Then the same for ParameterServerStrategy (`pss.rs`): a worker killed every 30 s for 5
//! minutes, whole rounds restarted beside the worker alone in place, and a crash loop with
//! the rule that stops it and without; `--pss` runs that part alone.
//!
//! `--preemption` runs the spot-preemption case alone (`preemption.rs`, issue 66): a GCE
//! notice on a host every 2 minutes for 10, its VM killed 30 s later and back 30 s after,
//! with the agents following the notices and without (about 25 minutes); the default run
//! leaves it out. It writes its own section of `docs/benchmarks.md`.
//!
//! `--quick` makes each fault once and runs goodput for 2 minutes (the ParameterServerStrategy
//! part 2 minutes too; the preemption case a notice every minute for 3), to check the
//! harness; it writes nothing. `--minutes N` sets the
//! MultiWorkerMirroredStrategy goodput run's length (default 10).

mod fault;
mod goodput;
mod interrupt;
mod job;
mod marks;
mod measure;
mod memory;
mod metadata;
mod preemption;
mod pss;
mod recovery;
mod report;
mod schedule;
mod side;

use std::time::Duration;

use crate::workspace::target_dir;
use crate::{docs_section, machine, tf_venv, workspace};
use measure::Plan;
use side::{Flags, Side};

/// A run's shape, from its arguments.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Options {
    quick: bool,
    /// The ParameterServerStrategy part alone.
    pss: bool,
    /// The spot-preemption case alone.
    preemption: bool,
    plan: Plan,
}

impl Options {
    fn parse(args: &[&str]) -> Result<Self, String> {
        let mut quick = false;
        let mut pss = false;
        let mut preemption = false;
        let mut minutes = None;
        let mut rest = args.iter();
        while let Some(&arg) = rest.next() {
            match arg {
                "--quick" => quick = true,
                "--pss" => pss = true,
                "--preemption" => preemption = true,
                "--minutes" => {
                    let value = rest
                        .next()
                        .ok_or("bench-goodput --minutes: a number of minutes is missing")?;
                    minutes = Some(
                        value
                            .parse::<u64>()
                            .ok()
                            .filter(|&m| m >= 1)
                            .ok_or_else(|| format!("bench-goodput --minutes {value:?}: expected a whole number of minutes, 1 or more"))?,
                    );
                }
                _ => {
                    return Err(format!(
                        "bench-goodput {args:?}: expected [--quick] [--pss | --preemption] [--minutes N]"
                    ));
                }
            }
        }
        if pss && preemption {
            return Err(format!(
                "bench-goodput {args:?}: --pss and --preemption each run one part alone: give one"
            ));
        }
        let minutes = minutes.unwrap_or(if quick { 2 } else { 10 });
        Ok(Self {
            quick,
            pss,
            preemption,
            plan: Plan {
                repeats: if quick { 1 } else { 3 },
                goodput: Duration::from_secs(60 * minutes),
            },
        })
    }
}

/// `cargo xtask bench-goodput [--quick] [--pss | --preemption] [--minutes N]`: builds,
/// measures both sides, prints the report and, unless `--quick`, writes it to
/// `docs/benchmarks.md`.
pub(crate) fn run(args: &[&str]) -> Result<(), String> {
    let options = Options::parse(args)?;
    interrupt::arm()?;
    workspace::build_release(&["-p", "tfcluster", "--bin", "tfcluster"])?;
    let python = tf_venv::python()?;
    if options.preemption {
        return preemptions(options, &python);
    }
    if !options.pss {
        mirrored(options, &python)?;
    }
    parameter_servers(options, &python)
}

/// The ParameterServerStrategy part: both restart scopes, then the crash loop both ways;
/// writes its own section of `docs/benchmarks.md` unless `--quick`.
fn parameter_servers(options: Options, python: &std::path::Path) -> Result<(), String> {
    let load_before = machine::load();
    let length = Duration::from_secs(if options.quick { 120 } else { 300 });
    let dir = target_dir().join("bench-goodput").join("pss");
    let mut sides = Vec::new();
    for scope in pss::Scope::BOTH {
        sides.push(pss::measure(
            scope,
            python,
            length,
            &dir.join(format!("{scope:?}")),
        )?);
    }
    let mut loops = Vec::new();
    for allow in [true, false] {
        let (seconds, command) =
            pss::crash_loop_seconds(allow, &dir.join(format!("loop-{allow}")))?;
        loops.push((allow, seconds, command));
    }
    let report = format!(
        "{}
Machine: {}; load before {}, after {}.
",
        pss::render(&sides, &loops, length),
        machine::describe(),
        load_before,
        machine::load()
    );
    print!("{report}");
    if options.quick {
        eprintln!("xtask: --quick: docs/benchmarks.md is left as it was");
        return Ok(());
    }
    let path = workspace::root().join("docs/benchmarks.md");
    docs_section::write(&path, "bench-goodput-pss", &report)?;
    eprintln!("xtask: wrote its section of {}", path.display());
    Ok(())
}

/// The spot-preemption case: the notices followed, then not; writes its own section of
/// `docs/benchmarks.md` unless `--quick`.
fn preemptions(options: Options, python: &std::path::Path) -> Result<(), String> {
    let load_before = machine::load();
    let (length, every) = if options.quick {
        (Duration::from_secs(180), Duration::from_secs(60))
    } else {
        (Duration::from_secs(600), Duration::from_secs(120))
    };
    let dir = target_dir().join("bench-goodput").join("preemption");
    let mut sides = Vec::new();
    for notices in preemption::Notices::BOTH {
        sides.push(preemption::measure(
            notices,
            python,
            length,
            every,
            &dir.join(format!("{notices:?}")),
        )?);
    }
    let report = format!(
        "{}
Machine: {}; load before {}, after {}.
",
        preemption::render(&sides, length, every),
        machine::describe(),
        load_before,
        machine::load()
    );
    print!("{report}");
    if options.quick {
        eprintln!("xtask: --quick: docs/benchmarks.md is left as it was");
        return Ok(());
    }
    let path = workspace::root().join("docs/benchmarks.md");
    docs_section::write(&path, "bench-goodput-preemption", &report)?;
    eprintln!("xtask: wrote its section of {}", path.display());
    Ok(())
}

/// The MultiWorkerMirroredStrategy part: today's launcher beside the new behaviours.
fn mirrored(options: Options, python: &std::path::Path) -> Result<(), String> {
    let load_before = machine::load();
    let flags = Flags::probe()?;
    if !flags.missing().is_empty() {
        eprintln!(
            "xtask: issue 35's flags not in this build: {}; each side runs with the nearest it has",
            flags.missing().join(", ")
        );
    }
    let dir = target_dir().join("bench-goodput");
    let mut notes = Vec::new();
    let mut sides = Vec::new();
    for side in Side::BOTH {
        sides.push(measure::side(
            side,
            &flags,
            python,
            options.plan,
            &dir.join(side.slug()),
            &mut notes,
        )?);
    }
    let load_after = machine::load();
    let report = report::render(
        &sides,
        &report::Context {
            machine: &machine::describe(),
            load_before: &load_before,
            load_after: &load_after,
            flags: &flags,
            plan: options.plan,
            notes: &notes,
        },
    );
    print!("{report}");
    if options.quick {
        eprintln!("xtask: --quick: docs/benchmarks.md is left as it was");
    } else {
        let path = workspace::root().join("docs/benchmarks.md");
        docs_section::write(&path, "bench-goodput", &report)?;
        eprintln!("xtask: wrote its section of {}", path.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_its_arguments() {
        let full = Options::parse(&[]).unwrap();
        assert_eq!(
            (full.quick, full.plan.repeats, full.plan.goodput.as_secs()),
            (false, 3, 600)
        );
        let quick = Options::parse(&["--quick"]).unwrap();
        assert_eq!(
            (
                quick.quick,
                quick.plan.repeats,
                quick.plan.goodput.as_secs()
            ),
            (true, 1, 120)
        );
        assert!(!full.pss && !full.preemption && !quick.preemption);
        let three = Options::parse(&["--minutes", "3", "--quick"]).unwrap();
        assert_eq!(three.plan.goodput.as_secs(), 180);
        let preemption = Options::parse(&["--preemption", "--quick"]).unwrap();
        assert!(preemption.preemption && preemption.quick && !preemption.pss);
        assert!(Options::parse(&["--pss"]).unwrap().pss);
        for bad in [
            &["--minutes"][..],
            &["--minutes", "0"],
            &["--minutes", "x"],
            &["--slow"],
            &["--pss", "--preemption"],
        ] {
            assert!(Options::parse(bad).is_err(), "{bad:?}");
        }
    }
}
