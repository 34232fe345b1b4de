//! What a task's reported end does: the job's first task succeeding ends the job, another
//! task succeeding changes nothing, and any task failing ends its round (the job keeps the
//! first failure and the latest, with the tail of its stderr).

use std::sync::Arc;
use std::time::Instant;

use super::calls::Refusal;
use super::job::{Job, Phase};
use super::node::NodeState;
use crate::outcome::{EndReason, Failure, TaskStatus};

/// The most bytes of a task's standard error kept for the job's story (its end).
pub(crate) const MAX_STDERR_TAIL: usize = 8 * 1024;

impl Job {
    /// Local task `local_task` of node `node_id`, which the caller found in this job, ended
    /// with `status` in round `round`. Returns whether it counted, and why.
    pub(super) fn task_ended(
        &mut self,
        node_id: &str,
        round: u64,
        local_task: u32,
        status: TaskStatus,
        stderr_tail: String,
        now: Instant,
    ) -> Result<(bool, String), Refusal> {
        let node = &self.nodes[node_id];
        let current = match &self.phase {
            Phase::Running(r) if r.number == round && node.state == NodeState::Member => {
                Arc::clone(r)
            }
            _ => {
                return Ok((
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
        let task = &current.round.assignment().node_tasks(rank)[local_task as usize];
        let who = node.describe(node_id);
        let task_name = task.task.short_name();
        if status.success() {
            if task == current.round.assignment().first_task() {
                let detail = format!("task {task_name} ({who}) succeeded");
                self.end_round(EndReason::JobSucceeded, detail, now);
                return Ok((true, "the job succeeded".into()));
            }
            return Ok((
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
        let detail = failure.to_string();
        let reason = match failure.status {
            TaskStatus::Hung { .. } => EndReason::TaskHung,
            _ => EndReason::TaskFailed,
        };
        self.first_failure.get_or_insert_with(|| failure.clone());
        self.last_failure = Some(failure);
        self.end_round(reason, detail, now);
        Ok((true, format!("round {round} ended")))
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

    use super::super::Waited;
    use super::super::tests::{config, join_as, registry};
    use super::tail;
    use crate::outcome::{RoundStatus, TaskStatus};

    #[test]
    fn the_first_task_succeeding_ends_the_job() {
        let (mut r, t0, c) = (registry(), Instant::now(), config(2, 2, "chief=1", 0));
        join_as(&mut r, &c, "a", 1000, t0).unwrap();
        join_as(&mut r, &c, "b", 1001, t0).unwrap();
        // b runs worker 0: its success is not the job's.
        let (counted, note) = r
            .report("job", "b", 1, 0, TaskStatus::Exited(0), String::new(), t0)
            .unwrap();
        assert!(counted);
        assert_eq!(
            note,
            "task worker:0 succeeded; the job ends when task chief:0 does"
        );
        assert_eq!(
            r.heartbeat("job", "b", 1, t0).unwrap(),
            RoundStatus::Running
        );
        r.report("job", "a", 1, 0, TaskStatus::Exited(0), String::new(), t0)
            .unwrap();
        let Waited::Done(done) = r.wait("job", "b", 1, t0).unwrap() else {
            panic!("not done");
        };
        assert!(done.succeeded);
        assert_eq!(done.detail, "task chief:0 (node a on 127.0.0.1) succeeded");
    }

    #[test]
    fn the_tail_is_cut_on_a_character_boundary() {
        assert_eq!(tail("short".into(), 8), "short");
        assert_eq!(tail("abcdef".into(), 3), "def");
        // 'é' is two bytes: a cut inside it moves past it.
        assert_eq!(tail("aébc".into(), 3), "bc");
    }
}
