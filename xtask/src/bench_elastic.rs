//! `cargo xtask bench-elastic`: the elastic launch (`tfcluster run --rdzv`) on its built-in
//! rendezvous and on etcd, beside torchrun's c10d rendezvous, one after the other in one run
//! on this machine, on loopback; prints the figures and writes them to their section of
//! `docs/benchmarks.md`. Not part of `test`.
//!
//! Every launcher runs the same task (`mark_task.rs`), one per agent, with min = max agents.
//! Measured (issue 18's "Speed", issue 22's for etcd): the rendezvous, from the last agent's
//! start to every task started, with 8 and 64 agents; a restart, from a task's SIGKILL to
//! every task of the next round started, with 8 and 64 agents (`--grace 0s`; torchrun's
//! `--monitor-interval 0.1`); and each agent's resident memory while its tasks run. Ours on
//! etcd keeps its rendezvous in a local three-member etcd (`etcd_rdzv.rs`) started for the run.
//!
//! `--only built-in` or `--only etcd` measures that launcher alone and prints its figures
//! without writing the document, whose section comes from a run of every launcher.

mod agents;
mod etcd_rdzv;
mod figures;
mod mark;
mod measure;
mod report;
mod side;
mod torch;

use std::path::Path;

use crate::workspace::target_dir;
use crate::{docs_section, machine, workspace};
use agents::Launcher;
use figures::Ours;
use side::{measure_side, torchrun_fits};

/// Rendezvous sizes and how often each is measured: ours (either backend), torchrun's.
const RENDEZVOUS: [(usize, usize, usize); 2] = [(8, 7, 3), (64, 5, 1)];
/// Restart sizes and their jobs (each killing a task `MAX_RESTARTS` times): ours (either
/// backend), torchrun's.
const RESTARTS: [(usize, usize, usize); 2] = [(8, 2, 1), (64, 2, 1)];
/// Issue 18's targets (the built-in rendezvous).
const RENDEZVOUS_64_MS: f64 = 50.0;
const RESTART_MS: f64 = 300.0;
const AGENT_MB: f64 = 10.0;
/// Issue 22's targets (the rendezvous on a local three-member etcd).
const ETCD_RENDEZVOUS_64_MS: f64 = 200.0;
const ETCD_RESTART_MS: f64 = 500.0;
/// torchrun's 64 agents run only when their memory, projected from its 8, fits in this
/// share of the memory available.
const TORCH_MEMORY_SHARE: f64 = 0.5;

/// Which launchers a run measures: every one, or one of ours alone (`--only`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Only {
    All,
    BuiltIn,
    Etcd,
}

impl Only {
    fn parse(args: &[&str]) -> Result<Self, String> {
        match args {
            [] => Ok(Self::All),
            ["--only", "built-in"] => Ok(Self::BuiltIn),
            ["--only", "etcd"] => Ok(Self::Etcd),
            _ => Err(format!(
                "bench-elastic {args:?}: expected no arguments, or --only built-in|etcd"
            )),
        }
    }
}

/// `cargo xtask bench-elastic [--only built-in|etcd]`: builds, measures each launcher asked for,
/// prints the report and, after a run of every launcher, writes it to `docs/benchmarks.md`.
pub(crate) fn run(args: &[&str]) -> Result<(), String> {
    let only = Only::parse(args)?;
    let load_before = machine::load();
    build()?;
    let torch = match only {
        Only::All => torch::ensure(),
        Only::BuiltIn | Only::Etcd => Err("not asked for (--only)".into()),
    };
    if let Err(why) = &torch {
        eprintln!("xtask: torch is not measured: {why}");
    }
    let dir = target_dir().join("bench-elastic");
    let mut notes = Vec::new();
    let mut ours = Vec::new();
    if only != Only::Etcd {
        ours.push(built_in(&dir, &mut notes));
    }
    let mut etcd_line = String::new();
    if only != Only::BuiltIn {
        let (side, line) = on_etcd(&dir, &mut notes)?;
        ours.push(side);
        etcd_line = line;
    }
    let theirs = match &torch {
        Ok(torch) => {
            let launcher = Launcher::Torchrun(torch.torchrun.clone());
            Some(measure_side(&launcher, &dir, &mut notes, torchrun_fits))
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
    let report = report::render(
        &ours,
        theirs.as_ref(),
        &format!("{}; {torch_line}{etcd_line}", machine::describe()),
        &load_before,
        &load_after,
        &notes,
    );
    print!("{report}");
    write_report(only, &report)
}

/// Builds what every launcher runs: our release binary and the task.
fn build() -> Result<(), String> {
    workspace::build_release(&["-p", "tfcluster", "--bin", "tfcluster"])?;
    mark::build()
}

/// Ours on the built-in rendezvous, measured.
fn built_in(dir: &Path, notes: &mut Vec<String>) -> Ours {
    let side = measure_side(&Launcher::Ours, dir, notes, |_, _| Ok(()));
    Ours {
        side,
        on: "",
        label: "ours",
        rendezvous_64_ms: RENDEZVOUS_64_MS,
        restart_ms: RESTART_MS,
        first_serves: true,
    }
}

/// Ours on a local three-member etcd, started for it and killed after, measured; and what the
/// machine's line says of etcd.
fn on_etcd(dir: &Path, notes: &mut Vec<String>) -> Result<(Ours, String), String> {
    let (cluster, etcd) = etcd_rdzv::start()?;
    let line = format!(
        "; {} ({} members on loopback)",
        etcd_rdzv::version(),
        etcd_rdzv::MEMBERS
    );
    eprintln!("xtask: etcd runs at {}", etcd.rdzv);
    let side = measure_side(&Launcher::OursEtcd(etcd), dir, notes, |_, _| Ok(()));
    // Killed now: its members' idle work is no part of torchrun's figures.
    drop(cluster);
    let ours = Ours {
        side,
        on: " on etcd",
        label: "ours on etcd",
        rendezvous_64_ms: ETCD_RENDEZVOUS_64_MS,
        restart_ms: ETCD_RESTART_MS,
        first_serves: false,
    };
    Ok((ours, line))
}

/// Writes `report` to its section of `docs/benchmarks.md` when every launcher was measured.
fn write_report(only: Only, report: &str) -> Result<(), String> {
    if only == Only::All {
        let path = workspace::root().join("docs/benchmarks.md");
        docs_section::write(&path, "bench-elastic", report)?;
        eprintln!("xtask: wrote its section of {}", path.display());
    } else {
        eprintln!("xtask: --only: docs/benchmarks.md is left as it was");
    }
    Ok(())
}
