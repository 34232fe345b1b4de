//! Reading the step's `SLURM_*` variables, with TensorFlow's wording when one is missing.

use super::Error as SlurmError;
use crate::{Env, Error};

/// This task's rank in the step.
pub(super) const PROCID: &str = "SLURM_PROCID";
/// The number of tasks in the step.
pub(super) const STEP_NUM_TASKS: &str = "SLURM_STEP_NUM_TASKS";
/// The step's nodes, a hostlist in Slurm's node order.
pub(super) const STEP_NODELIST: &str = "SLURM_STEP_NODELIST";
/// Tasks on each node of the nodelist, e.g. `2(x2),1`.
pub(super) const STEP_TASKS_PER_NODE: &str = "SLURM_STEP_TASKS_PER_NODE";
/// The node this task runs on, as Slurm names it.
pub(super) const NODENAME: &str = "SLURMD_NODENAME";
/// How srun laid tasks out over nodes (`cyclic`, `plane`, …); unset for the default, block.
pub(super) const DISTRIBUTION: &str = "SLURM_DISTRIBUTION";

/// The value of a variable Slurm sets in every step; missing, it is
/// [`SlurmError::VariableMissing`] (TensorFlow's "Not running inside a SLURM step?").
pub(super) fn required(env: &Env, name: &'static str) -> Result<String, Error> {
    env.get(name)?
        .ok_or(SlurmError::VariableMissing { name: name.into() }.into())
}

/// A required variable holding a count (`SLURM_PROCID`, `SLURM_STEP_NUM_TASKS`).
pub(super) fn required_count(env: &Env, name: &'static str) -> Result<u32, Error> {
    let value = required(env, name)?;
    parse_count(name, &value)
}

/// Parses a decimal `u32` that Slurm wrote; the error names the variable and its value.
pub(super) fn parse_count(name: &str, value: &str) -> Result<u32, Error> {
    // Slurm writes plain ASCII digits; `str::parse` alone would also take a leading `+`.
    let reason = if value.is_empty() {
        "expected a decimal number, found nothing".to_owned()
    } else if !value.bytes().all(|b| b.is_ascii_digit()) {
        "expected a decimal number".to_owned()
    } else {
        match value.parse() {
            Ok(n) => return Ok(n),
            Err(_) => format!("does not fit in 32 bits (at most {})", u32::MAX),
        }
    };
    Err(Error::InvalidVariable {
        name: name.into(),
        value: value.into(),
        reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_variable_uses_tensorflow_wording() {
        let env = Env::from_iter([("SLURM_PROCID", "1")]);
        assert_eq!(required_count(&env, PROCID).unwrap(), 1);
        assert_eq!(
            required(&env, STEP_NUM_TASKS).unwrap_err().to_string(),
            "SLURM_STEP_NUM_TASKS not found in environment. Not running inside a SLURM step?"
        );
    }

    #[test]
    fn counts_are_plain_digits() {
        assert_eq!(parse_count("X", "0").unwrap(), 0);
        assert_eq!(parse_count("X", "4294967295").unwrap(), u32::MAX);
        for bad in ["", "+1", "-1", " 1", "1 ", "x", "4294967296", "١"] {
            let e = parse_count("SLURM_PROCID", bad).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!(
                    "environment variable SLURM_PROCID={bad:?} is invalid"
                )),
                "{e}"
            );
        }
    }
}
