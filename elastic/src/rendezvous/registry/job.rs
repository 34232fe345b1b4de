//! A job: its config, its nodes, and its phase — a round forming, a round running, or the
//! job done — with how a running round ends, what a failure costs, and the ends it
//! remembers.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::watch;

use super::bad_hosts::Hosts;
use super::calls::Refusal;
use super::churn::Churn;
use super::formed::FormedRound;
use super::node::{Node, NodeState};
use failure_policy::CrashLoop;

use crate::JobConfig;
use crate::job_status::TaskRestarts;
use crate::outcome::{EndReason, Failure, JobDone, RoundEnd};
use crate::rendezvous::caller::Caller;
use crate::rendezvous::credentials::Digest;

/// Ended rounds remembered per job, so a late heartbeat still learns why its round ended.
const ENDS_KEPT: usize = 32;

#[derive(Debug)]
pub(super) enum Phase {
    /// Nodes are waiting for the next round.
    Forming,
    Running(Arc<FormedRound>),
    Done(JobDone),
}

#[derive(Debug)]
pub(super) struct Job {
    pub(super) id: String,
    /// Drawn when the job is created, so that an observer can tell this job's rounds from
    /// those of another job under the same id.
    pub(super) incarnation: u64,
    pub(super) config: JobConfig,
    /// The hash of the job's token, set by its first join: every call on the job must carry
    /// it (none: an open job).
    pub(super) token: Option<Digest>,
    pub(super) nodes: HashMap<String, Node>,
    pub(super) next_seq: u64,
    pub(super) phase: Phase,
    pub(super) rounds_formed: u64,
    pub(super) restart_count: u32,
    pub(super) ended: VecDeque<RoundEnd>,
    pub(super) first_failure: Option<Failure>,
    /// The latest task failure, for an operator's view of the job.
    pub(super) last_failure: Option<Failure>,
    /// The running round's tasks restarted in place.
    pub(super) task_restarts: Vec<TaskRestarts>,
    /// The chief's in-place restart number of the running round's latest ask that it restart
    /// (for a parameter server restarted on another node), and the highest its node carried
    /// out: while the first is higher, an ask is under way.
    pub(super) chief_asks: u32,
    pub(super) chief_asks_done: u32,
    /// The failures seen one after the other, for a crash loop.
    pub(super) crash_loop: CrashLoop,
    /// The hosts whose tasks failed, and those set aside.
    pub(super) hosts: Hosts,
    /// When rounds recently ended for a host joining or leaving.
    pub(super) churn: Churn,
    /// When a node last left ahead of its cloud's notice, until the next round forms.
    pub(super) departed: Option<Instant>,
    /// How many times a node's standing notice changed: the chief's node of a
    /// ParameterServerStrategy round hears of each change at once.
    pub(super) notices: u32,
    /// Planned exits (42, 143) in a row that made no progress while no notice stood for
    /// any of the job's hosts: past a few, a planned exit is a loop, counted as a failure.
    pub(super) planned_in_a_row: u32,
    /// When the last node started waiting: a round with `min` nodes closes `last_call` after.
    pub(super) last_arrival: Instant,
    /// Since when the job has had no node; it is forgotten after the timeout.
    pub(super) empty_since: Option<Instant>,
    pub(super) changed: watch::Sender<u64>,
    /// The address of the caller whose join created the job, when the server knows it.
    pub(super) creator: Option<Caller>,
}

impl Job {
    pub(super) fn new(
        id: String,
        incarnation: u64,
        config: JobConfig,
        token: Option<Digest>,
        now: Instant,
    ) -> Self {
        Self {
            id,
            incarnation,
            config,
            token,
            nodes: HashMap::new(),
            next_seq: 0,
            phase: Phase::Forming,
            rounds_formed: 0,
            restart_count: 0,
            ended: VecDeque::new(),
            first_failure: None,
            last_failure: None,
            task_restarts: Vec::new(),
            chief_asks: 0,
            chief_asks_done: 0,
            crash_loop: CrashLoop::default(),
            hosts: Hosts::new(),
            churn: Churn::default(),
            departed: None,
            notices: 0,
            planned_in_a_row: 0,
            last_arrival: now,
            empty_since: None,
            changed: watch::Sender::new(0),
            creator: None,
        }
    }

    /// The job, created by a join from `creator`.
    pub(super) fn with_creator(mut self, creator: Option<Caller>) -> Self {
        self.creator = creator;
        self
    }

    pub(super) fn notify(&self) {
        self.changed.send_modify(|v| *v = v.wrapping_add(1));
    }

    pub(super) fn next_round(&self) -> u64 {
        self.rounds_formed + 1
    }

    /// The end of round `round`, which is not the running one.
    pub(super) fn ended_round(&self, round: u64) -> Result<RoundEnd, Refusal> {
        if let Some(end) = self.ended.iter().find(|e| e.round == round) {
            return Ok(end.clone());
        }
        Err(Refusal::FailedPrecondition(
            if round == 0 || round > self.rounds_formed {
                format!(
                    "round {round} has not formed (the latest is round {})",
                    self.rounds_formed
                )
            } else {
                format!(
                    "round {round} ended long ago (the latest is round {})",
                    self.rounds_formed
                )
            },
        ))
    }

    /// Ends the running round: its members must join again; a failure counts against the
    /// restarts, and past `max_restarts` (or on success) the job is done.
    pub(super) fn end_round(&mut self, reason: EndReason, detail: String, now: Instant) {
        let Phase::Running(round) = &self.phase else {
            return;
        };
        let number = round.number;
        for node in self.nodes.values_mut() {
            if node.state == NodeState::Member {
                node.state = NodeState::Idle;
            }
        }
        if reason.is_failure() {
            self.restart_count += 1;
        }
        if matches!(
            reason,
            EndReason::NodeJoined | EndReason::NodeLeft | EndReason::NodeDeparted
        ) {
            self.churn.record(now);
        }
        // The next round's tasks start afresh.
        self.task_restarts.clear();
        (self.chief_asks, self.chief_asks_done) = (0, 0);
        tracing::info!(rdzv_id = %self.id, round = number, %reason, %detail, "round ended");
        let end = RoundEnd {
            round: number,
            reason,
            detail: detail.clone(),
            restart_count: self.restart_count,
        };
        if self.ended.len() == ENDS_KEPT {
            self.ended.pop_front();
        }
        self.ended.push_back(end);
        // Survivors join again from now: the last call counts from the end, not from when a
        // node that waited through the round arrived.
        self.last_arrival = now;
        let max_restarts = self.config.max_restarts();
        self.phase = if reason == EndReason::JobSucceeded {
            Phase::Done(JobDone {
                succeeded: true,
                detail,
                first_failure: self.first_failure.clone(),
                round: number,
            })
        } else if reason.is_failure() && self.restart_count > max_restarts {
            Phase::Done(JobDone {
                succeeded: false,
                detail: format!(
                    "{} failures, more than max restarts {max_restarts}; the last: {detail}",
                    self.restart_count
                ),
                first_failure: self.first_failure.clone(),
                round: number,
            })
        } else {
            Phase::Forming
        };
        self.notify();
    }

    /// Ends the running round for `reason` and the job with it, failed: `detail` says why
    /// (a crash loop), whatever restarts are left.
    pub(super) fn fail_job(&mut self, reason: EndReason, detail: String, now: Instant) {
        let Phase::Running(round) = &self.phase else {
            return;
        };
        let round = round.number;
        self.end_round(reason, detail.clone(), now);
        self.phase = Phase::Done(JobDone {
            succeeded: false,
            detail,
            first_failure: self.first_failure.clone(),
            round,
        });
        self.notify();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::super::Reported;
    use super::super::tests::{config, ended, join_as, registry, report, round_of};
    use crate::outcome::{EndReason, RoundStatus, TaskStatus};

    #[test]
    fn failures_count_until_max_restarts_then_the_job_fails_with_the_first() {
        let (mut r, t0, c) = (registry(), Instant::now(), config(1, 1, "", 1));
        join_as(&mut r, &c, "a", 1000, t0).unwrap();
        let Reported { counted, .. } =
            report(&mut r, "a", 1, 0, TaskStatus::Exited(3), "boom\n", t0).unwrap();
        assert!(counted);
        let end = ended(&mut r, "a", 1, t0);
        assert_eq!(
            (end.reason, end.restart_count, end.detail.as_str()),
            (
                EndReason::TaskFailed,
                1,
                "task worker:0 (local task 0 of node a on 127.0.0.1) exited with status 3 in round 1"
            )
        );
        // A report for the ended round changes nothing.
        let Reported { counted, note, .. } =
            report(&mut r, "a", 1, 0, TaskStatus::Signaled(15), "", t0).unwrap();
        assert!(!counted, "{note}");
        join_as(&mut r, &c, "a", 1000, t0).unwrap();
        assert_eq!(round_of(&mut r, "a", 1, t0).unwrap().1, 1);
        report(&mut r, "a", 2, 0, TaskStatus::Signaled(9), "", t0).unwrap();
        let RoundStatus::JobDone(done) = r.heartbeat("job", "a", 2, (0, 0), None, t0).unwrap()
        else {
            panic!("the job goes on past max restarts");
        };
        assert!(!done.succeeded);
        let first = done.first_failure.as_ref().unwrap();
        assert_eq!((first.round, first.stderr_tail.as_str()), (1, "boom\n"));
        assert_eq!(
            done.to_string(),
            "the job failed in round 2: 2 failures, more than max restarts 1; the last: task \
             worker:0 (local task 0 of node a on 127.0.0.1) was killed by signal 9 in round 2; \
             first failure: task worker:0 (local task 0 of node a on 127.0.0.1) exited with status \
             3 in round 1"
        );
        let err = join_as(&mut r, &c, "a", 1000, t0).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("rendezvous \"job\" is finished (the job failed"),
            "{err}"
        );
    }
}
