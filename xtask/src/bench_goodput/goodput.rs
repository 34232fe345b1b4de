//! Goodput over a window of a run: the time the steps that were kept would take at the run's
//! own step time, over the wall time. Steps redone after a restart (those since the last
//! checkpoint) count once, as the training's progress counts them; a step's mean time
//! includes the checkpoints, so a run without faults has a goodput of 1.

use super::marks::{Mark, What};

/// What a window of a run made.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Goodput {
    /// Productive step time over wall time, 0 to 1.
    pub(super) ratio: f64,
    /// The training's progress over the window: its step at the end less its step at the start.
    pub(super) productive: u64,
    /// Steps ended in the window, redone ones included.
    pub(super) ended: u64,
    /// The mean time between two steps of one round, in milliseconds.
    pub(super) step_ms: f64,
}

impl Goodput {
    /// Goodput from `start_ns` to `end_ns`, by the chiefs' step marks (a step is one all-reduce
    /// of every task: each is counted once); `None` without two steps in a row.
    pub(super) fn of(marks: &[Mark], start_ns: u128, end_ns: u128) -> Option<Self> {
        let mut steps: Vec<&Mark> = marks
            .iter()
            .filter(|m| m.what == What::Step && m.is_chief() && m.ns <= end_ns)
            .collect();
        steps.sort_by_key(|m| m.ns);
        let progress = |at: u128| {
            steps
                .iter()
                .rev()
                .find(|m| m.ns <= at)
                .map_or(0, |m| m.value)
        };
        let inside: Vec<&&Mark> = steps.iter().filter(|m| m.ns > start_ns).collect();
        // A mark may end several steps (ParameterServerStrategy's chief marks each batch):
        // the mean step time is over the steps of consecutive marks of one process.
        let (gap_ms, gap_steps) = inside
            .windows(2)
            .filter(|w| {
                w[0].round == w[1].round && w[0].task == w[1].task && w[1].value > w[0].value
            })
            .fold((0.0, 0u64), |(ms, steps), w| {
                (
                    ms + (w[1].ns - w[0].ns) as f64 / 1e6,
                    steps + (w[1].value - w[0].value),
                )
            });
        if gap_steps == 0 || end_ns <= start_ns {
            return None;
        }
        let step_ms = gap_ms / gap_steps as f64;
        let productive = progress(end_ns).saturating_sub(progress(start_ns));
        let wall_ms = (end_ns - start_ns) as f64 / 1e6;
        Some(Self {
            ratio: productive as f64 * step_ms / wall_ms,
            productive,
            ended: inside.len() as u64,
            step_ms,
        })
    }

    /// This window's goodput at another step time, `step_ms` (measured where the run was
    /// undisturbed: a round of fewer workers steps at its own pace, which is not the job's).
    pub(super) fn at_step_ms(self, step_ms: f64) -> Self {
        Self {
            ratio: self.ratio * step_ms / self.step_ms,
            step_ms,
            ..self
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(task: &str, round: u32, s: f64, value: u64) -> Mark {
        Mark::at(task, round, What::Step, s, value)
    }

    #[test]
    fn redone_steps_count_once() {
        // Steps 1 to 20 a second apart (t = 1..20), a fault, then round 2 restores step 10
        // and does 11 to 30 from t = 30 on: 30 steps kept in 49 s of 1 s steps.
        let mut marks: Vec<Mark> = (1..=20)
            .map(|i| step("h/worker:0", 1, i as f64, i))
            .collect();
        marks.extend((11..=30).map(|i| step("g/worker:0", 2, 19.0 + i as f64, i)));
        // Another task's steps are the same steps: not counted again.
        marks.push(step("h/worker:1", 1, 5.0, 5));
        let found = Goodput::of(&marks, 0, 49_000_000_000).unwrap();
        assert_eq!((found.productive, found.ended), (30, 40));
        assert!((found.step_ms - 1000.0).abs() < 1e-6, "{found:?}");
        assert!((found.ratio - 30.0 / 49.0).abs() < 1e-9, "{found:?}");
        assert_eq!(Goodput::of(&marks[..1], 0, 10), None);
        // At the 0.98 s steps of a faster part of the run: the same steps, less time.
        let faster = found.at_step_ms(980.0);
        assert_eq!(faster.productive, 30);
        assert!(
            (faster.ratio - 30.0 * 0.98 / 49.0).abs() < 1e-9,
            "{faster:?}"
        );
    }

    #[test]
    fn a_mark_may_end_several_steps() {
        // ParameterServerStrategy's chief marks every 10 steps, each batch 2 s: 0.2 s a step.
        let marks: Vec<Mark> = (1..=10)
            .map(|i| step("h/chief:0", 1, 2.0 * i as f64, 10 * i))
            .collect();
        let found = Goodput::of(&marks, 1_000_000_000, 21_000_000_000).unwrap();
        assert!((found.step_ms - 200.0).abs() < 1e-6, "{found:?}");
        assert_eq!(found.productive, 100);
        assert!((found.ratio - 1.0).abs() < 1e-9, "{found:?}");
    }
}
