//! Installing Slurm and MUNGE from Debian's packages when their programs are missing, and
//! finding those programs afterwards (both with [`crate::apt`]).

pub(crate) use crate::apt::program;

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

/// Installs [`PACKAGES`] with apt-get unless all their programs are already there.
///
/// Quiet when nothing is missing. apt's output goes to `target/slurm/apt-*` and is shown
/// only when it fails. Needs root, as CI and the development machines run.
pub(crate) fn ensure_installed() -> Result<(), String> {
    crate::apt::ensure(&PROGRAMS, &PACKAGES, &super::state_dir()).map(drop)
}
