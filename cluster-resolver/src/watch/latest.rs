//! The last spec a watch emitted, so it emits only changes.

use cluster_spec::ClusterSpec;

/// The spec last emitted; [`changed`](Self::changed) lets a spec through only when it differs
/// (by [`ClusterSpec`]'s equality, which ignores job order and dense/sparse form, as TF's).
#[derive(Debug, Default)]
pub(crate) struct Latest {
    last: Option<ClusterSpec>,
}

impl Latest {
    /// `Some(spec)` (now the latest) when it differs from the last one, else `None`.
    pub(crate) fn changed(&mut self, spec: ClusterSpec) -> Option<ClusterSpec> {
        if self.last.as_ref() == Some(&spec) {
            return None;
        }
        self.last = Some(spec.clone());
        Some(spec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_changes_pass() {
        let a = ClusterSpec::builder().job("w", ["a:1"]).build().unwrap();
        let b = ClusterSpec::builder().job("w", ["b:1"]).build().unwrap();
        let mut latest = Latest::default();
        assert_eq!(latest.changed(a.clone()), Some(a.clone()));
        assert_eq!(latest.changed(a.clone()), None);
        assert_eq!(latest.changed(b.clone()), Some(b));
        assert_eq!(latest.changed(a.clone()), Some(a));
    }
}
