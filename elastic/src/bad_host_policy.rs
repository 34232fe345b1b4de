//! [`BadHostPolicy`]: when a host whose tasks keep failing is set aside, and for how long.

use std::fmt;
use std::time::Duration;

use crate::error::duration;

/// When a host is set aside: its tasks failed `failures` times within `window` while no
/// other host's failed in it; it is then left out of the next rounds for `cooldown`, doubled
/// each time it is set aside again. Part of a job's [`JobConfig`](crate::JobConfig), so every
/// agent applies the same.
///
/// The defaults ([`Default`]): 3 failures within 10 minutes, a cooldown of 5 minutes. Fewer
/// than three could be bad luck (a transient error and the failure it caused on a peer); ten
/// minutes spans a few restarts of a job (each about half a minute to a minute); five
/// minutes gives a passing problem (a stuck GPU process, a disk being cleaned) time to clear,
/// and the doubling makes a lasting one cost one attempt per period, ever rarer.
///
/// ```
/// use std::time::Duration;
///
/// let policy = elastic::BadHostPolicy::default();
/// assert_eq!(policy.cooldown_for(0), Duration::from_secs(300));
/// assert_eq!(policy.cooldown_for(2), Duration::from_secs(1200));
/// assert_eq!(
///     policy.to_string(),
///     "a host set aside after 3 failures within 600.0 s, for 300.0 s (doubling)"
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BadHostPolicy {
    /// How many failures of a host's tasks within `window` set it aside (at least 1).
    pub failures: u32,
    /// The window failures are counted in.
    pub window: Duration,
    /// How long a host is set aside the first time; each time after, twice as long.
    pub cooldown: Duration,
}

/// The longest a host is set aside, however often: a day.
const MAX_COOLDOWN: Duration = Duration::from_secs(24 * 3600);

impl Default for BadHostPolicy {
    fn default() -> Self {
        Self {
            failures: 3,
            window: Duration::from_secs(600),
            cooldown: Duration::from_secs(300),
        }
    }
}

impl BadHostPolicy {
    /// How long a host set aside `times` times before is set aside now: the cooldown doubled
    /// `times` times, at most a day.
    pub fn cooldown_for(&self, times: u32) -> Duration {
        let factor = 1u32.checked_shl(times.min(31)).unwrap_or(u32::MAX);
        self.cooldown.saturating_mul(factor).min(MAX_COOLDOWN)
    }
}

impl fmt::Display for BadHostPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "a host set aside after {} failures within {}, for {} (doubling)",
            self.failures,
            duration(self.window),
            duration(self.cooldown)
        )
    }
}
