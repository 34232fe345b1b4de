//! A benchmark report's table: one row per measured work, the peer's figure (TensorFlow's,
//! torchrun's) beside ours, the ratio and whether the target is met.

use std::fmt::Write as _;

/// What a row must reach.
#[derive(Clone, Copy)]
pub(crate) enum Target {
    None,
    /// The peer's figure over ours at least this.
    AtLeast(f64),
    /// Ours at most this, in the row's unit.
    AtMost(f64),
}

pub(crate) struct Row {
    what: String,
    peer: Option<f64>,
    ours: f64,
    unit: &'static str,
    target: Target,
}

impl Row {
    /// Milliseconds, the peer's and ours.
    pub(crate) fn new(what: &str, peer: f64, ours: f64, target: Target) -> Self {
        Self {
            what: what.to_owned(),
            peer: Some(peer),
            ours,
            unit: "ms",
            target,
        }
    }

    /// Megabytes, the peer's and ours.
    pub(crate) fn memory(what: &str, peer: f64, ours: f64, target: Target) -> Self {
        Self {
            unit: "MB",
            ..Self::new(what, peer, ours, target)
        }
    }

    /// Milliseconds, ours alone.
    pub(crate) fn ours_only(what: &str, ours: f64, target: Target) -> Self {
        Self {
            peer: None,
            ..Self::new(what, 0.0, ours, target)
        }
    }

    fn ratio(&self) -> Option<f64> {
        self.peer.map(|peer| peer / self.ours)
    }

    fn met(&self) -> &'static str {
        match (self.target, self.ratio()) {
            (Target::None, _) => "",
            (Target::AtLeast(want), Some(got)) if got >= want => "yes",
            (Target::AtMost(limit), _) if self.ours <= limit => "yes",
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

/// The table of `rows`, the peer's column headed `peer` and the ratio `ratio` (e.g. `TF / ours`).
pub(crate) fn render(peer: &str, ratio: &str, rows: &[Row]) -> String {
    let mut out = format!("| work | {peer} | tfcluster | {ratio} | target | met |\n");
    out.push_str("|---|---|---|---|---|---|\n");
    for row in rows {
        let peer = row.peer.map_or("—".into(), |p| figure(p, row.unit));
        let ratio = row.ratio().map_or("—".into(), |r| format!("{r:.1}×"));
        let target = match row.target {
            Target::None => String::new(),
            Target::AtLeast(r) => format!("≥ {r}×"),
            Target::AtMost(limit) => format!("≤ {limit} {}", row.unit),
        };
        let _ = writeln!(
            out,
            "| {} | {peer} | {} | {ratio} | {target} | {} |",
            row.what,
            figure(row.ours, row.unit),
            row.met()
        );
    }
    out
}
