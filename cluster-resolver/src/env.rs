//! [`Env`]: where a resolver reads environment variables from.

use std::collections::BTreeMap;

use crate::Error;

/// The environment variables a resolver reads.
///
/// [`Env::process`] reads the process environment at each call (so a resolver follows a
/// variable rewritten after it was built, as TensorFlow's resolvers read `os.environ` on each
/// call); [`Env::from_iter`](FromIterator::from_iter) is a fixed map, so tests never mutate the
/// process environment.
///
/// ```
/// use cluster_resolver::Env;
///
/// let env = Env::from_iter([("SLURM_PROCID", "3")]);
/// assert_eq!(env.get("SLURM_PROCID").as_deref(), Some("3"));
/// assert_eq!(env.get("SLURM_NTASKS"), None);
/// assert_eq!(
///     env.require("SLURM_NTASKS").unwrap_err().to_string(),
///     "environment variable SLURM_NTASKS is not set"
/// );
/// ```
#[derive(Debug, Clone, Default)]
pub struct Env {
    fixed: Option<BTreeMap<String, String>>,
}

impl Env {
    /// The process environment, read afresh at every lookup.
    pub fn process() -> Self {
        Self { fixed: None }
    }

    /// The value of `name`, or `None` if it is unset (or, in the process environment, not
    /// valid Unicode).
    pub fn get(&self, name: &str) -> Option<String> {
        match &self.fixed {
            Some(vars) => vars.get(name).cloned(),
            None => std::env::var(name).ok(),
        }
    }

    /// The value of `name`, or [`Error::MissingVariable`] naming it.
    pub fn require(&self, name: &str) -> Result<String, Error> {
        self.get(name)
            .ok_or_else(|| Error::MissingVariable { name: name.into() })
    }

    /// Whether `name` is set.
    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// Whether this reads the process environment (rather than a fixed map).
    pub fn is_process(&self) -> bool {
        self.fixed.is_none()
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for Env {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(vars: I) -> Self {
        Self {
            fixed: Some(
                vars.into_iter()
                    .map(|(k, v)| (k.into(), v.into()))
                    .collect(),
            ),
        }
    }
}
