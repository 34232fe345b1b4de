//! The marks `goodput_train.py`, `pss_goodput_train.py` and `preemption_goodput_train.py`
//! print, as they reach an agent's stdout behind the task's prefix: `[HOST/JOB:INDEX] goodput ROUND WHAT TIME [VALUE]`.

/// What a mark says happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum What {
    /// The process started (before `import tensorflow`); its value is the pid.
    Start,
    /// TensorFlow imported.
    Imported,
    /// MultiWorkerMirroredStrategy built and its variables made.
    Ready,
    /// The checkpoint restored; its value is the step.
    Restored,
    /// A training step ended; its value is the step.
    Step,
    /// A checkpoint saved (the chief); its value is the step.
    Saved,
    /// A ParameterServerStrategy worker or parameter server serves (`pss_goodput_train.py`).
    Serving,
    /// The job's restarts so far, `TFCLUSTER_RESTART_COUNT` (`preemption_goodput_train.py`).
    Restarts,
}

/// One mark.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Mark {
    /// `HOST/JOB:INDEX`, as the agent prefixes the task's lines.
    pub(super) task: String,
    /// `TFCLUSTER_ROUND` of the task.
    pub(super) round: u32,
    pub(super) what: What,
    /// When, in nanoseconds since the Unix epoch.
    pub(super) ns: u128,
    /// The pid or the step; 0 where the mark has none.
    pub(super) value: u64,
}

impl Mark {
    /// The mark on `line`, if it is one.
    pub(super) fn parse(line: &str) -> Option<Self> {
        let (task, rest) = line.strip_prefix('[')?.split_once("] goodput ")?;
        let mut words = rest.split_whitespace();
        let round = words.next()?.parse().ok()?;
        let what = match words.next()? {
            "start" => What::Start,
            "imported" => What::Imported,
            "ready" => What::Ready,
            "restored" => What::Restored,
            "step" => What::Step,
            "saved" => What::Saved,
            "serving" => What::Serving,
            "restarts" => What::Restarts,
            _ => return None,
        };
        let ns = seconds_ns(words.next()?)?;
        let value = match words.next() {
            Some(value) => value.parse().ok()?,
            None => 0,
        };
        Some(Self {
            task: task.to_owned(),
            round,
            what,
            ns,
            value,
        })
    }

    /// A mark of `task` at `s` seconds since the epoch, for tests.
    #[cfg(test)]
    pub(super) fn at(task: &str, round: u32, what: What, s: f64, value: u64) -> Self {
        Self {
            task: task.into(),
            round,
            what,
            ns: (s * 1e9) as u128,
            value,
        }
    }

    /// Whether the task is its job's first (`worker:0`, TensorFlow's chief here).
    pub(super) fn is_chief(&self) -> bool {
        self.task.ends_with("/worker:0") || self.task.ends_with("/chief:0")
    }
}

/// Every mark in `output` (agents' stdout), in the order printed.
pub(super) fn parse_all(output: &str) -> Vec<Mark> {
    output.lines().filter_map(Mark::parse).collect()
}

/// `SECONDS[.FRACTION]` since the Unix epoch (Python's `time.time()` as printed) in
/// nanoseconds.
fn seconds_ns(text: &str) -> Option<u128> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let digits = fraction.get(..fraction.len().min(9))?;
    let nanos = if digits.is_empty() {
        0
    } else {
        digits.parse::<u128>().ok()? * 10u128.pow(9 - digits.len() as u32)
    };
    Some(whole.parse::<u128>().ok()? * 1_000_000_000 + nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_training_scripts_marks() {
        let step = Mark::parse("[192.0.2.101/worker:1] goodput 3 step 1795497977.250000 42");
        assert_eq!(
            step,
            Some(Mark {
                task: "192.0.2.101/worker:1".into(),
                round: 3,
                what: What::Step,
                ns: 1_795_497_977_250_000_000,
                value: 42,
            })
        );
        let ready = Mark::parse("[h/worker:0] goodput 1 ready 17.5").unwrap();
        assert_eq!(
            (ready.what, ready.ns, ready.value),
            (What::Ready, 17_500_000_000, 0)
        );
        assert!(ready.is_chief());
        let restarts = Mark::parse("[h/worker:1] goodput 4 restarts 17.5 3").unwrap();
        assert_eq!((restarts.what, restarts.value), (What::Restarts, 3));
        // Other lines of the task, and broken marks, are no marks.
        for line in [
            "[h/worker:0] Epoch 1/2",
            "[h/worker:0] goodput x step 1.0 2",
            "[h/worker:0] goodput 1 jumped 1.0",
            "[h/worker:0] goodput 1 step 1.0 two",
            "goodput 1 step 1.0 2",
        ] {
            assert_eq!(Mark::parse(line), None, "{line}");
        }
    }
}
