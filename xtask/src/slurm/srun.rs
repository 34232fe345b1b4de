//! Running a program on the cluster with srun and collecting what each rank printed.
//!
//! Each rank's stdout and stderr go to files of their own (`srun --output=…/rank-%t.out`), so
//! ranks never interleave, multi-line output stays whole, and a rank that printed nothing still
//! shows up.

use std::fs;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::cluster::Cluster;
use super::deadline;

/// Longest an srun may take, allocation included; past it srun is killed (which cancels the step).
const SRUN_TIMEOUT: Duration = Duration::from_secs(120);

/// What one rank (`SLURM_PROCID`) printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RankOutput {
    /// The rank, `SLURM_PROCID`.
    pub(crate) rank: u32,
    /// Its standard output.
    pub(crate) stdout: String,
    /// Its standard error.
    pub(crate) stderr: String,
}

impl Cluster {
    /// Runs `srun <args> <program>` (e.g. `args = ["-N3", "-n5", "--distribution=cyclic"]`) and
    /// returns every rank's output in rank order. Fails, with srun's and the ranks' stderr, when
    /// srun fails or outlives its timeout. `args` must not redirect output (`--output`,
    /// `--error`, `--label`, `--open-mode`): this call does.
    pub(crate) fn srun(&self, args: &[&str], program: &[&str]) -> Result<Vec<RankOutput>, String> {
        let call = self.calls.fetch_add(1, Ordering::Relaxed);
        let dir = self.layout.scratch(&format!("srun-{call}"));
        fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let mut srun = self.client("srun")?;
        srun.arg(format!("--output={}/rank-%t.out", dir.display()))
            .arg(format!("--error={}/rank-%t.err", dir.display()))
            // One failing rank ends the step rather than leaving the others waiting on it.
            .arg("--kill-on-bad-exit=1")
            .args(args)
            .args(program);
        let shown = deadline::show(&srun);
        let ranks = |finished_ok: bool| collect(&dir, finished_ok);
        match deadline::run(&mut srun, &dir.join("srun"), SRUN_TIMEOUT) {
            Ok(done) if done.status.success() => ranks(true),
            Ok(done) => Err(format!(
                "{shown} failed ({}):\n{}{}",
                done.status,
                deadline::streams(&done.stdout, &done.stderr),
                rank_errors(ranks(false).unwrap_or_default())
            )),
            Err(e) => Err(format!(
                "{e}{}",
                rank_errors(ranks(false).unwrap_or_default())
            )),
        }
    }
}

/// Reads `rank-N.out` and `rank-N.err` in `dir`; when `complete`, the ranks must be 0..n
/// with none missing.
fn collect(dir: &std::path::Path, complete: bool) -> Result<Vec<RankOutput>, String> {
    let entries = fs::read_dir(dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    let mut ranks: Vec<u32> = entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            name.strip_prefix("rank-")?
                .strip_suffix(".out")?
                .parse()
                .ok()
        })
        .collect();
    ranks.sort_unstable();
    if complete
        && ranks
            .iter()
            .enumerate()
            .any(|(i, &rank)| rank as usize != i)
    {
        return Err(format!(
            "srun left output for ranks {ranks:?} in {}, not 0..n",
            dir.display()
        ));
    }
    let read = |rank: u32, ext: &str| {
        let path = dir.join(format!("rank-{rank}.{ext}"));
        fs::read(&path).map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
    };
    ranks
        .into_iter()
        .map(|rank| {
            let stdout =
                read(rank, "out").map_err(|e| format!("cannot read rank {rank}'s output: {e}"))?;
            Ok(RankOutput {
                rank,
                stdout,
                stderr: read(rank, "err").unwrap_or_default(),
            })
        })
        .collect()
}

/// The ranks' stderr, for a failure message.
fn rank_errors(ranks: Vec<RankOutput>) -> String {
    ranks
        .into_iter()
        .filter(|r| !r.stderr.trim().is_empty())
        .map(|r| {
            format!(
                "rank {} stderr:\n{}",
                r.rank,
                bounded_process::tail(&r.stderr, 15)
            )
        })
        .collect()
}
