//! Where the time from a fault to the first training step after it goes, read from the
//! tasks' marks and the surviving agents' logs: the milestones of one recovery.

use super::marks::{Mark, What};
use crate::agent_log;

/// One recovery: milliseconds from the fault to each milestone (the last task or surviving
/// agent to reach it; `None` where no line says), and the steps redone.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Recovery {
    /// Every surviving agent has logged the round's end.
    pub(super) detected: Option<f64>,
    /// The rendezvous has formed the new round (every surviving agent rejoined).
    pub(super) formed: Option<f64>,
    /// Every surviving agent's old tasks are gone.
    pub(super) stopped: Option<f64>,
    /// Every task of the new round has started (its first mark, before `import tensorflow`).
    pub(super) started: f64,
    /// Every task has its strategy built.
    pub(super) ready: Option<f64>,
    /// Every task has restored the checkpoint.
    pub(super) restored: Option<f64>,
    /// Every task has ended its first step.
    pub(super) first_step: f64,
    /// The last step done before the fault less the step restored.
    pub(super) redone: u64,
}

/// The milestones a report shows, in order, with what each says.
pub(super) const MILESTONES: [&str; 7] = [
    "detected",
    "round formed",
    "old tasks gone",
    "processes started",
    "TensorFlow ready",
    "restored",
    "first step",
];

impl Recovery {
    /// The recovery after a fault at `fault_ns` in round `fault_round`, from every task's
    /// `marks` and the surviving agents' `logs`; `None` while no later round has had every
    /// task end a step after the fault (not recovered).
    pub(super) fn of(
        fault_ns: u128,
        fault_round: u32,
        marks: &[Mark],
        logs: &[&str],
    ) -> Option<Self> {
        let round = marks
            .iter()
            .filter(|m| m.what == What::Step && m.round > fault_round && m.ns > fault_ns)
            .min_by_key(|m| m.ns)?
            .round;
        let of_round = |what: What| {
            marks
                .iter()
                .filter(move |m| m.round == round && m.what == what)
        };
        let tasks: Vec<&str> = of_round(What::Start).map(|m| m.task.as_str()).collect();
        // Each task's first step; every task must have made one.
        let first_steps: Vec<u128> = tasks
            .iter()
            .map(|task| {
                of_round(What::Step)
                    .filter(|m| m.task == *task)
                    .map(|m| m.ns)
                    .min()
            })
            .collect::<Option<_>>()?;
        let ms = |ns: u128| ns.saturating_sub(fault_ns) as f64 / 1e6;
        let last = |what: What| of_round(what).map(|m| m.ns).max();
        let every_agent = |find: &dyn Fn(&str) -> Option<u128>| {
            logs.iter()
                .map(|log| find(log))
                .collect::<Option<Vec<_>>>()?
                .into_iter()
                .max()
        };
        // The agent's line (`round ended round=N`), not the rendezvous's (`round ended
        // rdzv_id=...`) that host 0's agent also logs.
        let detected = every_agent(&|log| {
            agent_log::stamped(log)
                .find(|(ns, line)| *ns > fault_ns && line.contains("round ended round="))
                .map(|(ns, _)| ns)
        });
        // The rendezvous logs the round as it forms it (host 0's agent serves it); an agent
        // logs it once its old tasks are gone (it rejoined before stopping them): the first
        // line is when it formed.
        let round_field = format!(" round={round} ");
        let formed_at = |log: &str| -> Vec<u128> {
            agent_log::stamped(log)
                .filter(|(_, line)| line.contains("round formed") && line.contains(&round_field))
                .map(|(ns, _)| ns)
                .collect()
        };
        let formed = logs.iter().flat_map(|log| formed_at(log)).min();
        // Each agent's last task exit before it holds the new round.
        let stopped = logs
            .iter()
            .filter_map(|log| {
                let holds = formed_at(log).into_iter().max()?;
                agent_log::stamped(log)
                    .filter(|(ns, line)| {
                        *ns > fault_ns && *ns <= holds && line.contains("task exited")
                    })
                    .map(|(ns, _)| ns)
                    .max()
            })
            .max();
        let before = marks
            .iter()
            .filter(|m| m.what == What::Step && m.round == fault_round && m.ns <= fault_ns)
            .map(|m| m.value)
            .max()
            .unwrap_or(0);
        let restored_step = of_round(What::Restored).map(|m| m.value).max().unwrap_or(0);
        Some(Self {
            detected: detected.map(ms),
            formed: formed.map(ms),
            stopped: stopped.map(ms),
            started: ms(last(What::Start)?),
            ready: last(What::Ready).map(ms),
            restored: last(What::Restored).map(ms),
            first_step: ms(first_steps.into_iter().max()?),
            redone: before.saturating_sub(restored_step),
        })
    }

    /// The milestones in [`MILESTONES`]'s order.
    pub(super) fn milestones(&self) -> [Option<f64>; 7] {
        [
            self.detected,
            self.formed,
            self.stopped,
            Some(self.started),
            self.ready,
            self.restored,
            Some(self.first_step),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mark(task: &str, round: u32, what: What, s: f64, value: u64) -> Mark {
        Mark::at(task, round, what, s, value)
    }

    #[test]
    fn milestones_from_marks_and_agent_logs() {
        // 1795497977 s is 2026-11-24T05:26:17Z; the fault at +10 s.
        let t = 1_795_497_977.0;
        let fault = ((t + 10.0) * 1e9) as u128;
        let mut marks = Vec::new();
        for (task, step) in [("a/worker:0", 24), ("b/worker:1", 23)] {
            marks.push(mark(task, 1, What::Start, t, 1));
            marks.push(mark(task, 1, What::Step, t + 9.9, step));
        }
        for (task, delay) in [("a/worker:0", 0.0), ("b/worker:1", 0.5)] {
            marks.push(mark(task, 2, What::Start, t + 12.0 + delay, 2));
            marks.push(mark(task, 2, What::Ready, t + 15.0 + delay, 0));
            marks.push(mark(task, 2, What::Restored, t + 15.5 + delay, 20));
            marks.push(mark(task, 2, What::Step, t + 16.0 + delay, 21));
            marks.push(mark(task, 2, What::Step, t + 17.0 + delay, 22));
        }
        // Host 0's agent serves the rendezvous, whose own lines are not the agent's.
        let a = "2026-11-24T05:26:27.900Z  INFO elastic::rendezvous: round ended rdzv_id=j round=1\n\
                 2026-11-24T05:26:28.000Z  INFO elastic::agent: round ended round=1 reason=failed\n\
                 2026-11-24T05:26:28.200Z  INFO elastic::rendezvous: round formed rdzv_id=j round=2 nodes=2\n\
                 2026-11-24T05:26:28.500Z  INFO launcher::supervise: task exited task=a/worker:0\n\
                 2026-11-24T05:26:29.000Z  INFO elastic::agent: round formed round=2 rank=0\n";
        // Host b's agent rejoined at once; its old task took the grace to exit, after a's
        // new task started.
        let b = "2026-11-24T05:26:27.500Z  INFO elastic::agent: round ended round=1 reason=failed\n\
                 2026-11-24T05:26:29.100Z  INFO launcher::supervise: task exited task=b/worker:1\n\
                 2026-11-24T05:26:29.200Z  INFO elastic::agent: round formed round=2 rank=1\n";
        let found = Recovery::of(fault, 1, &marks, &[a, b]).unwrap();
        let near = |got: Option<f64>, want: f64| got.is_some_and(|g| (g - want).abs() < 1.0);
        assert!(near(found.detected, 1000.0), "{found:?}");
        assert!(near(found.formed, 1200.0), "{found:?}");
        assert!(near(found.stopped, 2100.0), "{found:?}");
        assert!(near(Some(found.started), 2500.0), "{found:?}");
        assert!(near(found.ready, 5500.0), "{found:?}");
        assert!(near(found.restored, 6000.0), "{found:?}");
        assert!(near(Some(found.first_step), 6500.0), "{found:?}");
        assert_eq!(found.redone, 4);
        // Before any task of a later round has stepped: not recovered.
        let early: Vec<Mark> = marks
            .iter()
            .filter(|m| m.what != What::Step || m.round == 1)
            .cloned()
            .collect();
        assert_eq!(Recovery::of(fault, 1, &early, &[a, b]), None);
    }
}
