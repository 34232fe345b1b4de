//! What a task's reported end does: the job's first task succeeding ends the job, another
//! task succeeding changes nothing; a failure is restarted in place when its failure domain
//! allows (the job's [`RestartPolicy`](failure_policy::RestartPolicy): a ParameterServerStrategy
//! worker or chief alone, a parameter server with the chief — on its node together, else
//! the chief's node is asked at its next heartbeat — an evaluator alone; at most
//! `max_task_restarts` times a task in a round), else it ends its round. A planned exit
//! (42, 143) counts against nothing, nor does the chief's failure while an ask to restart
//! it is under way (its parameter server died) — unless planned exits loop: the
//! [`PLANNED_LOOP`]th in a row that made no progress while no notice stood for any host of
//! the job is a failure; a crash loop ([`failure_policy::CrashLoop`]) fails the job at once. The job keeps the first failure and the latest, with the tail of
//! its stderr.

use std::sync::Arc;
use std::time::Instant;

use failure_policy::{Restart, Signature, TaskEnd};

use super::calls::{Refusal, Reported, TaskReport};
use super::job::{Job, Phase};
use super::node::NodeState;
use crate::job_status::TaskRestarts;
use crate::outcome::{EndReason, Failure, TaskStatus};

/// The most bytes of a task's standard error kept for the job's story (its end).
pub(crate) const MAX_STDERR_TAIL: usize = 8 * 1024;

/// The planned exit that is a loop, not a save: the third in a row of the job's that made
/// no progress while no notice stood for any of its hosts (a task that exits 42 at once
/// would otherwise restart its round for ever, counting nothing). TensorFlow's handler
/// saves after training ran, or on a notice the rendezvous knows of.
pub(crate) const PLANNED_LOOP: u32 = 3;

impl Job {
    /// A local task of node `node_id` (which the caller found in this job) ended as `report`
    /// says. Returns whether it counted, why, and what the node restarts in place.
    pub(super) fn task_ended(
        &mut self,
        node_id: &str,
        report: TaskReport,
        now: Instant,
    ) -> Result<Reported, Refusal> {
        let TaskReport {
            round,
            local_task,
            status,
            stderr_tail,
            progressed,
        } = report;
        let node = &self.nodes[node_id];
        let current = match &self.phase {
            Phase::Running(r) if r.number == round && node.state == NodeState::Member => {
                Arc::clone(r)
            }
            _ => {
                return Ok(Reported::noted(
                    false,
                    format!("not counted: round {round} is not running with node {node_id}"),
                ));
            }
        };
        let tpn = current.round.config().tasks_per_node();
        if local_task >= tpn {
            return Err(Refusal::InvalidArgument(format!(
                "local task {local_task} does not exist: nodes run {tpn} tasks"
            )));
        }
        let rank = current.rank(node_id).unwrap_or_default();
        let node_tasks = current.round.assignment().node_tasks(rank);
        let task = &node_tasks[local_task as usize];
        let who = node.describe(node_id);
        let task_name = task.task.short_name();
        if status.success() {
            if task == current.round.assignment().first_task() {
                let detail = format!("task {task_name} ({who}) succeeded");
                self.end_round(EndReason::JobSucceeded, detail, now);
                return Ok(Reported::noted(true, "the job succeeded"));
            }
            return Ok(Reported::noted(
                true,
                format!(
                    "task {task_name} succeeded; the job ends when task {}:0 does",
                    current.round.assignment().first_task().task.job
                ),
            ));
        }
        let failure = Failure {
            round,
            node_id: node_id.to_owned(),
            host: node.host.clone(),
            name: node.name.clone(),
            local_task,
            job: task.task.job.clone(),
            index: task.task.task,
            status,
            stderr_tail: tail(stderr_tail, MAX_STDERR_TAIL),
        };
        let mut detail = failure.to_string();
        let end = TaskEnd::from(&failure.status);
        let planned = end.is_planned() && !self.planned_loop(progressed);
        let looped = end.is_planned() && !planned;
        if looped {
            detail = format!(
                "{detail}: a planned exit, {PLANNED_LOOP} or more in a row without progress \
                 and with no notice standing for any host: a loop, counted as a failure"
            );
        }
        // The chief failing because its parameter server died, before its node carried out
        // the ask to restart it: the ask's restart, not a failure of its own.
        let is_chief = failure.job == "chief";
        let asked = is_chief && self.chief_asks > self.chief_asks_done;
        let policy = self.config.restarts();
        let reason = match failure.status {
            _ if planned => EndReason::TaskPlanned,
            TaskStatus::Hung { .. } => EndReason::TaskHung,
            _ => EndReason::TaskFailed,
        };
        if !planned && !asked {
            self.first_failure.get_or_insert_with(|| failure.clone());
            self.last_failure = Some(failure.clone());
            if self.host_failed(&failure.host, &detail, now).is_some() {
                self.notify();
            }
            let signature = match looped {
                true => Some(Signature::of_planned_loop(&end, &failure.stderr_tail)),
                false => Signature::of(&end, &failure.stderr_tail),
            };
            // By node, not address: agents sharing an address are hosts of their own.
            let found = self.crash_loop.failed(&who, signature, progressed);
            if let Some(found) = found.filter(|_| !policy.allow_crash_loops) {
                self.fail_job(
                    reason,
                    format!(
                        "{found}: the job stops rather than restart it (allow_crash_loops goes \
                         on); the last: {detail}"
                    ),
                    now,
                );
                return Ok(Reported::noted(true, format!("the job stops: {found}")));
            }
        }
        // A parameter server restarts with the chief: on its node together, else alone with
        // an ask to the chief's node. A layout without a chief restarts the round.
        let chief_node = current.chief_node();
        let ask_chief = chief_node.is_some_and(|chief| chief != node_id);
        let in_place = match policy.scope.restart(self.config.strategy(), &failure.job) {
            Restart::WithChief if ask_chief => Some(Restart::Task),
            Restart::WithChief if chief_node.is_some() => Some(Restart::WithChief),
            Restart::Task => Some(Restart::Task),
            Restart::WithChief | Restart::Round => None,
        };
        // The chief saved ahead of a parameter server's host going (it was told): the round
        // ends, so that the next one forms without that host, rather than the chief
        // restarting beside a server about to go.
        let saved_ahead = planned && is_chief && self.server_notice(&current, now).is_some();
        let in_place = in_place.filter(|_| !saved_ahead);
        let ask_chief = ask_chief && in_place == Some(Restart::Task) && failure.job == "ps";
        if let Some(in_place) = in_place {
            let counted = !planned && !asked;
            let restarted = self.restarts_of(&failure.job, failure.index, &failure);
            let failures = restarted.failures + u32::from(counted);
            if failures <= policy.max_task_restarts {
                // The chief failing under an ask carries the ask's restart out: numbered
                // when the ask was made, not again.
                if !asked {
                    restarted.restarts += 1;
                }
                restarted.failures = failures;
                restarted.last_failure = failure.clone();
                let restarts = restarted.restarts;
                tracing::info!(rdzv_id = %self.id, round, task = %task_name, restarts, scope = %in_place, %detail, "restarting a task in place");
                let mut note = format!(
                    "task {task_name} restarts in place ({in_place}), its restart {restarts} in \
                     round {round}"
                );
                // The chief's restart, numbered now: its own failure's, or the one its
                // parameter server's failure makes (beside it, or asked of its node).
                let chief_restarts = if is_chief {
                    restarts
                } else if in_place == Restart::WithChief || ask_chief {
                    self.chief_restarted(&failure)
                } else {
                    0
                };
                if is_chief || in_place == Restart::WithChief {
                    self.chief_asks_done = self.chief_asks_done.max(chief_restarts);
                }
                if let Some(chief) = chief_node.filter(|_| ask_chief) {
                    self.chief_asks = chief_restarts;
                    let on = self.nodes.get(chief).map(|n| n.describe(chief));
                    note.push_str(&format!(
                        "; the chief restarts too, on {}",
                        on.unwrap_or_default()
                    ));
                }
                self.notify();
                return Ok(Reported {
                    counted: true,
                    note,
                    in_place: Some(in_place),
                    task_restarts: restarts,
                    chief_restarts: if ask_chief { 0 } else { chief_restarts },
                });
            }
            detail = format!(
                "{detail}, its failure {failures} in the round, more than max task restarts {}",
                policy.max_task_restarts
            );
        }
        self.end_round(reason, detail, now);
        Ok(Reported::noted(true, format!("round {round} ended")))
    }
}

impl Job {
    /// Whether a planned exit is a loop ([`PLANNED_LOOP`]); one that made progress, or came
    /// while a departure notice stood for a host of the job, starts the count again.
    fn planned_loop(&mut self, progressed: bool) -> bool {
        let noticed = self
            .nodes
            .values()
            .any(|n| n.notice.as_ref().is_some_and(|n| n.deadline.is_some()));
        if progressed || noticed {
            self.planned_in_a_row = 0;
            return false;
        }
        self.planned_in_a_row += 1;
        self.planned_in_a_row >= PLANNED_LOOP
    }

    /// The round's in-place restarts of task `job:index`, made on its first (`failure`).
    fn restarts_of(&mut self, job: &str, index: u32, failure: &Failure) -> &mut TaskRestarts {
        let at = match self
            .task_restarts
            .iter()
            .position(|t| t.job == job && t.index == index)
        {
            Some(at) => at,
            None => {
                self.task_restarts.push(TaskRestarts {
                    job: job.to_owned(),
                    index,
                    restarts: 0,
                    failures: 0,
                    last_failure: failure.clone(),
                });
                self.task_restarts.len() - 1
            }
        };
        &mut self.task_restarts[at]
    }

    /// The chief restarts for a parameter server's `failure`: one more in-place restart of
    /// its own (not a failure of its own), whose number this returns.
    fn chief_restarted(&mut self, failure: &Failure) -> u32 {
        let restarted = self.restarts_of("chief", 0, failure);
        restarted.restarts += 1;
        restarted.last_failure = failure.clone();
        restarted.restarts
    }
}

/// The last `max` bytes of `text`, cut on a character boundary.
fn tail(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut start = text.len() - max;
        while !text.is_char_boundary(start) {
            start += 1;
        }
        text.drain(..start);
    }
    text
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use failure_policy::{Restart, RestartPolicy, RestartScope};

    use super::super::tests::{config, ended, join_as, node_proof, registry, report};
    use super::super::{JoinArgs, Registry, Reported, Waited};
    use super::tail;
    use crate::outcome::{EndReason, RoundStatus, TaskStatus};
    use crate::{JobConfig, NodeRange};

    #[test]
    fn the_first_task_succeeding_ends_the_job() {
        let (mut r, t0, c) = (registry(), Instant::now(), config(2, 2, "chief=1", 0));
        join_as(&mut r, &c, "a", 1000, t0).unwrap();
        join_as(&mut r, &c, "b", 1001, t0).unwrap();
        // b runs worker 0: its success is not the job's.
        let Reported { counted, note, .. } =
            report(&mut r, "b", 1, 0, TaskStatus::Exited(0), "", t0).unwrap();
        assert!(counted);
        assert_eq!(
            note,
            "task worker:0 succeeded; the job ends when task chief:0 does"
        );
        assert_eq!(
            r.heartbeat("job", "b", 1, (0, 0), None, t0).unwrap(),
            RoundStatus::Running
        );
        report(&mut r, "a", 1, 0, TaskStatus::Exited(0), "", t0).unwrap();
        let Waited::Done(done) = r.wait("job", "b", 1, t0).unwrap() else {
            panic!("not done");
        };
        assert!(done.succeeded);
        assert_eq!(done.detail, "task chief:0 (node a on 127.0.0.1) succeeded");
    }

    /// A ParameterServerStrategy job of three one-task nodes: a runs chief:0, b ps:0, c
    /// worker:0; in round 1.
    fn pss(restarts: RestartPolicy) -> (Registry, Instant) {
        let (mut r, t0) = (registry(), Instant::now());
        let c = config(3, 3, "chief=1,ps=1", 5).with_restarts(restarts);
        for (id, port) in [("a", 1000), ("b", 1001), ("c", 1002)] {
            join_as(&mut r, &c, id, port, t0).unwrap();
        }
        assert_eq!(
            r.heartbeat("job", "c", 1, (0, 0), None, t0).unwrap(),
            RoundStatus::Running
        );
        (r, t0)
    }

    #[test]
    fn a_parameter_server_strategy_worker_restarts_in_place_up_to_its_bound() {
        let bound = RestartPolicy {
            max_task_restarts: 2,
            ..RestartPolicy::default()
        };
        let (mut r, t0) = pss(bound);
        for n in 1..=2 {
            let answer = report(&mut r, "c", 1, 0, TaskStatus::Signaled(9), "", t0).unwrap();
            assert_eq!(
                (answer.in_place, answer.task_restarts),
                (Some(Restart::Task), n)
            );
            assert_eq!(
                r.heartbeat("job", "a", 1, (0, 0), None, t0).unwrap(),
                RoundStatus::Running
            );
        }
        // A planned exit is restarted too, and not counted against the bound.
        let planned = report(&mut r, "c", 1, 0, TaskStatus::Exited(42), "", t0).unwrap();
        assert_eq!(planned.task_restarts, 3);
        let status = r.status("job", t0).unwrap();
        let restarted = &status.task_restarts[0];
        assert_eq!(
            (
                restarted.job.as_str(),
                restarted.index,
                restarted.restarts,
                restarted.failures
            ),
            ("worker", 0, 3, 2)
        );
        assert_eq!(status.restart_count, 0, "no round restarted");
        let third = report(&mut r, "c", 1, 0, TaskStatus::Signaled(9), "", t0).unwrap();
        assert_eq!(third.in_place, None);
        let end = ended(&mut r, "a", 1, t0);
        assert_eq!((end.reason, end.restart_count), (EndReason::TaskFailed, 1));
        assert!(
            end.detail
                .ends_with("its failure 3 in the round, more than max task restarts 2"),
            "{}",
            end.detail
        );
        assert!(r.status("job", t0).unwrap().task_restarts.is_empty());
    }

    #[test]
    fn a_parameter_server_restarts_alone_and_the_chief_s_node_is_asked_to_restart_it() {
        // b runs ps:0 alone: it restarts in place, and a (the chief's node) is asked.
        let (mut r, t0) = pss(RestartPolicy::default());
        let answer = report(&mut r, "b", 1, 0, TaskStatus::Signaled(9), "", t0).unwrap();
        assert_eq!(answer.in_place, Some(Restart::Task));
        assert!(
            answer
                .note
                .ends_with("; the chief restarts too, on node a on 127.0.0.1"),
            "{}",
            answer.note
        );
        let beat = |r: &mut Registry, node, seen| {
            r.heartbeat("job", node, 1, (seen, 0), None, t0).unwrap()
        };
        assert_eq!(
            beat(&mut r, "c", 0),
            RoundStatus::Running,
            "not the chief's"
        );
        assert_eq!(beat(&mut r, "a", 0), RoundStatus::RestartChief(1));
        assert_eq!(beat(&mut r, "a", 1), RoundStatus::Running, "carried out");
        // The ask numbered the chief's restart: 1, not a failure of its own.
        let failures = |r: &Registry| {
            let status = r.status("job", t0).unwrap();
            let chief = status.task_restarts.iter().find(|t| t.job == "chief");
            chief.map(|t| (t.restarts, t.failures))
        };
        assert_eq!(failures(&r), Some((1, 0)));
        // The chief failing after its restart is a failure of its own, and its restart 2
        // (not 1 again: its TFCLUSTER_RESTART_COUNT never repeats).
        let chief = report(&mut r, "a", 1, 0, TaskStatus::Exited(1), "E", t0).unwrap();
        assert_eq!(
            (chief.in_place, chief.task_restarts, chief.chief_restarts),
            (Some(Restart::Task), 2, 2)
        );
        assert_eq!(failures(&r), Some((2, 1)));
        assert_eq!(beat(&mut r, "a", 1), RoundStatus::Running, "nothing asked");
        // The chief failing (its parameter server gone) before its node carried out an ask:
        // the ask's restart (3), counted as no failure; the ask is done.
        report(&mut r, "b", 1, 0, TaskStatus::Signaled(9), "", t0).unwrap();
        let boom =
            "tensorflow.python.distribute.coordinator.cluster_coordinator.PSUnavailableError";
        let chief = report(&mut r, "a", 1, 0, TaskStatus::Exited(1), boom, t0).unwrap();
        assert_eq!(
            (chief.in_place, chief.task_restarts, chief.chief_restarts),
            (Some(Restart::Task), 3, 3)
        );
        assert_eq!(failures(&r), Some((3, 1)));
        // Its node's heartbeat still hears the ask, numbered as the restart it carried out.
        assert_eq!(beat(&mut r, "a", 1), RoundStatus::RestartChief(3));
        assert_eq!(beat(&mut r, "a", 3), RoundStatus::Running);
        // Another ask after: the chief's restart 4.
        report(&mut r, "b", 1, 0, TaskStatus::Signaled(9), "", t0).unwrap();
        assert_eq!(beat(&mut r, "a", 3), RoundStatus::RestartChief(4));
        assert_eq!(failures(&r), Some((4, 1)));
        // A layout without a chief restarts the round.
        let (mut r, t0) = (registry(), Instant::now());
        let c = config(2, 2, "ps=1", 5);
        join_as(&mut r, &c, "a", 1000, t0).unwrap();
        join_as(&mut r, &c, "b", 1001, t0).unwrap();
        let answer = report(&mut r, "a", 1, 0, TaskStatus::Signaled(9), "", t0).unwrap();
        assert_eq!(answer.in_place, None);
        assert_eq!(ended(&mut r, "b", 1, t0).reason, EndReason::TaskFailed);
        // One node running the chief and the parameter server restarts both in place.
        let (mut r, t0) = (registry(), Instant::now());
        let c = JobConfig::new(NodeRange::new(2, 2).unwrap(), 2)
            .unwrap()
            .with_layout("chief=1,ps=1".parse().unwrap())
            .unwrap();
        for (id, ports) in [("a", vec![1000, 1001]), ("b", vec![1002, 1003])] {
            let args = JoinArgs {
                rdzv_id: "job".into(),
                config: c.clone(),
                node_id: Some(id.into()),
                host: "127.0.0.1".into(),
                ports,
                name: String::new(),
                peer: None,
                credentials: Default::default(),
            };
            r.join(args, &node_proof(id), t0).unwrap();
        }
        let answer = report(&mut r, "a", 1, 1, TaskStatus::Signaled(9), "", t0).unwrap();
        assert_eq!(
            (answer.in_place, answer.task_restarts, answer.chief_restarts),
            (Some(Restart::WithChief), 1, 1)
        );
        // The chief alone restarts in place too, its restart 2.
        let answer = report(&mut r, "a", 1, 0, TaskStatus::Exited(1), "", t0).unwrap();
        assert_eq!(
            (answer.in_place, answer.task_restarts, answer.chief_restarts),
            (Some(Restart::Task), 2, 2)
        );
    }

    #[test]
    fn the_chief_hears_of_a_parameter_server_s_notice_and_its_save_ends_the_round() {
        let (mut r, t0) = pss(RestartPolicy::default());
        let notice = crate::HostNotice {
            cloud: "gce".into(),
            kind: "preemption".into(),
            remaining: Some(std::time::Duration::from_secs(30)),
            detail: "TRUE".into(),
        };
        let beat = |r: &mut Registry, node, notice: Option<&crate::HostNotice>, seen| {
            r.heartbeat("job", node, 1, (0, seen), notice.map(|n| (n, t0)), t0)
                .unwrap()
        };
        // b, which runs ps:0, hears of its host's preemption; c, a worker, is not told.
        assert_eq!(beat(&mut r, "b", Some(&notice), 0), RoundStatus::Running);
        assert_eq!(beat(&mut r, "c", None, 0), RoundStatus::Running);
        let RoundStatus::ServerNotice {
            notices,
            notice: told,
        } = beat(&mut r, "a", None, 0)
        else {
            panic!("the chief's node is told at once");
        };
        assert_eq!(told.as_ref(), Some(&notice));
        assert_eq!(beat(&mut r, "a", None, notices), RoundStatus::Running);
        // Withdrawn, and given again: the chief's node hears both.
        beat(&mut r, "b", None, 0);
        let withdrawn = beat(&mut r, "a", None, notices);
        assert_eq!(
            withdrawn,
            RoundStatus::ServerNotice {
                notices: notices + 1,
                notice: None
            }
        );
        beat(&mut r, "b", Some(&notice), 0);
        // The chief saves and exits 42: the round ends, planned, so the next forms without
        // b's host, rather than the chief restarting beside a server about to go.
        let answer = report(&mut r, "a", 1, 0, TaskStatus::Exited(42), "", t0).unwrap();
        assert_eq!(answer.in_place, None);
        let end = ended(&mut r, "c", 1, t0);
        assert_eq!((end.reason, end.restart_count), (EndReason::TaskPlanned, 0));
    }

    #[test]
    fn planned_exits_in_a_loop_are_a_failure_unless_progress_or_a_notice_explains_them() {
        let (mut r, t0, c) = (registry(), Instant::now(), config(1, 1, "", 5));
        join_as(&mut r, &c, "a", 1000, t0).unwrap();
        let exit_42 = |r: &mut Registry, round, progressed| {
            let task = super::super::TaskReport {
                round,
                local_task: 0,
                status: TaskStatus::Exited(42),
                stderr_tail: String::new(),
                progressed,
            };
            r.report("job", "a", task, t0).unwrap();
            let end = ended(r, "a", round, t0);
            join_as(r, &c, "a", 1000, t0).unwrap();
            end
        };
        // Two at once: planned. One after progress starts the count again.
        for (round, progressed) in [(1, false), (2, false), (3, true), (4, false), (5, false)] {
            let end = exit_42(&mut r, round, progressed);
            assert_eq!((end.reason, end.restart_count), (EndReason::TaskPlanned, 0));
        }
        // The third in a row without progress is a loop: a failure, counted.
        let end = exit_42(&mut r, 6, false);
        assert_eq!((end.reason, end.restart_count), (EndReason::TaskFailed, 1));
        assert!(
            end.detail
                .ends_with("with no notice standing for any host: a loop, counted as a failure"),
            "{}",
            end.detail
        );
        // While a departure notice stands for a host of the job, a planned exit is a save.
        let notice = crate::HostNotice {
            cloud: "aws".into(),
            kind: "preemption".into(),
            remaining: Some(std::time::Duration::from_secs(120)),
            detail: "terminate".into(),
        };
        r.heartbeat("job", "a", 7, (0, 0), Some((&notice, t0)), t0)
            .unwrap();
        let end = exit_42(&mut r, 7, false);
        assert_eq!((end.reason, end.restart_count), (EndReason::TaskPlanned, 1));
    }

    #[test]
    fn a_loop_of_planned_exits_that_goes_on_is_a_crash_loop_and_stops_the_job() {
        // `sh -c 'exit 42'`: two planned rounds, then the loop's failures, the second of
        // which is the same failure twice in a row on one host: the job stops there.
        let (mut r, t0, c) = (registry(), Instant::now(), config(1, 1, "", 10));
        join_as(&mut r, &c, "a", 1000, t0).unwrap();
        for round in 1..=3 {
            report(&mut r, "a", round, 0, TaskStatus::Exited(42), "", t0).unwrap();
            join_as(&mut r, &c, "a", 1000, t0).unwrap();
        }
        report(&mut r, "a", 4, 0, TaskStatus::Exited(42), "", t0).unwrap();
        let RoundStatus::JobDone(done) = r.heartbeat("job", "a", 4, (0, 0), None, t0).unwrap()
        else {
            panic!("the job goes on");
        };
        assert!(!done.succeeded);
        assert!(done.detail.contains("crash loop"), "{}", done.detail);
    }

    #[test]
    fn under_mirrored_strategy_a_worker_ends_the_round_and_the_evaluator_restarts_alone() {
        let (mut r, t0, c) = (registry(), Instant::now(), config(2, 2, "evaluator=1", 3));
        join_as(&mut r, &c, "a", 1000, t0).unwrap();
        join_as(&mut r, &c, "b", 1001, t0).unwrap();
        let answer = report(&mut r, "a", 1, 0, TaskStatus::Exited(1), "OSError", t0).unwrap();
        assert_eq!(answer.in_place, Some(Restart::Task), "the evaluator");
        assert_eq!(
            r.heartbeat("job", "b", 1, (0, 0), None, t0).unwrap(),
            RoundStatus::Running
        );
        let answer = report(&mut r, "b", 1, 0, TaskStatus::Exited(1), "", t0).unwrap();
        assert_eq!(answer.in_place, None, "worker 0");
        assert_eq!(ended(&mut r, "a", 1, t0).reason, EndReason::TaskFailed);
        // `round` restarts even the evaluator with the round.
        let round = RestartPolicy {
            scope: RestartScope::Round,
            ..RestartPolicy::default()
        };
        let (mut r, t0) = pss(round);
        let answer = report(&mut r, "c", 1, 0, TaskStatus::Signaled(9), "", t0).unwrap();
        assert_eq!(answer.in_place, None);
    }

    #[test]
    fn a_planned_exit_ends_a_mirrored_round_without_counting() {
        let (mut r, t0, c) = (registry(), Instant::now(), config(2, 2, "", 0));
        join_as(&mut r, &c, "a", 1000, t0).unwrap();
        join_as(&mut r, &c, "b", 1001, t0).unwrap();
        report(&mut r, "b", 1, 0, TaskStatus::Exited(143), "saved", t0).unwrap();
        let end = ended(&mut r, "a", 1, t0);
        assert_eq!((end.reason, end.restart_count), (EndReason::TaskPlanned, 0));
        // With max restarts 0, a failure would have failed the job; the next round forms.
        let status = r.status("job", t0).unwrap();
        assert!(status.last_failure.is_none());
        assert!(matches!(status.phase, crate::JobPhase::Forming { .. }));
    }

    #[test]
    fn the_same_traceback_on_two_hosts_fails_the_job_at_once() {
        let (mut r, t0, c) = (registry(), Instant::now(), config(2, 2, "", 9));
        join_as(&mut r, &c, "a", 1000, t0).unwrap();
        join_as(&mut r, &c, "b", 1001, t0).unwrap();
        let boom = "Traceback (most recent call last):\nValueError: bad batch 17\n";
        report(&mut r, "a", 1, 0, TaskStatus::Exited(1), boom, t0).unwrap();
        ended(&mut r, "b", 1, t0);
        join_as(&mut r, &c, "a", 1000, t0).unwrap();
        join_as(&mut r, &c, "b", 1001, t0).unwrap();
        let boom = boom.replace("17", "18");
        let answer = report(&mut r, "b", 2, 0, TaskStatus::Exited(1), &boom, t0).unwrap();
        assert!(
            answer.note.starts_with("the job stops: a crash loop"),
            "{}",
            answer.note
        );
        let RoundStatus::JobDone(done) = r.heartbeat("job", "a", 2, (0, 0), None, t0).unwrap()
        else {
            panic!("the job goes on");
        };
        assert!(!done.succeeded);
        assert!(
            done.detail.starts_with(
                "a crash loop: \"exited with status 1: ValueError: bad batch N\" on node a on \
                 127.0.0.1, then on node b on 127.0.0.1: the job stops"
            ),
            "{}",
            done.detail
        );
        assert_eq!(done.first_failure.unwrap().node_id, "a");
    }

    #[test]
    fn crash_loops_may_be_allowed() {
        let allowed = RestartPolicy {
            allow_crash_loops: true,
            ..RestartPolicy::default()
        };
        let (mut r, t0) = pss(allowed);
        for _ in 0..3 {
            let answer =
                report(&mut r, "c", 1, 0, TaskStatus::Exited(1), "OSError: x", t0).unwrap();
            assert_eq!(answer.in_place, Some(Restart::Task));
        }
        let (mut r, t0) = pss(RestartPolicy::default());
        report(&mut r, "c", 1, 0, TaskStatus::Exited(1), "OSError: x", t0).unwrap();
        let answer = report(&mut r, "c", 1, 0, TaskStatus::Exited(1), "OSError: x", t0).unwrap();
        assert_eq!(answer.in_place, None, "twice in a row without progress");
        assert!(matches!(
            r.heartbeat("job", "a", 1, (0, 0), None, t0).unwrap(),
            RoundStatus::JobDone(_)
        ));
    }

    #[test]
    fn the_tail_is_cut_on_a_character_boundary() {
        assert_eq!(tail("short".into(), 8), "short");
        assert_eq!(tail("abcdef".into(), 3), "def");
        // 'é' is two bytes: a cut inside it moves past it.
        assert_eq!(tail("aébc".into(), 3), "bc");
    }
}
