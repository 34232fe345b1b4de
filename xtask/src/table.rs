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

/// Median, least and most of repeated measurements, shown after a figure.
#[derive(Clone, Copy)]
pub(crate) struct Spread {
    pub(crate) min: f64,
    pub(crate) max: f64,
    pub(crate) count: usize,
}

pub(crate) struct Row {
    what: String,
    peer: Option<f64>,
    ours: f64,
    unit: &'static str,
    target: Target,
    peer_spread: Option<Spread>,
    ours_spread: Option<Spread>,
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
            peer_spread: None,
            ours_spread: None,
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

    /// Without the peer's figure (not measured).
    pub(crate) fn without_peer(self) -> Self {
        Self { peer: None, ..self }
    }

    /// Shows the range and count of our measurements after our median.
    pub(crate) fn ours_spread(self, spread: Spread) -> Self {
        Self {
            ours_spread: Some(spread),
            ..self
        }
    }

    /// Shows the range and count of the peer's measurements after its median.
    pub(crate) fn peer_spread(self, spread: Spread) -> Self {
        Self {
            peer_spread: Some(spread),
            ..self
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

fn with_spread(value: f64, unit: &str, spread: Option<Spread>) -> String {
    let shown = figure(value, unit);
    match spread {
        Some(s) if s.count > 1 => format!(
            "{shown} ({}–{}, n={})",
            figure(s.min, "").trim_end(),
            figure(s.max, "").trim_end(),
            s.count
        ),
        Some(s) => format!("{shown} (n={})", s.count),
        None => shown,
    }
}

/// The table of `rows`, the peer's column headed `peer` and the ratio `ratio` (e.g. `TF / ours`).
pub(crate) fn render(peer: &str, ratio: &str, rows: &[Row]) -> String {
    let mut out = format!("| work | {peer} | tfcluster | {ratio} | target | met |\n");
    out.push_str("|---|---|---|---|---|---|\n");
    for row in rows {
        let peer = row
            .peer
            .map_or("—".into(), |p| with_spread(p, row.unit, row.peer_spread));
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
            with_spread(row.ours, row.unit, row.ours_spread),
            row.met()
        );
    }
    out
}
