//! What every source of one cloud says now, and the one notice the watcher publishes: the
//! departure with the nearest deadline, else a rebalance recommendation. Each change is
//! logged once, with the kind, the deadline and where it was read; a source that fails says
//! so once, and again only when what fails changes or it recovers.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::SystemTime;

use tokio::sync::watch;

use crate::{Cloud, Notice};

/// The notices of one cloud's sources, and the published one.
pub(crate) struct Board {
    cloud: Cloud,
    sources: Mutex<BTreeMap<&'static str, Notice>>,
    published: watch::Sender<Option<Notice>>,
}

impl Board {
    pub(crate) fn new(cloud: Cloud) -> (Self, watch::Receiver<Option<Notice>>) {
        let (published, notices) = watch::channel(None);
        let board = Self {
            cloud,
            sources: Mutex::new(BTreeMap::new()),
            published,
        };
        (board, notices)
    }

    /// Source `source` now says `notice` (`None`: nothing, or withdrawn).
    pub(crate) fn set(&self, source: &'static str, notice: Option<Notice>) {
        let mut sources = self.sources.lock().unwrap_or_else(|e| e.into_inner());
        let before = sources.get(source).cloned();
        if before == notice {
            return;
        }
        match &notice {
            Some(notice) => {
                let now = SystemTime::now();
                let left = notice.remaining(now).map(|d| d.as_secs());
                let passed = notice.deadline.is_some_and(|d| d <= now);
                tracing::warn!(
                    cloud = %notice.cloud, kind = %notice.kind, source, detail = %notice.detail,
                    deadline_in_s = ?left, deadline_passed = passed, "cloud notice"
                );
                sources.insert(source, notice.clone());
            }
            None => {
                tracing::info!(cloud = %self.cloud, source, "cloud notice withdrawn");
                sources.remove(source);
            }
        }
        let urgent = most_urgent(sources.values());
        self.published.send_if_modified(|published| {
            let changed = *published != urgent;
            *published = urgent;
            changed
        });
    }
}

/// The departure with the nearest deadline (one without a deadline last), else any notice.
fn most_urgent<'a>(notices: impl Iterator<Item = &'a Notice>) -> Option<Notice> {
    notices
        .min_by_key(|n| (!n.is_departure(), n.deadline.is_none(), n.deadline))
        .cloned()
}

/// A source's trouble, said once: a failure is logged when it is new or differs from the
/// last, a recovery when there was one.
pub(crate) struct Trouble {
    cloud: Cloud,
    source: &'static str,
    last: Option<String>,
}

impl Trouble {
    pub(crate) fn new(cloud: Cloud, source: &'static str) -> Self {
        Self {
            cloud,
            source,
            last: None,
        }
    }

    /// It failed with `problem`; the job runs on regardless.
    pub(crate) fn failed(&mut self, problem: String) {
        if self.last.as_ref() != Some(&problem) {
            tracing::warn!(
                cloud = %self.cloud, source = self.source, %problem,
                "cannot read the cloud's notices; the job runs on, and this is said again only if it changes"
            );
            self.last = Some(problem);
        }
    }

    /// It answered as expected.
    pub(crate) fn ok(&mut self) {
        if self.last.take().is_some() {
            tracing::info!(cloud = %self.cloud, source = self.source, "the cloud's notices are readable again");
        }
    }
}

/// `text` quoted for a log line: whole when short, its start when long.
pub(crate) fn quote(text: &str) -> String {
    cluster_spec::__private::quote::quote(text, 0)
}

/// `error` and its causes on one line.
pub(crate) fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    cluster_spec::__private::error_chain::Chain(error).to_string()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::NoticeKind;

    fn notice(kind: NoticeKind, deadline_s: Option<u64>) -> Notice {
        Notice {
            cloud: Cloud::Aws,
            kind,
            deadline: deadline_s.map(|s| SystemTime::UNIX_EPOCH + Duration::from_secs(s)),
            source: "test",
            event_id: None,
            detail: String::new(),
        }
    }

    #[test]
    fn the_nearest_departure_is_published_and_a_withdrawal_clears_it() {
        let (board, notices) = Board::new(Cloud::Aws);
        board.set("rebalance", Some(notice(NoticeKind::Rebalance, None)));
        assert_eq!(
            notices.borrow().as_ref().unwrap().kind,
            NoticeKind::Rebalance
        );
        board.set(
            "scheduled",
            Some(notice(NoticeKind::Maintenance, Some(900))),
        );
        board.set("spot", Some(notice(NoticeKind::Preemption, Some(120))));
        assert_eq!(
            notices.borrow().as_ref().unwrap().kind,
            NoticeKind::Preemption
        );
        board.set("spot", None);
        assert_eq!(
            notices.borrow().as_ref().unwrap().kind,
            NoticeKind::Maintenance
        );
        board.set("scheduled", None);
        board.set("rebalance", None);
        assert_eq!(*notices.borrow(), None);
    }

    #[test]
    fn long_answers_are_quoted_in_part() {
        assert_eq!(quote("TRUE"), "\"TRUE\"");
        let long = "x".repeat(100_000);
        assert!(quote(&long).ends_with("\" (100000 bytes)") && quote(&long).len() < 300);
    }
}
