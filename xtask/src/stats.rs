//! The figures a benchmark reports of repeated measurements.

/// The median of `values` (the upper one of an even count); NaN when there are none.
pub(crate) fn median(mut values: Vec<f64>) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Median, least and most of repeated measurements.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Summary {
    pub(crate) median: f64,
    pub(crate) min: f64,
    pub(crate) max: f64,
    pub(crate) count: usize,
}

impl Summary {
    /// The summary of `values`; `None` when there are none.
    pub(crate) fn of(values: &[f64]) -> Option<Self> {
        if values.is_empty() {
            return None;
        }
        Some(Self {
            median: median(values.to_vec()),
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            count: values.len(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summarises() {
        let s = Summary::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max, s.count), (2.0, 1.0, 3.0, 3));
        assert!(Summary::of(&[]).is_none());
        assert!(median(Vec::new()).is_nan());
    }
}
