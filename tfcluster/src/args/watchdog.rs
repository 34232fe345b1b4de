//! `run`'s `--watchdog DUR` (for `--local` and `--rdzv`): how long a task may show no
//! progress before it is hung, parsed at the edge so that zero is refused, naming the flag.

use std::time::Duration;

/// The watchdog's flags.
#[derive(clap::Args, Debug, Clone, Copy)]
pub(crate) struct WatchdogArgs {
    /// With --local or --rdzv: a task that shows no progress for DUR is hung (off by
    /// default). Progress is any output of the task (a line, or a progress bar redrawn), or
    /// a touch of the file named by its TFCLUSTER_PROGRESS_FILE (set with --watchdog; Python:
    /// `tfcluster.progress()`, a no-op outside tfcluster), for programs quiet for long; a
    /// SIGSTOPped task makes none. A hung task is asked for its Python stack (SIGABRT,
    /// which the PYTHONFAULTHANDLER=1 every task gets turns into every thread's stack on its
    /// stderr; SIGCONT so a stopped task can print it), killed (SIGKILL to its process group
    /// once its stderr closed, at most 2 s later) and reported as a failure, "hung: no
    /// progress for DUR", with the stack: in the error (--local), or as the round's failure,
    /// the first-failure report and --error-file (--rdzv), where it counts against
    /// --max-restarts as any failure. A task is first judged --watchdog-start after it
    /// started, so choose DUR from its quiet stretches after that: a few times its longest
    /// step or checkpoint, e.g. `--watchdog 60s` for real training jobs that print or call
    /// `tfcluster.progress()` each step, down to 5s for short steps.
    // A negative value is taken as the flag's value, so its error names the flag.
    #[arg(
        long,
        value_name = "DUR",
        value_parser = watchdog_period,
        allow_hyphen_values = true,
        requires = "launcher"
    )]
    pub(crate) watchdog: Option<Duration>,
    /// With --watchdog: how long after its start a task is first judged. A start may be
    /// quiet far longer than a step (TensorFlow's import; MultiWorkerMirroredStrategy waiting
    /// for its slowest peer, up to about 50 s in a cold start of six on a loaded 2-core
    /// machine; the first tf.function trace), so a short --watchdog only applies after it; a
    /// task hung in its start is found at its end.
    #[arg(long, value_name = "DUR", default_value = "60s", value_parser = humantime::parse_duration, requires = "watchdog")]
    pub(crate) watchdog_start: Duration,
}

/// A duration as humantime writes them (`5s`, `1m 30s`), more than zero: a watchdog of zero
/// would find every task hung at once.
fn watchdog_period(s: &str) -> Result<Duration, String> {
    let period =
        humantime::parse_duration(s).map_err(|e| format!("{e} (a duration such as 60s or 5m)"))?;
    if period.is_zero() {
        return Err(format!(
            "{s:?} is no watchdog period: a task shows no progress for zero seconds at once; \
             give a duration such as 60s, or leave the flag out for no watchdog"
        ));
    }
    Ok(period)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    /// `run`'s shape: the watchdog requires a launcher.
    #[derive(Parser)]
    #[command(group = clap::ArgGroup::new("launcher").args(["local"]))]
    struct Run {
        #[arg(long)]
        local: bool,
        #[command(flatten)]
        args: WatchdogArgs,
    }

    fn parse(flags: &[&str]) -> Result<Option<Duration>, String> {
        let line = [&["run", "--local"], flags].concat();
        Run::try_parse_from(line)
            .map(|run| run.args.watchdog)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn zero_negative_and_garbage_periods_are_refused_naming_the_flag() {
        assert_eq!(parse(&[]), Ok(None));
        assert_eq!(
            parse(&["--watchdog", "1m 30s"]),
            Ok(Some(Duration::from_secs(90)))
        );
        for (value, why) in [
            ("0", "\"0\" is no watchdog period"),
            ("0s", "\"0s\" is no watchdog period"),
            ("-5s", "expected number at 0"),
            ("-1", "expected number at 0"),
            ("soon", "expected number at 0"),
            ("5", "time unit needed"),
        ] {
            let e = parse(&[&format!("--watchdog={value}")]).unwrap_err();
            assert!(
                e.contains(&format!("invalid value '{value}' for '--watchdog <DUR>'"))
                    && e.contains(why),
                "{value}: {e}"
            );
        }
        // A negative value, given apart, is still the flag's.
        let e = parse(&["--watchdog", "-5s"]).unwrap_err();
        assert!(
            e.contains("invalid value '-5s' for '--watchdog <DUR>'"),
            "{e}"
        );
        // Without --local or --rdzv there is no task to watch.
        let e = Run::try_parse_from(["run", "--watchdog", "5s"])
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("--watchdog <DUR>") && e.contains("--local"),
            "{e}"
        );
    }
}
