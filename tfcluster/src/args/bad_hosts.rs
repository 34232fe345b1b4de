//! `--bad-host-failures`, `--bad-host-window`, `--bad-host-cooldown`, `--health-check` and
//! `--health-check-timeout`: which hosts `run --rdzv` leaves out of its rounds, a host whose
//! tasks keep failing ([`elastic::BadHostPolicy`], part of the job's config) or one that fails
//! its own check ([`launcher::HealthCheck`], this host's alone).

use std::time::Duration;

use elastic::BadHostPolicy;
use launcher::HealthCheck;

/// The bad-host flags of `run --rdzv`.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct BadHostArgs {
    /// With --rdzv: a host whose tasks failed K times within --bad-host-window, while no
    /// other host's failed in it, is set aside: the next rounds form without it (while the
    /// others still make --nodes MIN; otherwise the round waits for it) until
    /// --bad-host-cooldown has passed, twice as long each time it is set aside again (at
    /// most a day). Planned exits do not count; a crash loop (the same failure elsewhere
    /// too) is the program's and stops the job instead. Shown by `tfcluster status`, logged
    /// with the reason, counted in tfcluster_rendezvous_hosts_set_aside_total. Every host
    /// must give the same values (they are part of the job's config).
    #[arg(long, value_name = "K", default_value = "3", value_parser = at_least_one, allow_hyphen_values = true, requires = "rdzv")]
    bad_host_failures: u32,
    /// With --rdzv: the window --bad-host-failures counts failures in.
    #[arg(long, value_name = "DUR", default_value = "10m", value_parser = positive, allow_hyphen_values = true, requires = "rdzv")]
    bad_host_window: Duration,
    /// With --rdzv: how long a host is set aside the first time.
    #[arg(long, value_name = "DUR", default_value = "5m", value_parser = positive, allow_hyphen_values = true, requires = "rdzv")]
    bad_host_cooldown: Duration,
    /// With --rdzv: a command (run with `sh -c`) this host must pass before each join, e.g.
    /// `nvidia-smi` or a short TensorFlow op on the GPU. While it fails (a non-zero status,
    /// or no end within --health-check-timeout: it is killed) the host stays out of the job,
    /// leaving it if it was in, says why, and runs it again every 10 s; it joins once it
    /// passes. A command that does not exist (status 127) fails the agent at its start.
    #[arg(long, value_name = "CMD", requires = "rdzv")]
    health_check: Option<String>,
    /// With --health-check: how long the check may run before it is killed and has failed.
    #[arg(long, value_name = "DUR", default_value = "60s", value_parser = positive, allow_hyphen_values = true, requires = "health_check")]
    health_check_timeout: Duration,
}

impl BadHostArgs {
    /// The job's rule for setting hosts aside.
    pub(crate) fn policy(&self) -> BadHostPolicy {
        BadHostPolicy {
            failures: self.bad_host_failures,
            window: self.bad_host_window,
            cooldown: self.bad_host_cooldown,
        }
    }

    /// This host's health check, when it has one.
    pub(crate) fn health_check(&self) -> Option<HealthCheck> {
        self.health_check
            .as_ref()
            .map(|command| HealthCheck::new(command, self.health_check_timeout))
    }
}

/// A count of one or more.
fn at_least_one(text: &str) -> Result<u32, String> {
    match text.parse::<u32>() {
        Ok(0) => Err("0 failures would set every host aside at once: give 1 or more".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("{text:?} is not a count (1 or more)")),
    }
}

/// A duration above zero.
fn positive(text: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(text)
        .map_err(|e| format!("{e} (a duration such as 60s or 5m)"))?;
    if d.is_zero() {
        return Err(format!(
            "{text:?}: give a duration above zero, such as 60s or 5m"
        ));
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::{at_least_one, positive};

    #[test]
    fn zero_and_negative_values_are_refused_naming_them() {
        assert_eq!(at_least_one("2"), Ok(2));
        assert!(at_least_one("0").unwrap_err().contains("every host aside"));
        assert!(
            at_least_one("-3")
                .unwrap_err()
                .contains("\"-3\" is not a count")
        );
        assert!(positive("0s").unwrap_err().contains("above zero"));
        assert!(positive("-5m").unwrap_err().contains("a duration such as"));
        assert_eq!(positive("90s"), Ok(std::time::Duration::from_secs(90)));
    }
}
