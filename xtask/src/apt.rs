//! Installing Debian packages with apt-get when programs the tests need are missing, and finding
//! those programs afterwards: Slurm's and MUNGE's ([`crate::slurm::ensure_installed`]) and
//! etcd's ([`crate::etcd::ensure_installed`]) and Prometheus's
//! ([`crate::prometheus::ensure_installed`]).

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::slurm::deadline;

/// A package download on a slow mirror can take minutes; more than this means apt is stuck.
const APT_TIMEOUT: Duration = Duration::from_secs(20 * 60);

/// Installs `packages` with apt-get unless every one of `programs` is already there; `Ok(false)`
/// when nothing was missing, `Ok(true)` when the packages were installed and every program then
/// found.
///
/// Quiet when nothing is missing. apt's output goes to `<scratch>/apt-*` (and dpkg's to
/// `<scratch>/dpkg-configure.*`) and is shown only when it fails. Needs root, as CI and the
/// development machines run.
pub(crate) fn ensure(programs: &[&str], packages: &[&str], scratch: &Path) -> Result<bool, String> {
    let missing: Vec<&str> = programs
        .iter()
        .copied()
        .filter(|name| program(name).is_none())
        .collect();
    if missing.is_empty() {
        return Ok(false);
    }
    eprintln!(
        "xtask: {} missing; installing {} with apt-get",
        missing.join(", "),
        packages.join(" ")
    );
    let started = Instant::now();
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
    apt(&[&["install", "--no-install-recommends"][..], packages].concat())?;
    let still: Vec<&str> = programs
        .iter()
        .copied()
        .filter(|name| program(name).is_none())
        .collect();
    if still.is_empty() {
        eprintln!(
            "xtask: installed {} in {:.1?}",
            packages.join(" "),
            started.elapsed()
        );
        Ok(true)
    } else {
        Err(format!(
            "apt-get installed {} but {} still cannot be found on PATH or in /usr/sbin",
            packages.join(" "),
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
