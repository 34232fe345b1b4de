//! Where the test command's time goes: each step's wall time (installing, each check, each
//! suite or group of suites), printed as a table at its end beside the count, so that a
//! slow step is seen in every run, CI's included.

use std::time::{Duration, Instant};

/// The steps timed so far, in the order they ran.
#[derive(Debug, Default)]
pub(crate) struct Timings {
    steps: Vec<(String, Duration)>,
    started: Option<Instant>,
}

impl Timings {
    /// Runs `f` as step `step`, and keeps its wall time.
    pub(crate) fn time<T>(&mut self, step: &str, f: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        self.started.get_or_insert(start);
        let value = f();
        self.steps.push((step.to_owned(), start.elapsed()));
        value
    }

    /// Adds step `step`, which ran beside the others for `took`, marked so.
    pub(crate) fn beside(&mut self, step: &str, took: Duration) {
        self.steps.push((format!("beside: {step}"), took));
    }

    /// The table: a line a step, its seconds and share of the whole, then the total.
    pub(crate) fn table(&self) -> Vec<String> {
        let total = self.started.map_or(Duration::ZERO, |s| s.elapsed());
        let share = |d: Duration| {
            if total.is_zero() {
                0.0
            } else {
                100.0 * d.as_secs_f64() / total.as_secs_f64()
            }
        };
        let mut lines: Vec<String> = self
            .steps
            .iter()
            .map(|(step, d)| format!("{:>7.1} s {:>3.0}%  {step}", d.as_secs_f64(), share(*d)))
            .collect();
        lines.push(format!(
            "{:>7.1} s 100%  in all ({:.1} min)",
            total.as_secs_f64(),
            total.as_secs_f64() / 60.0
        ));
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::Timings;

    #[test]
    fn each_step_is_a_line_and_the_total_closes_the_table() {
        let mut timings = Timings::default();
        let value = timings.time("fmt", || 7);
        assert_eq!(value, 7);
        timings.time("clippy", || {
            std::thread::sleep(std::time::Duration::from_millis(20))
        });
        let table = timings.table();
        assert_eq!(table.len(), 3, "{table:?}");
        assert!(table[0].ends_with("%  fmt"), "{table:?}");
        assert!(table[1].ends_with("%  clippy"), "{table:?}");
        assert!(table[2].contains(" 100%  in all ("), "{table:?}");
    }
}
