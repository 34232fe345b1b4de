//! The two launchers a run compares, as `tfcluster run --rdzv` flags: the new behaviours
//! (issue 35's defaults and `--watchdog 5s`) and today's launcher (the same command with
//! them off). The one place the flags of each side are written.

use std::process::Command;

use crate::child::release;

/// The new side: the defaults (a failure stops the survivors at once, warm interpreters,
/// lost hosts noticed in seconds) and a watchdog.
const NEW: &[&str] = &["--watchdog", "5s"];
/// Today's launcher: the grace a failure waited, cold starts, the old heartbeat timeout, no
/// watchdog.
const BASELINE: &[&str] = &[
    "--failure-grace",
    "10s",
    "--no-prewarm",
    "--rdzv-timeout",
    "15s",
];
/// While the binary lacks a flag of [`NEW`] or [`BASELINE`] (they land on other branches):
/// the nearest each side has today, the stop's grace.
const NEW_TODAY: &[&str] = &["--grace", "0s"];
const BASELINE_TODAY: &[&str] = &["--grace", "10s", "--rdzv-timeout", "15s"];

/// What every job of both sides runs with: 2 to 3 hosts (a lost host leaves 2 that go on; a
/// restarted agent rejoins), a task a host, restarts enough for the longest run.
pub(super) const COMMON: &[&str] = &[
    "--nodes",
    "2:3",
    "--tasks-per-node",
    "1",
    "--max-restarts",
    "1000",
];

/// One side of the comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Side {
    New,
    Baseline,
}

impl Side {
    pub(super) const BOTH: [Side; 2] = [Side::Baseline, Side::New];

    /// How the report names it.
    pub(super) fn label(self) -> &'static str {
        match self {
            Side::New => "tfcluster",
            Side::Baseline => "today's launcher",
        }
    }

    /// Its directory's and job's name.
    pub(super) fn slug(self) -> &'static str {
        match self {
            Side::New => "new",
            Side::Baseline => "baseline",
        }
    }

    /// Its flags, as [`Flags`] chose them.
    pub(super) fn flags(self, flags: Flags) -> &'static [&'static str] {
        match (self, flags) {
            (Side::New, Flags::Issue) => NEW,
            (Side::Baseline, Flags::Issue) => BASELINE,
            (Side::New, Flags::Today) => NEW_TODAY,
            (Side::Baseline, Flags::Today) => BASELINE_TODAY,
        }
    }
}

/// Which flag sets the release binary takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Flags {
    /// Issue 35's: every flag of [`NEW`] and [`BASELINE`] is in `run --help`.
    Issue,
    /// Not yet: [`NEW_TODAY`] and [`BASELINE_TODAY`].
    Today,
}

impl Flags {
    /// Asks the release binary's `run --help`.
    pub(super) fn probe() -> Result<Self, String> {
        let binary = release("tfcluster");
        let out = Command::new(&binary)
            .args(["run", "--help"])
            .output()
            .map_err(|e| format!("cannot run {} run --help: {e}", binary.display()))?;
        Ok(Self::of_help(&String::from_utf8_lossy(&out.stdout)))
    }

    fn of_help(help: &str) -> Self {
        let every = NEW
            .iter()
            .chain(BASELINE)
            .filter(|arg| arg.starts_with("--"))
            .all(|flag| help.contains(&format!("{flag} ")) || help.contains(&format!("{flag}\n")));
        if every { Flags::Issue } else { Flags::Today }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_flags_only_when_the_binary_has_each() {
        let today = "      --grace <GRACE>\n      --rdzv-timeout <DUR>\n";
        assert_eq!(Flags::of_help(today), Flags::Today);
        let all = format!(
            "{today}      --failure-grace <DUR>\n      --watchdog <DUR>\n      --no-prewarm\n"
        );
        assert_eq!(Flags::of_help(&all), Flags::Issue);
        assert!(Side::New.flags(Flags::Issue).contains(&"--watchdog"));
        assert!(!Side::Baseline.flags(Flags::Issue).contains(&"--watchdog"));
    }
}
