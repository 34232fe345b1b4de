//! Installing Slurm and MUNGE from Debian's packages when their programs are missing, and
//! finding those programs afterwards.

use std::env;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use super::deadline;

/// Every program the local cluster runs; any one missing means the packages need installing.
const PROGRAMS: [&str; 10] = [
    "slurmctld",
    "slurmd",
    "srun",
    "scontrol",
    "sinfo",
    "munged",
    "munge",
    "unmunge",
    "ip",
    "nsenter",
];

/// Debian's packages that provide [`PROGRAMS`] (`slurm-wlm` pulls slurmctld, slurmd and the
/// client tools; `munge` brings munged and mungekey; `iproute2` and `util-linux`, `ip` and
/// `nsenter` for the hosts' network namespaces).
const PACKAGES: [&str; 4] = ["slurm-wlm", "munge", "iproute2", "util-linux"];

/// A package download on a slow mirror can take minutes; more than this means apt is stuck.
const APT_TIMEOUT: Duration = Duration::from_secs(20 * 60);

/// Installs [`PACKAGES`] with apt-get unless all their programs are already there.
///
/// Quiet when nothing is missing. apt's output goes to `target/slurm/apt-*` and is shown
/// only when it fails. Needs root, as CI and the development machines run.
pub(crate) fn ensure_installed() -> Result<(), String> {
    let missing: Vec<&str> = PROGRAMS
        .into_iter()
        .filter(|name| program(name).is_none())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    eprintln!(
        "xtask: {} missing; installing {} with apt-get",
        missing.join(", "),
        PACKAGES.join(" ")
    );
    let started = Instant::now();
    let scratch = super::state_dir();
    let apt = |args: &[&str]| {
        let mut command = Command::new("apt-get");
        command
            .args(["-q", "-y", "-o", "DPkg::Lock::Timeout=300"])
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive");
        let shown = deadline::show(&command);
        deadline::run(
            &mut command,
            &scratch.join(format!("apt-{}", args[0])),
            APT_TIMEOUT,
        )?
        .success(&shown)
    };
    // Finishes an install an earlier, killed run left half done; apt refuses to start otherwise.
    let mut configure = Command::new("dpkg");
    configure
        .args(["--configure", "-a"])
        .env("DEBIAN_FRONTEND", "noninteractive");
    let shown = deadline::show(&configure);
    deadline::run(&mut configure, &scratch.join("dpkg-configure"), APT_TIMEOUT)?.success(&shown)?;
    apt(&["update"])?;
    apt(&[&["install", "--no-install-recommends"][..], &PACKAGES[..]].concat())?;
    let still: Vec<&str> = PROGRAMS
        .into_iter()
        .filter(|name| program(name).is_none())
        .collect();
    if still.is_empty() {
        eprintln!(
            "xtask: installed {} in {:.1?}",
            PACKAGES.join(" "),
            started.elapsed()
        );
        Ok(())
    } else {
        Err(format!(
            "apt-get installed {} but {} still cannot be found on PATH or in /usr/sbin",
            PACKAGES.join(" "),
            still.join(", ")
        ))
    }
}

/// Where `name` is: on `PATH`, or in the sbin directories a non-login root shell may lack.
pub(crate) fn program(name: &str) -> Option<PathBuf> {
    let path = env::var_os("PATH").unwrap_or_default();
    env::split_paths(&path)
        .chain(["/usr/sbin", "/usr/bin", "/sbin", "/bin"].map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}
