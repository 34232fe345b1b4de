//! The two launchers a run compares, as `tfcluster run --rdzv` flags: the new behaviours
//! (issue 35's defaults and `--watchdog 5s`) and today's launcher (the same command with
//! them off: `--failure-grace 10s --no-prewarm --rdzv-timeout 15s`). The one place the
//! flags of each side are written; a flag the release binary lacks yet is replaced by the
//! nearest it has.

use std::process::Command;

use crate::child::release;

/// A flag of issue 35's, and what a side runs with whether or not the binary has it (the
/// flags land on other branches; a side runs with the nearest it has meanwhile).
struct Choice {
    flag: &'static str,
    with: &'static [&'static str],
    without: &'static [&'static str],
}

/// How long after its start the new side's watchdog first judges a task (its
/// `--watchdog-start`): a task of a host that rejoins starts cold and its peers wait for it.
pub(super) const WATCHDOG_START: std::time::Duration = std::time::Duration::from_secs(20);

/// The new side: the defaults (a failure stops the survivors at once, warm interpreters,
/// lost hosts noticed in seconds) and a watchdog.
const NEW: &[Choice] = &[
    Choice {
        flag: "--failure-grace",
        with: &[],
        without: &["--grace", "0s"],
    },
    Choice {
        flag: "--watchdog",
        // "20s": WATCHDOG_START.
        with: &["--watchdog", "5s", "--watchdog-start", "20s"],
        without: &[],
    },
];
/// Today's launcher: the grace a failure waited, cold starts, the old heartbeat timeout, no
/// watchdog.
const BASELINE: &[Choice] = &[
    Choice {
        flag: "--failure-grace",
        with: &["--failure-grace", "10s"],
        without: &["--grace", "10s"],
    },
    Choice {
        flag: "--no-prewarm",
        with: &["--no-prewarm"],
        without: &[],
    },
    Choice {
        flag: "--rdzv-timeout",
        with: &["--rdzv-timeout", "15s"],
        without: &["--rdzv-timeout", "15s"],
    },
];

/// What every job of both sides runs with: 2 to 3 hosts (a lost host leaves 2 that go on; a
/// restarted agent rejoins), a task a host, restarts enough for the longest run, and no host
/// set aside: the faults hit the hosts but the chief's again and again, which the bad-host
/// rule would leave out after a third failure in ten minutes, and the bench measures
/// recoveries, not exclusions.
pub(super) const COMMON: &[&str] = &[
    "--nodes",
    "2:3",
    "--tasks-per-node",
    "1",
    "--max-restarts",
    "1000",
    "--bad-host-failures",
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

    /// Its flags, given which the binary has.
    pub(super) fn flags(self, flags: &Flags) -> Vec<&'static str> {
        let choices = match self {
            Side::New => NEW,
            Side::Baseline => BASELINE,
        };
        choices
            .iter()
            .flat_map(|c| {
                if flags.missing.contains(&c.flag) {
                    c.without
                } else {
                    c.with
                }
            })
            .copied()
            .collect()
    }
}

/// Which of issue 35's flags the release binary lacks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Flags {
    missing: Vec<&'static str>,
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
        let mut missing: Vec<&'static str> = Vec::new();
        for choice in NEW.iter().chain(BASELINE) {
            let flag = choice.flag;
            let has = help.contains(&format!("{flag} ")) || help.contains(&format!("{flag}\n"));
            if !has && !missing.contains(&flag) {
                missing.push(flag);
            }
        }
        Self { missing }
    }

    /// Issue 35's flags the binary lacks, each side running with what stands in for them.
    pub(super) fn missing(&self) -> &[&'static str] {
        &self.missing
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_flag_of_the_issue_where_the_binary_has_it() {
        let today = "      --grace <GRACE>\n      --rdzv-timeout <DUR>\n";
        let flags = Flags::of_help(today);
        assert_eq!(
            flags.missing(),
            ["--failure-grace", "--watchdog", "--no-prewarm"]
        );
        assert_eq!(Side::New.flags(&flags), ["--grace", "0s"]);
        assert_eq!(
            Side::Baseline.flags(&flags),
            ["--grace", "10s", "--rdzv-timeout", "15s"]
        );
        let some = format!("{today}      --failure-grace <DUR>\n");
        assert_eq!(Side::New.flags(&Flags::of_help(&some)), Vec::<&str>::new());
        let all = format!("{some}      --watchdog <DUR>\n      --no-prewarm\n");
        let flags = Flags::of_help(&all);
        assert!(flags.missing().is_empty());
        assert_eq!(
            Side::New.flags(&flags),
            ["--watchdog", "5s", "--watchdog-start", "20s"]
        );
        assert_eq!(
            Side::Baseline.flags(&flags),
            [
                "--failure-grace",
                "10s",
                "--no-prewarm",
                "--rdzv-timeout",
                "15s"
            ]
        );
    }
}
