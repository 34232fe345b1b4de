//! [`HostNotice`]: a cloud's notice for a node's host as the rendezvous carries it — in the
//! node's heartbeats (so `tfcluster status` shows it) and in its leave (so the round's end is
//! planned and the host stays out until the deadline) — with the bounds the rendezvous keeps
//! whatever a caller sends.

use std::fmt;
use std::time::{Duration, SystemTime};

use cloud_notices::Notice;

/// The longest deadline the rendezvous keeps: a notice further ahead (EC2's scheduled
/// maintenance may be weeks off) is shown as this far.
pub(crate) const MAX_NOTICE_AHEAD: Duration = Duration::from_secs(30 * 24 * 3600);

/// The longest a departure keeps its host out of the job's rounds: past it, a host that a
/// member named in a notice (true or not) may be in a round again.
pub(crate) const MAX_DEPARTURE_ASIDE: Duration = Duration::from_secs(3600);

/// The longest `cloud` and `kind` the rendezvous keeps, and the longest `detail`.
const MAX_WORD: usize = 32;
const MAX_DETAIL: usize = 256;

/// A cloud's notice that a node's host goes away (a spot preemption, a maintenance event, a
/// termination) or is at risk (a rebalance recommendation, which has no deadline).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HostNotice {
    /// `gce`, `aws` or `azure`.
    pub cloud: String,
    /// `preemption`, `maintenance`, `termination` or `rebalance`.
    pub kind: String,
    /// How long until the deadline, from when the notice was sent or read; `None`: no
    /// deadline.
    pub remaining: Option<Duration>,
    /// What the cloud said.
    pub detail: String,
}

impl HostNotice {
    /// `notice` as of `now`.
    pub fn from_notice(notice: &Notice, now: SystemTime) -> Self {
        Self {
            cloud: notice.cloud.as_str().to_owned(),
            kind: notice.kind.as_str().to_owned(),
            remaining: notice.remaining(now),
            detail: notice.detail.clone(),
        }
    }

    /// Whether the host leaves at the deadline: every notice with one.
    pub fn is_departure(&self) -> bool {
        self.remaining.is_some()
    }

    /// The notice within the rendezvous's bounds: words and detail cut at a character's
    /// end, the deadline no further than [`MAX_NOTICE_AHEAD`].
    pub(crate) fn bounded(&self) -> Self {
        Self {
            cloud: cut(&self.cloud, MAX_WORD),
            kind: cut(&self.kind, MAX_WORD),
            remaining: self.remaining.map(|r| r.min(MAX_NOTICE_AHEAD)),
            detail: cut(&self.detail, MAX_DETAIL),
        }
    }
}

/// `s`'s first `max` bytes or fewer, ending where a character does.
fn cut(s: &str, max: usize) -> String {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_owned()
}

impl fmt::Display for HostNotice {
    /// `gce preemption notice (TRUE), deadline in 28 s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} notice", self.cloud, self.kind)?;
        if !self.detail.is_empty() {
            write!(f, " ({})", self.detail)?;
        }
        match self.remaining {
            Some(left) => write!(f, ", deadline in {} s", left.as_secs()),
            None => f.write_str(", no deadline"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_caller_sends_is_bounded() {
        let sent = HostNotice {
            cloud: "é".repeat(40),
            kind: "preemption".into(),
            remaining: Some(Duration::from_secs(365 * 24 * 3600)),
            detail: "x".repeat(10_000),
        };
        let kept = sent.bounded();
        assert_eq!(kept.cloud, "é".repeat(16));
        assert_eq!(kept.detail.len(), MAX_DETAIL);
        assert_eq!(kept.remaining, Some(MAX_NOTICE_AHEAD));
        assert_eq!(kept.kind, "preemption");
    }

    #[test]
    fn it_reads_as_the_cloud_said_it() {
        let notice = HostNotice {
            cloud: "gce".into(),
            kind: "preemption".into(),
            remaining: Some(Duration::from_millis(28_900)),
            detail: "TRUE".into(),
        };
        assert_eq!(
            notice.to_string(),
            "gce preemption notice (TRUE), deadline in 28 s"
        );
        let rebalance = HostNotice {
            remaining: None,
            detail: String::new(),
            ..notice
        };
        assert!(!rebalance.is_departure());
        assert_eq!(rebalance.to_string(), "gce preemption notice, no deadline");
    }
}
