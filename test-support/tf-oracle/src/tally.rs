//! What a differential test compared: the tally it reports, and the loop that compares one
//! batch of TensorFlow's answers with ours, case by case.

use serde_json::Value;

/// Counts what a differential test compared, for its final report.
#[derive(Debug, Default)]
pub struct Tally {
    /// Answers equal to TensorFlow's (values, or errors with TensorFlow's message).
    pub same: usize,
    /// Both failed, with a message of our own (TensorFlow's is an accidental exception).
    pub both_failed: usize,
    /// Documented differences, asserted as such.
    pub documented: usize,
}

impl Tally {
    /// Prints the counts, under `what`, to stderr (shown with `--nocapture`).
    pub fn report(&self, what: &str) {
        eprintln!(
            "{what}: {} answers equal to TensorFlow's, {} failing in both, {} documented differences",
            self.same, self.both_failed, self.documented
        );
    }

    /// Compares `results`, TensorFlow's answers to a batch (one per case, then `more` for
    /// inputs after the cases), with ours: `compare` for each case and its answer. Returns the
    /// `more` answers after the cases.
    ///
    /// # Panics
    ///
    /// If `results` is not an array of one answer per input, or where `compare` panics.
    pub fn compare_each<'r, C>(
        &mut self,
        cases: &[C],
        results: &'r Value,
        more: usize,
        mut compare: impl FnMut(&mut Self, &C, &Value),
    ) -> &'r [Value] {
        let results = crate::one_per_case(results, cases.len() + more);
        for (case, tf) in cases.iter().zip(results) {
            compare(self, case, tf);
        }
        &results[cases.len()..]
    }
}
