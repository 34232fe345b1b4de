//! `cargo xtask guide`: every shell example of `README.md` and `docs/guide/` run as a user
//! pastes it (`bash -e`, the block unmodified but for the placeholders its annotation
//! declares), each one counted test, in the scene its `<!-- example: ... -->` annotation names
//! (see [`example`]).
//!
//! Every scene is a fresh working directory holding the files the examples name
//! ([`scene`]: `train.py`, the tests' `mwms_train.py` and `pss_train.py`, `cluster.json`,
//! token files, certificates), with the debug `tfcluster` and the TensorFlow venv's `python`
//! first on `PATH`. `local` runs the block here; `hosts` and `etcd` make network-namespace
//! hosts named in `/etc/hosts` ([`hosts`]) and run the block on each at once, `etcd` with an
//! etcd member on each. A block that serves or follows forever (`runs Ns`) is stopped then and
//! passes if it had not failed; any other must exit 0 within its deadline. `checked-by`
//! blocks are not run here nor counted as passes: they are listed beside the count, and fail
//! only when a suite named is not in the test command; `slurm` blocks run in the Slurm
//! suite's cluster ([`slurm_examples`]); `not-run` blocks are skips the floors file must list.

mod example;
mod hosts;
mod scene;
mod script;

use std::process::Command;

use crate::tally::{self, Floors, Suite};
use crate::{tf_venv, workspace};

pub(crate) use example::{Example, Scene};
pub(crate) use scene::Tools;

/// The suite's name in the tally and the floors file.
const SUITE: &str = "guide: examples";

/// `cargo xtask guide [FILTER]`: the suite alone, or only the examples whose `FILE:LINE`
/// holds FILTER.
pub(crate) fn run(filter: Option<&str>) -> Result<(), String> {
    match filter {
        None => tally::alone([suite(None)]),
        // A part of the suite: its count is not the floor's.
        Some(filter) => {
            let suite = suite(Some(filter));
            eprintln!(
                "xtask: guide: {} passed, {} failed, {} skipped",
                suite.passed,
                suite.failed.len(),
                suite.skipped.len()
            );
            if suite.failed.is_empty() {
                Ok(())
            } else {
                Err(suite.failed.join("\n"))
            }
        }
    }
}

/// Every example of the guide, each run in its scene and counted; the Slurm ones are left to
/// the Slurm suite, which runs them with [`slurm_examples`].
pub(crate) fn suite(filter: Option<&str>) -> Suite {
    let mut suite = Suite::new(SUITE);
    let examples = match all() {
        Ok(examples) => examples,
        Err(e) => {
            suite.failed.push(e);
            return suite;
        }
    };
    let prepared = Floors::read().and_then(|floors| {
        let python = tf_venv::python()?;
        let tfcluster = crate::test_build::artifact("tfcluster", "bin", "tfcluster")?;
        Ok((floors, Tools::new(&tfcluster, &python)?))
    });
    let (floors, tools) = match prepared {
        Ok(prepared) => prepared,
        Err(e) => {
            suite.failed.push(e);
            return suite;
        }
    };
    for example in examples {
        let example = match example {
            Ok(example) => example,
            Err(e) => {
                suite.record("an example's annotation", Err(e));
                continue;
            }
        };
        let place = example.place.clone();
        if filter.is_some_and(|filter| !place.contains(filter)) {
            continue;
        }
        match &example.scene {
            Scene::NotRun(_) => suite.skipped.push(place),
            Scene::Slurm => {}
            Scene::CheckedBy(suites) => match checked_by(&floors, suites) {
                Ok(()) => suite
                    .elsewhere
                    .push(format!("{place}: checked by {}", suites.join(", "))),
                Err(e) => suite.record(&place, Err(e)),
            },
            Scene::Local | Scene::Hosts(_) | Scene::Etcd(_) => {
                let started = std::time::Instant::now();
                let outcome = run_one(&example, &tools);
                if outcome.is_ok() {
                    eprintln!("xtask: guide: {place} passed in {:.2?}", started.elapsed());
                }
                suite.record(&place, outcome);
            }
        }
    }
    suite
}

/// Every example of the README and the guide, in file order, or why one file could not be read.
fn all() -> Result<Vec<Result<Example, String>>, String> {
    let root = workspace::root();
    let mut all = Vec::new();
    for file in example::files(&root)? {
        let text = std::fs::read_to_string(&file)
            .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
        let shown = file
            .strip_prefix(&root)
            .unwrap_or(&file)
            .display()
            .to_string();
        all.extend(example::examples(&shown, &text));
    }
    Ok(all)
}

/// The Slurm examples, for the Slurm suite to run on its cluster.
pub(crate) fn slurm_examples() -> Result<Vec<Example>, String> {
    let mut slurm = Vec::new();
    for example in all()? {
        // A bad annotation is the guide suite's failure, counted there.
        if let Ok(example) = example
            && example.scene == Scene::Slurm
        {
            slurm.push(example);
        }
    }
    Ok(slurm)
}

/// Whether every suite named is one the test command runs (a floor names it).
fn checked_by(floors: &Floors, suites: &[String]) -> Result<(), String> {
    for suite in suites {
        let prefix = format!("{suite}:");
        if !floors.suites().any(|name| name.starts_with(&prefix)) {
            return Err(format!(
                "checked-by {suite}, but no suite of the test command is called {suite} \
                 ({} names none)",
                tally::FLOORS
            ));
        }
    }
    Ok(())
}

/// Runs `example` by `bash` (here; for Slurm, the cluster's controller host's) in a fresh
/// scene of its own.
pub(crate) fn run_by(example: &Example, bash: Command, tools: &Tools) -> Result<(), String> {
    let dir = scene::Dir::new(&example.place)?;
    dir.fill(&workspace::root())?;
    let output = script::run(example, vec![script::by(bash, example, dir.path(), tools)])?;
    expected(example, &output)
}

/// Runs `example` in a fresh scene of its own.
fn run_one(example: &Example, tools: &Tools) -> Result<(), String> {
    let dir = scene::Dir::new(&example.place)?;
    dir.fill(&workspace::root())?;
    let output = match &example.scene {
        Scene::Local => return run_by(example, Command::new("bash"), tools),
        Scene::Hosts(names) | Scene::Etcd(names) => {
            let hosts = hosts::Named::create(names)?;
            let _etcd = match &example.scene {
                Scene::Etcd(_) => Some(hosts.etcd()?),
                _ => None,
            };
            let runs = names
                .iter()
                .enumerate()
                .map(|(i, name)| script::in_host(example, dir.path(), tools, &hosts, (i, name)))
                .collect();
            script::run(example, runs)
        }
        _ => return Ok(()),
    }?;
    expected(example, &output)
}

/// Whether `output` holds every text `example` expects.
pub(crate) fn expected(example: &Example, output: &str) -> Result<(), String> {
    for text in &example.expects {
        if !output.contains(text.as_str()) {
            return Err(format!(
                "its output lacks {text:?}; it was:\n{}",
                script::tail(output)
            ));
        }
    }
    Ok(())
}
