//! [`Notice`]: what a cloud announced about this VM, and when it happens.

use std::fmt;
use std::time::{Duration, SystemTime};

/// The cloud a notice came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Cloud {
    /// Google Compute Engine: the metadata server.
    Gce,
    /// Amazon EC2: the instance metadata service (IMDSv2).
    Aws,
    /// Microsoft Azure: the Instance Metadata Service's Scheduled Events.
    Azure,
}

impl Cloud {
    /// `gce`, `aws`, `azure`: the flag's word and the metrics' `cloud` label.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Gce => "gce",
            Self::Aws => "aws",
            Self::Azure => "azure",
        }
    }
}

impl fmt::Display for Cloud {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What is coming.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NoticeKind {
    /// A spot or preemptible VM is being taken back: GCE `instance/preempted`, EC2
    /// `spot/instance-action`, Azure `Preempt`.
    Preemption,
    /// The VM is being stopped or rebooted for maintenance: GCE
    /// `TERMINATE_ON_HOST_MAINTENANCE`, EC2 scheduled events, Azure `Reboot`/`Redeploy`.
    Maintenance,
    /// The VM is being deleted: Azure `Terminate`.
    Termination,
    /// The VM is at elevated risk of interruption, with no deadline: EC2's rebalance
    /// recommendation. Not a departure unless the caller chooses to treat it as one.
    Rebalance,
}

impl NoticeKind {
    /// `preemption`, `maintenance`, `termination`, `rebalance`: the metrics' `kind` label.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Preemption => "preemption",
            Self::Maintenance => "maintenance",
            Self::Termination => "termination",
            Self::Rebalance => "rebalance",
        }
    }
}

impl fmt::Display for NoticeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A notice from a cloud about this VM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// Who said it.
    pub cloud: Cloud,
    /// What is coming.
    pub kind: NoticeKind,
    /// When the VM goes (or reboots): the cloud's own time where it gives one (EC2, Azure),
    /// else when the notice was seen plus the cloud's documented warning (GCE); `None` for a
    /// rebalance recommendation.
    pub deadline: Option<SystemTime>,
    /// Where it was read, for logs: `instance/preempted`, `spot/instance-action`, ...
    pub source: &'static str,
    /// The cloud's id of the event, where it has one (Azure's `EventId`, which an
    /// acknowledgement names; EC2's scheduled `EventId`).
    pub event_id: Option<String>,
    /// The cloud's words, for logs: `TERMINATE_ON_HOST_MAINTENANCE`, `terminate`,
    /// `system-reboot`, `Preempt`.
    pub detail: String,
}

impl Notice {
    /// Whether the VM leaves (or reboots) at the deadline: every kind but a rebalance
    /// recommendation.
    pub fn is_departure(&self) -> bool {
        self.kind != NoticeKind::Rebalance
    }

    /// How long until the deadline, from `now`: zero when it has passed, `None` without one.
    pub fn remaining(&self, now: SystemTime) -> Option<Duration> {
        self.deadline
            .map(|deadline| deadline.duration_since(now).unwrap_or_default())
    }

    /// When to act so the job is done `lead` before the deadline: the deadline less `lead`,
    /// or `now` when that has passed; `None` without a deadline.
    pub fn act_at(&self, lead: Duration, now: SystemTime) -> Option<SystemTime> {
        let deadline = self.deadline?;
        Some(
            deadline
                .checked_sub(lead)
                .filter(|t| *t > now)
                .unwrap_or(now),
        )
    }
}

impl fmt::Display for Notice {
    /// `gce preemption (instance/preempted: TRUE), deadline in 28 s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} ({}: {})",
            self.cloud, self.kind, self.source, self.detail
        )?;
        match self.remaining(SystemTime::now()) {
            Some(left) => write!(f, ", deadline in {} s", left.as_secs()),
            None => f.write_str(", no deadline"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notice(deadline: Option<SystemTime>) -> Notice {
        Notice {
            cloud: Cloud::Aws,
            kind: NoticeKind::Preemption,
            deadline,
            source: "spot/instance-action",
            event_id: None,
            detail: "terminate".into(),
        }
    }

    #[test]
    fn the_act_time_is_the_lead_before_the_deadline_and_never_past() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let far = notice(Some(now + Duration::from_secs(900)));
        assert_eq!(
            far.act_at(Duration::from_secs(60), now),
            Some(now + Duration::from_secs(840))
        );
        let near = notice(Some(now + Duration::from_secs(20)));
        assert_eq!(near.act_at(Duration::from_secs(60), now), Some(now));
        let past = notice(Some(now - Duration::from_secs(5)));
        assert_eq!(past.act_at(Duration::ZERO, now), Some(now));
        assert_eq!(past.remaining(now), Some(Duration::ZERO));
        assert_eq!(notice(None).act_at(Duration::ZERO, now), None);
    }

    #[test]
    fn a_rebalance_is_no_departure() {
        let mut n = notice(None);
        assert!(n.is_departure());
        n.kind = NoticeKind::Rebalance;
        assert!(!n.is_departure());
        assert!(n.to_string().ends_with("no deadline"), "{n}");
    }
}
