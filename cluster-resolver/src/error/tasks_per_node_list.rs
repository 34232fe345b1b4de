//! [`TasksPerNodeError`]: why a `SLURM_STEP_TASKS_PER_NODE` list does not parse, and at which
//! byte.

use std::fmt;

use cluster_spec::__private::quote::quote;

/// A tasks-per-node list (`2(x3),1`) that breaks the grammar or passes the node limit, from
/// [`hostlist::expand_tasks_per_node`](crate::hostlist::expand_tasks_per_node).
///
/// The message quotes the input and names the byte: `invalid tasks-per-node list "2(x3":
/// expected ')' at byte 4, found end of input`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TasksPerNodeError {
    /// The whole list.
    pub input: String,
    /// Byte offset of the problem in `input`; each [`TasksPerNodeErrorKind`] says which byte.
    pub pos: usize,
    /// What is wrong there.
    pub kind: TasksPerNodeErrorKind,
}

/// Why a tasks-per-node list does not parse; carried by [`TasksPerNodeError`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TasksPerNodeErrorKind {
    /// The list does not follow `N` / `N(xK)`, comma separated; `pos` is the first byte that
    /// does not.
    UnexpectedChar {
        /// What the grammar allows there.
        expected: &'static str,
        /// The character found instead; `None` at the end of the input.
        found: Option<char>,
    },
    /// A count does not fit in 32 bits; `pos` is its first digit.
    NumberOverflow,
    /// The list names more nodes than `hostlist::MAX_HOSTS`; `pos` is the element that passed
    /// the limit.
    TooManyNodes {
        /// The limit, `hostlist::MAX_HOSTS`.
        max: usize,
    },
}

impl TasksPerNodeError {
    /// The error `kind` at byte `pos` of `input`.
    pub(crate) fn new(input: &str, pos: usize, kind: TasksPerNodeErrorKind) -> Self {
        Self {
            input: input.to_owned(),
            pos,
            kind,
        }
    }
}

impl fmt::Display for TasksPerNodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pos = self.pos;
        write!(
            f,
            "invalid tasks-per-node list {}: ",
            quote(&self.input, pos)
        )?;
        match &self.kind {
            TasksPerNodeErrorKind::UnexpectedChar {
                expected,
                found: Some(c),
            } => write!(f, "expected {expected} at byte {pos}, found {c:?}"),
            TasksPerNodeErrorKind::UnexpectedChar {
                expected,
                found: None,
            } => write!(f, "expected {expected} at byte {pos}, found end of input"),
            TasksPerNodeErrorKind::NumberOverflow => {
                write!(f, "number at byte {pos} does not fit in 32 bits")
            }
            TasksPerNodeErrorKind::TooManyNodes { max } => write!(
                f,
                "expands to more than {max} nodes (limit passed at byte {pos})"
            ),
        }
    }
}

impl std::error::Error for TasksPerNodeError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_names_input_and_byte() {
        let e = TasksPerNodeError::new(
            "2(x3",
            4,
            TasksPerNodeErrorKind::UnexpectedChar {
                expected: "')'",
                found: None,
            },
        );
        assert_eq!(
            e.to_string(),
            "invalid tasks-per-node list \"2(x3\": expected ')' at byte 4, found end of input"
        );
    }
}
