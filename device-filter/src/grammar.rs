//! The device-name grammar of TensorFlow's C++ `DeviceNameUtils::ParseFullName`.
//!
//! ```text
//! fullname  := "" | "/" | component+          ("" and "/" parse to all-unset)
//! component := "/job:"     ("*" | JOB)
//!            | "/replica:" ("*" | NUM)
//!            | "/task:"    ("*" | NUM)
//!            | "/device:"  ("*" | TYPE) [ ":" ("*" | NUM) ]
//!            | ("/cpu:" | "/CPU:") ("*" | NUM)     -> type "CPU"
//!            | ("/gpu:" | "/GPU:") ("*" | NUM)     -> type "GPU"
//! JOB  := [A-Za-z][A-Za-z0-9_]*   (runs to the next "/" or the end)
//! TYPE := [A-Za-z][A-Za-z0-9_]*   (runs to the next "/" or ":" or the end)
//! NUM  := [0-9]+                  (at most 2^31 - 1 here; TensorFlow wraps larger values)
//! ```
//!
//! Components come in any order and may repeat; a later one overwrites what an earlier one set.
//! A `/device:` component sets both the type and the id (an absent id clears an earlier one), as
//! TensorFlow does.

use std::str::FromStr;

use crate::DeviceName;
use crate::error::{Error, ParseErrorKind};
use crate::tokens::{Failure, MAX_INDEX, name_len};

/// Parses `s` with TensorFlow's `ParseFullName` grammar.
pub(crate) fn parse_full_name(s: &str) -> Result<DeviceName, Failure> {
    let mut name = DeviceName::default();
    if s == "/" {
        return Ok(name);
    }
    let mut pos = 0;
    while pos < s.len() {
        let rest = &s[pos..];
        if let Some(after) = rest.strip_prefix("/job:") {
            pos += rest.len() - after.len();
            name.job = if after.starts_with('*') {
                pos += 1;
                None
            } else {
                let len = name_len(s, pos, "job name", b"/")?;
                let job = &s[pos..pos + len];
                pos += len;
                Some(job.into())
            };
        } else if let Some(after) = rest.strip_prefix("/replica:") {
            pos += rest.len() - after.len();
            name.replica = number_or_star(s, &mut pos, "/replica:")?;
        } else if let Some(after) = rest.strip_prefix("/task:") {
            pos += rest.len() - after.len();
            name.task = number_or_star(s, &mut pos, "/task:")?;
        } else if let Some(after) = rest.strip_prefix("/device:") {
            pos += rest.len() - after.len();
            name.device_type = if after.starts_with('*') {
                pos += 1;
                None
            } else {
                let len = name_len(s, pos, "device type", b"/:")?;
                let ty = &s[pos..pos + len];
                pos += len;
                Some(ty.into())
            };
            name.id = if s[pos..].starts_with(':') {
                pos += 1;
                number_or_star(s, &mut pos, "/device:TYPE:")?
            } else {
                None
            };
        } else if let Some((prefix, ty)) = legacy_prefix(rest) {
            pos += prefix.len();
            name.device_type = Some(ty.into());
            name.id = number_or_star(s, &mut pos, prefix)?;
        } else {
            return Err((pos, no_progress(pos, rest)));
        }
    }
    Ok(name)
}

// Here rather than in device_name.rs, so that the name knows nothing of how it is read.
impl FromStr for DeviceName {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        parse_full_name(s).map_err(|(position, reason)| Error::InvalidDeviceName {
            name: s.to_owned(),
            position,
            reason,
        })
    }
}

/// `*` (unset) or a decimal number at `*pos`, advancing past it.
fn number_or_star(s: &str, pos: &mut usize, after: &'static str) -> Result<Option<u32>, Failure> {
    let rest = &s[*pos..];
    if rest.starts_with('*') {
        *pos += 1;
        return Ok(None);
    }
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        let found = rest.chars().next();
        return Err((*pos, ParseErrorKind::ExpectedNumber { after, found }));
    }
    let text = &rest[..digits];
    let value = text
        .bytes()
        .try_fold(0u32, |acc, d| {
            acc.checked_mul(10)
                .and_then(|v| v.checked_add(u32::from(d - b'0')))
                .filter(|&v| v <= MAX_INDEX)
        })
        .ok_or_else(|| {
            (
                *pos,
                ParseErrorKind::NumberOutOfRange {
                    digits: text.to_owned(),
                },
            )
        })?;
    *pos += digits;
    Ok(Some(value))
}

/// The legacy `/cpu:`, `/CPU:`, `/gpu:`, `/GPU:` prefixes and the type each stands for.
fn legacy_prefix(rest: &str) -> Option<(&'static str, &'static str)> {
    [
        ("/cpu:", "CPU"),
        ("/CPU:", "CPU"),
        ("/gpu:", "GPU"),
        ("/GPU:", "GPU"),
    ]
    .into_iter()
    .find(|(prefix, _)| rest.starts_with(prefix))
}

/// Why no component matched at `pos`.
fn no_progress(pos: usize, rest: &str) -> ParseErrorKind {
    if rest == "/" {
        ParseErrorKind::TrailingSlash
    } else if let Some(tail) = rest.strip_prefix('/') {
        let end = tail.find('/').map_or(rest.len(), |i| i + 1);
        ParseErrorKind::UnknownComponent(rest[..end].to_owned())
    } else if pos == 0 {
        ParseErrorKind::MissingLeadingSlash
    } else {
        let end = rest.find('/').unwrap_or(rest.len());
        ParseErrorKind::UnexpectedText(rest[..end].to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fails_at(s: &str) -> usize {
        parse_full_name(s).expect_err(s).0
    }

    #[test]
    fn positions_point_at_the_first_bad_character() {
        assert_eq!(fails_at("/job:1x/task:0"), 5);
        assert_eq!(fails_at("/job:foo-bar"), 8);
        assert_eq!(fails_at("/job:foo:bar"), 8);
        assert_eq!(fails_at("/job:foo/"), 8);
        assert_eq!(fails_at("/task:-2"), 6);
        assert_eq!(fails_at("/device:GPU:3x"), 13);
        assert_eq!(fails_at("foobar"), 0);
        assert_eq!(fails_at("/job:a/x:1"), 6);
    }

    #[test]
    fn numbers_stop_at_int32() {
        assert_eq!(
            parse_full_name("/task:2147483647").map(|n| n.task),
            Ok(Some(MAX_INDEX))
        );
        assert_eq!(
            parse_full_name("/task:2147483648"),
            Err((
                6,
                ParseErrorKind::NumberOutOfRange {
                    digits: "2147483648".into()
                }
            ))
        );
        assert_eq!(
            parse_full_name("/task:00000000000000000000007").map(|n| n.task),
            Ok(Some(7))
        );
    }

    #[test]
    fn non_ascii_fails_at_its_own_offset() {
        assert_eq!(fails_at("/job:wörker"), 6);
        assert_eq!(fails_at("/jöb:w"), 0);
    }
}
