//! `--restart-scope`, `--max-task-restarts` and `--allow-crash-loops`: what a failure
//! restarts under both of `run`'s launchers (`--local` and `--rdzv`), by TensorFlow's failure
//! domains ([`failure_policy::RestartScope`]), how often one task may be restarted alone, and
//! whether a crash loop stops the job ([`failure_policy::CrashLoop`]).

use failure_policy::{RestartPolicy, RestartScope};

/// The restart flags of `run`.
#[derive(clap::Args, Debug, Clone, Copy)]
pub(crate) struct RestartArgs {
    /// With --local or --rdzv: what a task's failure restarts. `auto` follows TensorFlow's
    /// strategy, told by the jobs (parameter servers, `ps`, mean ParameterServerStrategy):
    /// there a worker or the chief is restarted alone, in place (same index, address and
    /// TF_CONFIG; the coordinator re-queues the lost worker's steps and waits for it at its
    /// address), and a parameter server with the chief (its variables are gone; the chief
    /// restores them from its checkpoint); without, MultiWorkerMirroredStrategy, any
    /// training task's failure restarts every task (with --rdzv: the round; --local stops
    /// the job). The evaluator is outside training: restarted alone under both. `task`
    /// restarts every failed task alone whatever the strategy (a warning says why that will
    /// not help MultiWorkerMirroredStrategy); `round`: every failure restarts everything
    /// (torchrun's model; --local stops the job). With --rdzv, a parameter server restarts
    /// in place on its host and the chief in place on its own (the rendezvous asks the
    /// chief's host); a layout without a chief restarts the round.
    #[arg(
        long,
        value_name = "SCOPE",
        default_value = "auto",
        requires = "launcher"
    )]
    pub(crate) restart_scope: RestartScope,
    /// With --local or --rdzv: how many times one task may be restarted alone (in place) in
    /// a round; the failure past it is the round's (--rdzv: it ends the round and counts
    /// against --max-restarts; --local: it fails the job), and the error says so. Planned
    /// exits (42, 143: TensorFlow's PreemptionCheckpointHandler saved and exited) are not
    /// counted. 10 by default: ParameterServerStrategy waits up to an hour for a lost
    /// worker, so restarting one is cheap, but a task failing ten times in one round is
    /// more likely its host's fault (or the program's) than chance.
    #[arg(long, value_name = "N", default_value = "10", value_parser = at_least_one, allow_hyphen_values = true, requires = "launcher")]
    pub(crate) max_task_restarts: u32,
    /// With --local or --rdzv: keep restarting a crash loop. By default a failure the
    /// program raised (a non-zero exit or a fault signal, not a kill from outside) whose
    /// signature (its status and the last line of its stderr, numbers masked) recurs on
    /// another host, or twice in a row on one host with no progress in between (no output
    /// past its first 30 s, no `tfcluster.progress()`), stops the job at once, naming the
    /// signature and the hosts, rather than spending every restart on the same traceback.
    #[arg(long, requires = "launcher")]
    pub(crate) allow_crash_loops: bool,
}

impl RestartArgs {
    /// The policy the flags say.
    pub(crate) fn policy(&self) -> RestartPolicy {
        RestartPolicy {
            scope: self.restart_scope,
            max_task_restarts: self.max_task_restarts,
            allow_crash_loops: self.allow_crash_loops,
        }
    }
}

/// A count of one or more, for `--max-task-restarts`.
fn at_least_one(text: &str) -> Result<u32, String> {
    match text.parse::<u32>() {
        Ok(0) => {
            Err("0 restarts a failed task never: say so with --restart-scope round instead".into())
        }
        Ok(n) => Ok(n),
        Err(_) => Err(format!("{text:?} is not a count (1 or more)")),
    }
}

#[cfg(test)]
mod tests {
    use super::at_least_one;

    #[test]
    fn zero_and_negative_bounds_are_refused_with_a_way_out() {
        assert_eq!(at_least_one("3"), Ok(3));
        assert!(
            at_least_one("0")
                .unwrap_err()
                .contains("--restart-scope round")
        );
        assert_eq!(
            at_least_one("-1").unwrap_err(),
            "\"-1\" is not a count (1 or more)"
        );
    }
}
