//! The crate's error type and the reasons a device name fails to parse.

use std::fmt;

use cluster_spec::__private::quote::{excerpt, quote};
use cluster_spec::job_name;

/// Everything that can go wrong in this crate.
///
/// Messages name the offending job, task and value; parse errors also give the offset (in bytes,
/// which equals characters here: the grammar is ASCII and parsing stops at the first character
/// outside it) of the first character that does not fit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A device name does not follow TensorFlow's C++ `DeviceNameUtils::ParseFullName` grammar.
    #[error(
        "invalid device name {}: {reason} (offset {position})",
        quote(.name, *.position)
    )]
    InvalidDeviceName {
        /// The text that was parsed.
        name: String,
        /// Offset of the first character that does not fit the grammar.
        position: usize,
        /// What was wrong there.
        reason: ParseErrorKind,
    },
    /// A device filter given for a task does not parse (TensorFlow's C++ runtime reports
    /// `Invalid filter: <filter>` when it connects; we report it when the filter is set).
    #[error(
        "Invalid filter: {} for /job:{}/task:{task}: {reason} (offset {position})",
        quote(.filter, *.position),
        excerpt(.job, 0)
    )]
    InvalidFilter {
        /// The job of the task the filter was given for.
        job: String,
        /// The index of the task the filter was given for.
        task: u32,
        /// The filter text.
        filter: String,
        /// Offset of the first character of `filter` that does not fit the grammar.
        position: usize,
        /// What was wrong there.
        reason: ParseErrorKind,
    },
    /// A job name is not `[A-Za-z][A-Za-z0-9_]*`.
    #[error("invalid job name {}: {reason}", quote(.job, job_name::problem_at(.job)))]
    InvalidJobName {
        /// The rejected name.
        job: String,
        /// What was wrong with it.
        reason: ParseErrorKind,
    },
    /// A device type given to a [`DeviceName`](crate::DeviceName) builder is not
    /// `[A-Za-z][A-Za-z0-9_]*`.
    #[error(
        "invalid device type {}: {reason}",
        quote(.device_type, job_name::problem_at(.device_type))
    )]
    InvalidDeviceType {
        /// The rejected type.
        device_type: String,
        /// What was wrong with it.
        reason: ParseErrorKind,
    },
    /// A task index is negative or above 2^31 − 1, the largest index the proto's `int32` holds.
    #[error(
        "task index {task} of job {} is out of range: task indices are 0..=2147483647 \
         (the proto's int32)",
        quote(.job, 0)
    )]
    TaskIndexOutOfRange {
        /// The job the index was given for.
        job: String,
        /// The rejected index.
        task: i64,
    },
    /// A replica, task or device id given to a [`DeviceName`](crate::DeviceName) builder is
    /// above 2^31 − 1, the largest TensorFlow's device names hold (`int`).
    #[error("{field} {value} is out of range: at most 2147483647")]
    ValueOutOfRange {
        /// Which field: `replica`, `task` or `device id`.
        field: &'static str,
        /// The rejected value.
        value: u32,
    },
    /// Two device names set different values for the same field
    /// (TensorFlow's `MergeDevNames` wording).
    #[error(
        "Cannot merge devices with incompatible {field}: '{}' and '{}'",
        excerpt(.target, 0),
        excerpt(.other, 0)
    )]
    IncompatibleMerge {
        /// The conflicting field, plural as TensorFlow writes it: `jobs`, `replicas`, `tasks`,
        /// `types` or `ids`.
        field: &'static str,
        /// The name merged into, in canonical form.
        target: String,
        /// The name merged from, in canonical form.
        other: String,
    },
    /// A `ClusterDeviceFilters` proto lists the same job twice.
    #[error(
        "job {} appears more than once in the ClusterDeviceFilters proto",
        quote(.job, 0)
    )]
    DuplicateJob {
        /// The repeated job name.
        job: String,
    },
}

/// Why a device name failed to parse; carried by [`Error::InvalidDeviceName`],
/// [`Error::InvalidFilter`] and [`Error::InvalidJobName`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParseErrorKind {
    /// The name is not empty and does not start with `/` (`job:foo`, `cpu:0`).
    MissingLeadingSlash,
    /// The name ends with a `/` that starts no component (`/job:foo/`).
    TrailingSlash,
    /// A `/` starts something that is not one of the six component prefixes
    /// (`/JOB:x`, `/cpu`, `/bar:3`). Prefixes are case-sensitive.
    UnknownComponent(String),
    /// Text follows a complete component without a `/` (`/task:3x`, `/job:*x`).
    UnexpectedText(String),
    /// A job name or device type does not start with a letter (`/job:1x`, `/job:`).
    NameStart {
        /// `"job name"` or `"device type"`.
        what: &'static str,
        /// The character found instead, `None` at the end of the text.
        found: Option<char>,
    },
    /// A job name or device type holds a character other than a letter, digit or `_`
    /// (`/job:foo-bar`, `/job:foo:bar`).
    NameChar {
        /// `"job name"` or `"device type"`.
        what: &'static str,
        /// The offending character.
        found: char,
    },
    /// A replica, task or device id is neither a decimal number nor `*` (`/task:-2`, `/gpu:`).
    ExpectedNumber {
        /// The component prefix the number belongs to, e.g. `"/task:"`.
        after: &'static str,
        /// The character found instead, `None` at the end of the text.
        found: Option<char>,
    },
    /// A replica, task or device id is above 2^31 − 1.
    NumberOutOfRange {
        /// The digits as written.
        digits: String,
    },
}

/// Writes a found character, or "the end" when there is none.
struct Found(Option<char>);

impl fmt::Display for Found {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(c) => write!(f, "{c:?}"),
            None => f.write_str("the end of the name"),
        }
    }
}

impl fmt::Display for ParseErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::MissingLeadingSlash => f.write_str("a device name must start with '/'"),
            Self::TrailingSlash => f.write_str("trailing '/' after the last component"),
            Self::UnknownComponent(text) => write!(
                f,
                "unknown component {}: expected /job:, /replica:, /task:, /device:, \
                 /cpu:, /CPU:, /gpu: or /GPU:",
                quote(text, 0)
            ),
            Self::UnexpectedText(text) => {
                write!(
                    f,
                    "unexpected {} after a component (missing '/'?)",
                    quote(text, 0)
                )
            }
            Self::NameStart { what, found } => {
                write!(
                    f,
                    "{what} must start with a letter, found {}",
                    Found(*found)
                )
            }
            Self::NameChar { what, found } => write!(
                f,
                "{what} may contain only letters, digits and '_', found {found:?}"
            ),
            Self::ExpectedNumber { after, found } => write!(
                f,
                "expected a number or '*' after {after:?}, found {}",
                Found(*found)
            ),
            Self::NumberOutOfRange { digits } => {
                write!(
                    f,
                    "number {} is out of range: at most 2147483647",
                    excerpt(digits, 0)
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_value_and_position() {
        let err = Error::InvalidDeviceName {
            name: "/job:1x/task:0".into(),
            position: 5,
            reason: ParseErrorKind::NameStart {
                what: "job name",
                found: Some('1'),
            },
        };
        assert_eq!(
            err.to_string(),
            "invalid device name \"/job:1x/task:0\": job name must start with a letter, \
             found '1' (offset 5)"
        );
        let err = Error::TaskIndexOutOfRange {
            job: "worker".into(),
            task: -1,
        };
        assert!(err.to_string().contains("task index -1 of job \"worker\""));
    }

    #[test]
    fn end_of_name_is_spelled_out() {
        let kind = ParseErrorKind::ExpectedNumber {
            after: "/gpu:",
            found: None,
        };
        assert_eq!(
            kind.to_string(),
            "expected a number or '*' after \"/gpu:\", found the end of the name"
        );
    }
}
