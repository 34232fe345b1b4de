//! The measurements of one side: each fault in turn on one job (its recovery, or none within
//! the fault's cap), the job's memory while it trains, and goodput over a run of faults on a
//! job of its own.

use std::path::Path;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use super::fault::{Fault, victim};
use super::goodput::Goodput;
use super::interrupt;
use super::job::{HOSTS, Job};
use super::memory::Memory;
use super::recovery::Recovery;
use super::side::{Flags, Side, WATCHDOG_START};
use crate::signal::signal;
use crate::wall_clock::now_ns;

/// How long the first round may take to train (TensorFlow's imports on two busy cores), and
/// a round after a repair (a rejoining host: a restart of every task). A rejoining host may
/// also wait out the rendezvous's churn budget (after 3 rounds ended by hosts joining or
/// leaving, one more each 200 s): 240 s stopped a run's faults at the third host fault.
pub(super) const START_TIMEOUT: Duration = Duration::from_secs(420);
/// Steps a round makes before a fault hits it: training is steady and has checkpointed.
pub(super) const STEADY_STEPS: u64 = 12;
/// How long a fault waits for the warm interpreters of the next round to be ready (8–14 s
/// of imports on two busy cores).
const SPARES_TIMEOUT: Duration = Duration::from_secs(60);
/// How often the goodput run kills a task.
const FAULT_EVERY: Duration = Duration::from_secs(60);

/// What a run asks of each side.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Plan {
    /// How many times each fault is made.
    pub(super) repeats: usize,
    /// How long the goodput run lasts (a fault each [`FAULT_EVERY`] but in its last minute).
    pub(super) goodput: Duration,
}

/// One fault's recoveries on one side.
#[derive(Clone, Debug)]
pub(super) struct Recoveries {
    pub(super) fault: Fault,
    pub(super) found: Vec<Recovery>,
    /// How many did not recover within the fault's cap.
    pub(super) missed: usize,
}

/// Goodput over a run, and how many faults it made.
#[derive(Clone, Copy, Debug)]
pub(super) struct Run {
    pub(super) goodput: Goodput,
    pub(super) faults: usize,
    pub(super) minutes: f64,
}

/// Every figure of one side.
#[derive(Debug)]
pub(super) struct Figures {
    pub(super) side: Side,
    pub(super) command: String,
    pub(super) recoveries: Vec<Recoveries>,
    pub(super) memory: Memory,
    pub(super) run: Option<Run>,
}

/// Measures `side` as `plan` says, its files under `dir`; a failure of a part is a note and
/// the rest goes on, but an interruption ends it.
pub(super) fn side(
    side: Side,
    flags: &Flags,
    python: &Path,
    plan: Plan,
    dir: &Path,
    notes: &mut Vec<String>,
) -> Result<Figures, String> {
    let name = side.label();
    eprintln!("xtask: {name}: the faults");
    let mut figures = Figures {
        side,
        command: String::new(),
        recoveries: Fault::ALL
            .iter()
            .map(|&fault| Recoveries {
                fault,
                found: Vec::new(),
                missed: 0,
            })
            .collect(),
        memory: Memory::default(),
        run: None,
    };
    if let Err(e) = faults(side, flags, python, plan, &dir.join("faults"), &mut figures) {
        interrupt::check()?;
        notes.push(format!("{name}: the faults stopped: {e}"));
    }
    eprintln!("xtask: {name}: goodput over {:?}", plan.goodput);
    match goodput(side, flags, python, plan, &dir.join("goodput")) {
        Ok(run) => figures.run = Some(run),
        Err(e) => {
            interrupt::check()?;
            notes.push(format!("{name}: the goodput run failed: {e}"));
        }
    }
    Ok(figures)
}

/// Each fault `plan.repeats` times on one job, its recoveries into `figures`.
fn faults(
    side: Side,
    flags: &Flags,
    python: &Path,
    plan: Plan,
    dir: &Path,
    figures: &mut Figures,
) -> Result<(), String> {
    let mut job = Job::new(side, flags, python, dir.to_path_buf())?;
    figures.command = job.command_line();
    job.start_all()?;
    let round = job.wait_steady(HOSTS, STEADY_STEPS, START_TIMEOUT)?;
    spares(side, &job)?;
    figures.memory = Memory::of(&job, round);
    // Each fault's time and round, kept beside the marks and logs for a look at one run.
    let mut made = String::new();
    for _ in 0..plan.repeats {
        for recoveries in &mut figures.recoveries {
            let round = job.wait_steady(HOSTS, STEADY_STEPS, START_TIMEOUT)?;
            if recoveries.fault == Fault::TaskStopped {
                // Past the new side's watchdog start period, which a task's start gets
                // whatever its steps do: a hang is judged by the watchdog's period after it.
                interrupt::sleep(WATCHDOG_START)?;
            }
            spares(side, &job)?;
            let injected = recoveries.fault.inject(&mut job, round)?;
            made.push_str(&format!(
                "{} {} {:?}\n",
                injected.ns, round, recoveries.fault
            ));
            let _ = std::fs::write(dir.join("faults.txt"), &made);
            let found = recovery(
                &job,
                injected.ns,
                round,
                &injected.survivors(),
                recoveries.fault.cap(),
            )?;
            match &found {
                Some(r) => eprintln!(
                    "xtask: {}: {}: first step {:.0} ms after it, {} steps redone",
                    side.label(),
                    recoveries.fault.label(),
                    r.first_step,
                    r.redone
                ),
                None => eprintln!(
                    "xtask: {}: {}: not recovered in {:?}",
                    side.label(),
                    recoveries.fault.label(),
                    recoveries.fault.cap()
                ),
            }
            match found {
                Some(found) => recoveries.found.push(found),
                None => recoveries.missed += 1,
            }
            injected.repair(&mut job)?;
        }
    }
    Ok(())
}

/// On the side with warm interpreters, waits until every agent's interpreter for the next
/// round has done its imports: a fault before then measures how far that import had got (a
/// restart waits for it), not a warm restart. Said, and gone on, after [`SPARES_TIMEOUT`].
fn spares(side: Side, job: &Job) -> Result<(), String> {
    if side == Side::New && !job.wait_spares(SPARES_TIMEOUT)? {
        eprintln!(
            "xtask: {}: not every agent's warm interpreter was ready within {SPARES_TIMEOUT:?}; the fault is made anyway",
            side.label()
        );
    }
    Ok(())
}

/// Waits up to `cap` for the recovery from a fault at `fault_ns` in round `round`, read
/// from the marks and the `survivors`' logs; `None` when it did not come.
fn recovery(
    job: &Job,
    fault_ns: u128,
    round: u32,
    survivors: &[usize],
    cap: Duration,
) -> Result<Option<Recovery>, String> {
    let deadline = Instant::now() + cap;
    loop {
        interrupt::check()?;
        let logs: Vec<String> = survivors.iter().map(|&h| job.log(h)).collect();
        let logs: Vec<&str> = logs.iter().map(String::as_str).collect();
        if let Some(found) = Recovery::of(fault_ns, round, &job.marks(), &logs) {
            return Ok(Some(found));
        }
        if Instant::now() >= deadline {
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A job that trains for `plan.goodput` from its first steady round on, a task that is not
/// the chief SIGKILLed every [`FAULT_EVERY`] but in the last one, and its goodput.
fn goodput(
    side: Side,
    flags: &Flags,
    python: &Path,
    plan: Plan,
    dir: &Path,
) -> Result<Run, String> {
    let mut job = Job::new(side, flags, python, dir.to_path_buf())?;
    job.start_all()?;
    job.wait_steady(HOSTS, STEADY_STEPS, START_TIMEOUT)?;
    let start = Instant::now();
    let start_ns = now_ns();
    let mut faults = 0;
    let mut next = FAULT_EVERY;
    while next + FAULT_EVERY <= plan.goodput {
        interrupt::sleep(next.saturating_sub(start.elapsed()))?;
        let marks = job.marks();
        let round = marks.iter().map(|m| m.round).max().unwrap_or(0);
        // Mid-restart there may be no task to kill: that fault is skipped.
        if let Some(pid) = victim(&marks, round) {
            signal(pid, Signal::SIGKILL);
            faults += 1;
        }
        next += FAULT_EVERY;
    }
    interrupt::sleep(plan.goodput.saturating_sub(start.elapsed()))?;
    let end_ns = now_ns();
    let goodput = Goodput::of(&job.marks(), start_ns, end_ns).ok_or_else(|| {
        format!(
            "no two steps in a row in the run (files in {})",
            dir.display()
        )
    })?;
    eprintln!(
        "xtask: {}: goodput {:.1}% ({} steps kept of {} ended, {faults} faults)",
        side.label(),
        goodput.ratio * 100.0,
        goodput.productive,
        goodput.ended
    );
    drop(job);
    Ok(Run {
        goodput,
        faults,
        minutes: plan.goodput.as_secs_f64() / 60.0,
    })
}
