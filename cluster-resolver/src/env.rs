//! [`Env`]: where a resolver reads environment variables from.

use std::collections::BTreeMap;
use std::ffi::OsString;

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
/// assert_eq!(env.get("SLURM_PROCID")?.as_deref(), Some("3"));
/// assert_eq!(env.get("SLURM_NTASKS")?, None);
/// assert_eq!(
///     env.require("SLURM_NTASKS").unwrap_err().to_string(),
///     "environment variable SLURM_NTASKS is not set"
/// );
///
/// // A value that is not UTF-8 is an error naming the variable, never "unset".
/// # #[cfg(unix)] {
/// use std::os::unix::ffi::OsStringExt;
/// let env = Env::from_iter([("TF_CONFIG", std::ffi::OsString::from_vec(vec![0xff]))]);
/// assert_eq!(
///     env.get("TF_CONFIG").unwrap_err().to_string(),
///     "environment variable TF_CONFIG is set but is not valid UTF-8"
/// );
/// # }
/// # Ok::<(), cluster_resolver::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct Env {
    fixed: Option<BTreeMap<String, OsString>>,
}

impl Env {
    /// The process environment, read afresh at every lookup.
    pub fn process() -> Self {
        Self { fixed: None }
    }

    /// The value of `name`, `None` if it is unset, or [`Error::NotUnicode`] naming it if it is
    /// set but not UTF-8 (a variable that is set is never taken for an unset one).
    pub fn get(&self, name: &str) -> Result<Option<String>, Error> {
        let value = match &self.fixed {
            Some(vars) => vars.get(name).cloned(),
            None => std::env::var_os(name),
        };
        value
            .map(|v| {
                v.into_string().map_err(|_| Error::NotUnicode {
                    variable: name.into(),
                })
            })
            .transpose()
    }

    /// The value of `name`, or [`Error::MissingVariable`] naming it (or [`Error::NotUnicode`]).
    pub fn require(&self, name: &str) -> Result<String, Error> {
        self.get(name)?
            .ok_or_else(|| Error::MissingVariable { name: name.into() })
    }

    /// Whether `name` is set (to any value, UTF-8 or not).
    pub fn contains(&self, name: &str) -> bool {
        match &self.fixed {
            Some(vars) => vars.contains_key(name),
            None => std::env::var_os(name).is_some(),
        }
    }
}

/// Values are `OsString`s (a `&str` or `String` converts), so tests can give a value that is
/// not UTF-8, as the process environment can hold one.
impl<K: Into<String>, V: Into<OsString>> FromIterator<(K, V)> for Env {
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
