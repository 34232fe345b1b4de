//! [`WatchOptions`]: how often, how patiently and how coalesced a watch follows its source.

use std::time::Duration;

/// How a watch follows its source. Every setting has a default ([`WatchOptions::default`]);
/// set them with the `with_*` methods, read them with the methods of the same bare name.
///
/// ```
/// use std::time::Duration;
/// use cluster_resolver::watch::WatchOptions;
///
/// let options = WatchOptions::default().with_interval(Duration::from_secs(5));
/// assert_eq!(options.interval(), Duration::from_secs(5));
/// assert_eq!(options.coalesce(), Duration::from_millis(50));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct WatchOptions {
    /// See [`interval`](Self::interval).
    pub(crate) interval: Duration,
    /// See [`coalesce`](Self::coalesce).
    pub(crate) coalesce: Duration,
    /// See [`call_timeout`](Self::call_timeout).
    pub(crate) call_timeout: Duration,
    /// See [`backoff_first`](Self::backoff_first).
    pub(crate) backoff_first: Duration,
    /// See [`backoff_max`](Self::backoff_max).
    pub(crate) backoff_max: Duration,
}

impl Default for WatchOptions {
    fn default() -> Self {
        Self {
            interval: Duration::from_secs(1),
            coalesce: Duration::from_millis(50),
            call_timeout: Duration::from_secs(30),
            backoff_first: Duration::from_millis(500),
            backoff_max: Duration::from_secs(30),
        }
    }
}

impl WatchOptions {
    /// Sets [`interval`](Self::interval).
    pub fn with_interval(mut self, interval: Duration) -> Self {
        self.interval = interval;
        self
    }

    /// Sets [`coalesce`](Self::coalesce).
    pub fn with_coalesce(mut self, coalesce: Duration) -> Self {
        self.coalesce = coalesce;
        self
    }

    /// Sets [`call_timeout`](Self::call_timeout).
    pub fn with_call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = timeout;
        self
    }

    /// Sets [`backoff_first`](Self::backoff_first) and [`backoff_max`](Self::backoff_max).
    pub fn with_backoff(mut self, first: Duration, max: Duration) -> Self {
        self.backoff_first = first;
        self.backoff_max = max;
        self
    }

    /// Between two polls of a resolver; for a file, between two safety re-reads (in case an
    /// event was missed). 1 s by default.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// How long a burst of changes (events of one file, pods of one rollout) is collected
    /// before the source is read once: 50 ms by default.
    pub fn coalesce(&self) -> Duration {
        self.coalesce
    }

    /// The deadline of each read of the source (a `cluster_spec()` call, a file read): 30 s.
    pub fn call_timeout(&self) -> Duration {
        self.call_timeout
    }

    /// The first pause after a failed read; pauses double while it keeps failing. 500 ms.
    pub fn backoff_first(&self) -> Duration {
        self.backoff_first
    }

    /// The longest pause after failed reads: 30 s.
    pub fn backoff_max(&self) -> Duration {
        self.backoff_max
    }

    /// The back-off these options describe.
    pub(crate) fn backoff(&self) -> crate::backoff::Backoff {
        crate::backoff::Backoff::new(self.backoff_first, self.backoff_max)
    }
}
