//! What a client takes from a rendezvous, trusted no further than its bounds: every answer
//! ([`Received::vetted`]) has its durations, counts and strings checked against sane bounds
//! (a [`WireError`] naming the field and value, never a panic later), and every text meant
//! for people cleaned by [`clean_text`], the one function that makes network text safe to
//! print or write (`--error-file`). Either backend's answers pass here: a rendezvous of
//! another version, a hostile one, or an etcd record another agent wrote.

use std::time::Duration;

use crate::host_notice::HostNotice;
use crate::job_status::{
    HostAside, JobPhase, JobStatus, JobSummary, MAX_LISTED, NodeStatus, TaskRestarts,
};
use crate::outcome::{Failure, JobDone, RoundEnd, RoundStatus, TaskStatus};
use crate::rendezvous::registry::MAX_STDERR_TAIL;
use crate::rendezvous::{Found, Joined, Pending, Reported};
use crate::watched_round::WatchedRound;
use crate::{MAX_NODES, WireError};

/// The shortest heartbeat timeout a client accepts: shorter, the heartbeats (a third of it)
/// would be a flood.
pub(crate) const MIN_HEARTBEAT_TIMEOUT: Duration = Duration::from_millis(100);
/// The longest: past it a node that died would hold its round for hours (and a timeout
/// near `u64::MAX` ms panics tonic's deadline arithmetic).
pub(crate) const MAX_HEARTBEAT_TIMEOUT: Duration = Duration::from_secs(3600);
/// The longest id or host accepted (the registry's own limits: ids 128, hosts 253 bytes).
/// The longest churn refill or wait a rendezvous may report (its own are minutes).
const MAX_CHURN_WAIT: Duration = Duration::from_secs(7 * 24 * 3600);
const MAX_ID: usize = 128;
const MAX_HOST: usize = 253;
/// The longest text kept for people (details, notes, a stderr tail): the registry's
/// [`MAX_STDERR_TAIL`].
pub(crate) const MAX_TEXT: usize = MAX_STDERR_TAIL;

/// `text` from the network for one line ([`clean_text`], its line breaks and tabs made
/// spaces): a message printed or logged in a line (a refusal's `grpc-message`, a task's
/// error) can forge no other line.
pub(crate) fn clean_line(text: &str, max: usize) -> String {
    clean_text(text, max).replace(['\n', '\t'], " ")
}

/// `text` from the network, safe to print on a terminal or write to a file: terminal escape
/// sequences (ESC with a CSI `ESC [ … final` or OSC `ESC ] … BEL|ESC \` body, or one more
/// character) removed, and every other control character (C0 but `\n` and `\t`, DEL, C1)
/// removed; then, past `max` bytes, only the last `max` kept (the end of a stderr tail is the
/// part that says why), after a note of how much was cut.
pub(crate) fn clean_text(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max));
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => match chars.next() {
                // CSI: parameters and intermediates up to a final byte in '@'..='~'.
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                // OSC (and DCS, PM, APC): up to BEL or ST (`ESC \`).
                Some(']' | 'P' | '^' | '_') => {
                    while let Some(c) = chars.next() {
                        if c == '\x07' {
                            break;
                        }
                        if c == '\x1b' {
                            chars.next_if_eq(&'\\');
                            break;
                        }
                    }
                }
                _ => {}
            },
            '\n' | '\t' => out.push(c),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    if out.len() <= max {
        return out;
    }
    let mut start = out.len() - max;
    while !out.is_char_boundary(start) {
        start += 1;
    }
    format!("[{start} bytes cut] {}", &out[start..])
}

/// An answer from a rendezvous, checked and cleaned before the client uses it.
pub(crate) trait Received: Sized {
    /// The answer within its bounds, its texts cleaned ([`clean_text`]).
    fn vetted(self) -> Result<Self, WireError>;
}

/// `value` when it is at most `max` bytes with no control character (an id, a host: text
/// that goes into a cluster or a path is refused, not cleaned).
fn plain(field: &'static str, value: String, max: usize) -> Result<String, WireError> {
    if value.len() > max {
        return Err(WireError::TooLong {
            field,
            len: value.len(),
            max,
        });
    }
    if let Some((at, c)) = value.char_indices().find(|(_, c)| c.is_control()) {
        return Err(WireError::Control { field, at, c });
    }
    Ok(value)
}

impl Received for Joined {
    fn vetted(self) -> Result<Self, WireError> {
        let timeout = self.heartbeat_timeout;
        if !(MIN_HEARTBEAT_TIMEOUT..=MAX_HEARTBEAT_TIMEOUT).contains(&timeout) {
            return Err(WireError::OutOfRange {
                field: "the heartbeat timeout",
                value: format!("{} ms", timeout.as_millis()),
                range: format!(
                    "{} ms ..= {} ms",
                    MIN_HEARTBEAT_TIMEOUT.as_millis(),
                    MAX_HEARTBEAT_TIMEOUT.as_millis()
                ),
            });
        }
        Ok(Self {
            node_id: plain("the node id", self.node_id, MAX_ID)?,
            host: plain("the host", self.host, MAX_HOST)?,
            note: clean_text(&self.note, MAX_TEXT),
            round: self.round,
            heartbeat_timeout: timeout,
            secret: self.secret,
        })
    }
}

impl Received for Found {
    fn vetted(self) -> Result<Self, WireError> {
        Ok(match self {
            Self::Pending(p) => Self::Pending(Pending {
                round: p.round,
                waiting: p.waiting,
                detail: clean_text(&p.detail, MAX_TEXT),
            }),
            Self::Done(done) => Self::Done(done.vetted()?),
            Self::Round { round, rank } => {
                check_round(&round)?;
                let members = round.members().len();
                // An observer's round has rank 0 and may have any members; a node's is
                // checked against its own id when the client takes it.
                if rank as usize >= members.max(1) {
                    return Err(WireError::OutOfRange {
                        field: "the rank",
                        value: rank.to_string(),
                        range: format!("0 ..= {}", members.saturating_sub(1)),
                    });
                }
                Self::Round { round, rank }
            }
        })
    }
}

/// A round's members' ids and names within their bounds (their count, ports and addresses
/// are [`WatchedRound::new`]'s to check, as the client decodes it).
fn check_round(round: &WatchedRound) -> Result<(), WireError> {
    if round.members().len() > MAX_NODES as usize {
        return Err(WireError::OutOfRange {
            field: "the member count",
            value: round.members().len().to_string(),
            range: format!("0 ..= {MAX_NODES}"),
        });
    }
    for member in round.members() {
        plain("a member's node id", member.node_id.clone(), MAX_ID)?;
        plain("a member's name", member.name.clone(), MAX_HOST)?;
    }
    Ok(())
}

impl Received for JobDone {
    fn vetted(self) -> Result<Self, WireError> {
        Ok(Self {
            succeeded: self.succeeded,
            detail: clean_text(&self.detail, MAX_TEXT),
            first_failure: self.first_failure.map(Failure::cleaned),
            round: self.round,
        })
    }
}

/// A task's status from the network, its error's text cleaned for one line ([`clean_line`]).
pub(crate) fn clean_status(status: TaskStatus) -> TaskStatus {
    match status {
        TaskStatus::Error(e) => TaskStatus::Error(clean_line(&e, MAX_TEXT)),
        other => other,
    }
}

impl Failure {
    /// Every text of the failure cleaned ([`clean_text`]): names and hosts to their bounds,
    /// the stderr tail to [`MAX_TEXT`].
    fn cleaned(self) -> Self {
        let status = clean_status(self.status);
        Self {
            round: self.round,
            node_id: clean_text(&self.node_id, MAX_ID),
            host: clean_text(&self.host, MAX_HOST),
            name: clean_text(&self.name, MAX_HOST),
            local_task: self.local_task,
            job: clean_text(&self.job, MAX_ID),
            index: self.index,
            status,
            stderr_tail: clean_text(&self.stderr_tail, MAX_TEXT),
        }
    }
}

impl Received for RoundStatus {
    fn vetted(self) -> Result<Self, WireError> {
        Ok(match self {
            Self::Running => Self::Running,
            Self::RestartChief(asks) => Self::RestartChief(asks),
            Self::ServerNotice { notices, notice } => Self::ServerNotice {
                notices,
                notice: notice.map(HostNotice::cleaned),
            },
            Self::Ended(end) => Self::Ended(end.cleaned()),
            Self::JobDone(done) => Self::JobDone(done.vetted()?),
        })
    }
}

impl Received for Reported {
    fn vetted(self) -> Result<Self, WireError> {
        Ok(Self {
            note: clean_text(&self.note, MAX_TEXT),
            ..self
        })
    }
}

impl Received for JobStatus {
    /// An operator prints every text of it: ids and hosts kept plain, the rest cleaned; at
    /// most [`MAX_NODES`] nodes.
    fn vetted(self) -> Result<Self, WireError> {
        if self.nodes.len() > MAX_NODES as usize {
            return Err(WireError::OutOfRange {
                field: "the node count",
                value: self.nodes.len().to_string(),
                range: format!("0 ..= {MAX_NODES}"),
            });
        }
        let phase = match self.phase {
            JobPhase::Forming {
                round,
                waiting,
                detail,
            } => JobPhase::Forming {
                round,
                waiting,
                detail: clean_text(&detail, MAX_TEXT),
            },
            JobPhase::Running(round) => {
                check_round(&round)?;
                JobPhase::Running(round)
            }
            JobPhase::Done(done) => JobPhase::Done(done.vetted()?),
        };
        let nodes = self
            .nodes
            .into_iter()
            .map(|n| {
                Ok(NodeStatus {
                    node_id: plain("a node's id", n.node_id, MAX_ID)?,
                    host: plain("a node's host", n.host, MAX_HOST)?,
                    name: plain("a node's name", n.name, MAX_HOST)?,
                    notice: n.notice.map(HostNotice::cleaned),
                    ..n
                })
            })
            .collect::<Result<Vec<_>, WireError>>()?;
        if self.task_restarts.len() > crate::MAX_TASKS as usize {
            return Err(WireError::OutOfRange {
                field: "the restarted task count",
                value: self.task_restarts.len().to_string(),
                range: format!("0 ..= {}", crate::MAX_TASKS),
            });
        }
        let task_restarts = self
            .task_restarts
            .into_iter()
            .map(|t| {
                Ok(TaskRestarts {
                    job: plain("a restarted task's job", t.job, MAX_ID)?,
                    last_failure: t.last_failure.cleaned(),
                    ..t
                })
            })
            .collect::<Result<Vec<_>, WireError>>()?;
        if self.hosts_aside.len() > MAX_NODES as usize {
            return Err(WireError::OutOfRange {
                field: "the count of hosts set aside",
                value: self.hosts_aside.len().to_string(),
                range: format!("0 ..= {MAX_NODES}"),
            });
        }
        // The churn refill and wait are minutes.
        let longest = self.churn.refill.max(self.churn.wait.unwrap_or_default());
        if longest > MAX_CHURN_WAIT {
            return Err(WireError::OutOfRange {
                field: "the membership budget's refill or wait",
                value: format!("{} ms", longest.as_millis()),
                range: format!("0 ..= {} ms", MAX_CHURN_WAIT.as_millis()),
            });
        }
        let hosts_aside = self
            .hosts_aside
            .into_iter()
            .map(|a| {
                Ok(HostAside {
                    host: plain("a host set aside", a.host, MAX_HOST)?,
                    reason: clean_text(&a.reason, MAX_TEXT),
                    ..a
                })
            })
            .collect::<Result<Vec<_>, WireError>>()?;
        Ok(Self {
            rdzv_id: plain("the rendezvous id", self.rdzv_id, MAX_ID)?,
            phase,
            nodes,
            last_failure: self.last_failure.map(Failure::cleaned),
            last_end: self.last_end.map(RoundEnd::cleaned),
            task_restarts,
            hosts_aside,
            ..self
        })
    }
}

impl HostNotice {
    /// A notice from the network ([`clean_line`]), within the rendezvous's bounds.
    pub(crate) fn cleaned(self) -> Self {
        Self {
            cloud: clean_line(&self.cloud, MAX_TEXT),
            kind: clean_line(&self.kind, MAX_TEXT),
            detail: clean_line(&self.detail, MAX_TEXT),
            ..self
        }
        .bounded()
    }
}

impl Received for Vec<JobSummary> {
    /// At most [`MAX_LISTED`] jobs, their ids plain.
    fn vetted(self) -> Result<Self, WireError> {
        if self.len() > MAX_LISTED {
            return Err(WireError::OutOfRange {
                field: "the job count",
                value: self.len().to_string(),
                range: format!("0 ..= {MAX_LISTED}"),
            });
        }
        self.into_iter()
            .map(|j| {
                Ok(JobSummary {
                    rdzv_id: plain("a job's rendezvous id", j.rdzv_id, MAX_ID)?,
                    ..j
                })
            })
            .collect()
    }
}

impl RoundEnd {
    /// Its detail cleaned ([`clean_text`]).
    fn cleaned(self) -> Self {
        Self {
            detail: clean_text(&self.detail, MAX_TEXT),
            ..self
        }
    }
}

impl Received for () {
    fn vetted(self) -> Result<Self, WireError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_controls_are_removed() {
        assert_eq!(
            clean_text(
                "a\x1b[2Jb\x1b[31;1mc\x1b]0;title\x07d\x1bMe\u{9b}f\x7fg\r\n\th",
                100
            ),
            "abcdef\x7fg\n\th".replace('\x7f', "")
        );
        assert_eq!(clean_text("\x1b]8;;x\x1b\\link", 100), "link");
        assert_eq!(clean_text("ok", 100), "ok");
        // For one line: no line of its own forged, as a task's error a member reports.
        assert_eq!(
            clean_line("spawn failed\x1b[2J\ntfcluster: ok\tdone", 100),
            "spawn failed tfcluster: ok done"
        );
        assert_eq!(
            clean_status(TaskStatus::Error("a\nb".into())),
            TaskStatus::Error("a b".into())
        );
    }

    #[test]
    fn long_text_keeps_its_end() {
        let text = format!("{}end", "x".repeat(15 * 1024 * 1024));
        let clean = clean_text(&text, MAX_TEXT);
        assert!(clean.len() < MAX_TEXT + 32, "{}", clean.len());
        assert!(clean.starts_with(&format!("[{} bytes cut] ", text.len() - MAX_TEXT)));
        assert!(clean.ends_with("end"));
        // A cut never splits a character.
        assert!(clean_text(&"é".repeat(10), 5).ends_with("éé"));
    }

    #[test]
    fn heartbeat_timeouts_out_of_bounds_are_named() {
        let joined = |ms| Joined {
            node_id: "n".into(),
            round: 1,
            note: String::new(),
            host: "h".into(),
            heartbeat_timeout: Duration::from_millis(ms),
            secret: None,
        };
        for ms in [0, 99, 3_600_001, u64::MAX] {
            let err = joined(ms).vetted().unwrap_err();
            assert_eq!(
                err.to_string(),
                format!(
                    "the heartbeat timeout {ms} ms is outside its bounds 100 ms ..= 3600000 ms"
                )
            );
        }
        assert!(joined(100).vetted().is_ok());
        assert!(joined(3_600_000).vetted().is_ok());
    }
}
