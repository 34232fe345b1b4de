//! The report of `bench-vs-tf`: one row per measured work, TensorFlow's figure beside ours, the
//! ratio and whether the target is met.

use std::fmt::Write as _;

/// What a row must reach.
#[derive(Clone, Copy)]
pub(super) enum Target {
    None,
    /// TensorFlow's figure over ours at least this.
    AtLeast(f64),
    /// Ours at most this many milliseconds.
    AtMostMs(f64),
}

pub(super) struct Row {
    what: String,
    tf: Option<f64>,
    ours: f64,
    unit: &'static str,
    target: Target,
}

impl Row {
    /// Milliseconds, TensorFlow's and ours.
    pub(super) fn new(what: &str, tf: f64, ours: f64, target: Target) -> Self {
        Self {
            what: what.to_owned(),
            tf: Some(tf),
            ours,
            unit: "ms",
            target,
        }
    }

    /// Megabytes, TensorFlow's and ours.
    pub(super) fn memory(what: &str, tf: f64, ours: f64, target: Target) -> Self {
        Self {
            unit: "MB",
            ..Self::new(what, tf, ours, target)
        }
    }

    /// Milliseconds, ours alone.
    pub(super) fn ours_only(what: &str, ours: f64, target: Target) -> Self {
        Self {
            tf: None,
            ..Self::new(what, 0.0, ours, target)
        }
    }

    fn ratio(&self) -> Option<f64> {
        self.tf.map(|tf| tf / self.ours)
    }

    fn met(&self) -> &'static str {
        match (self.target, self.ratio()) {
            (Target::None, _) => "",
            (Target::AtLeast(want), Some(got)) if got >= want => "yes",
            (Target::AtMostMs(limit), _) if self.ours <= limit => "yes",
            _ => "**no**",
        }
    }
}

fn figure(value: f64, unit: &str) -> String {
    if value >= 100.0 {
        format!("{value:.0} {unit}")
    } else if value >= 1.0 {
        format!("{value:.2} {unit}")
    } else {
        format!("{value:.3} {unit}")
    }
}

pub(super) fn render(rows: &[Row], machine: &str) -> String {
    let mut out = String::from("# tfcluster beside TensorFlow 2.21\n\n");
    let _ = writeln!(out, "Machine: {machine}.\n");
    out.push_str(
        "Command: `cargo xtask bench-vs-tf` (TensorFlow's side in the TensorFlow venv, ours from \
         the criterion benches and release binaries, one after the other in one run). Medians; \
         the ratio is TensorFlow's figure over ours. On a shared or busy machine absolute \
         figures move by up to 2x: compare ratios.\n\n",
    );
    out.push_str("| work | TensorFlow 2.21 | tfcluster | TF / ours | target | met |\n");
    out.push_str("|---|---|---|---|---|---|\n");
    for row in rows {
        let tf = row.tf.map_or("—".into(), |tf| figure(tf, row.unit));
        let ratio = row.ratio().map_or("—".into(), |r| format!("{r:.1}×"));
        let target = match row.target {
            Target::None => String::new(),
            Target::AtLeast(r) => format!("≥ {r}×"),
            Target::AtMostMs(ms) => format!("≤ {ms} ms"),
        };
        let _ = writeln!(
            out,
            "| {} | {tf} | {} | {ratio} | {target} | {} |",
            row.what,
            figure(row.ours, row.unit),
            row.met()
        );
    }
    out
}
