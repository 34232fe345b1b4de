//! How each TF_CONFIG key is read: the JSON values TensorFlow's use of the key accepts (within
//! reason), and an error naming the key and the value for the rest. `null` is an absent key
//! throughout, as TensorFlow treats a `null` `rpc_layer` or `session_master`.

use std::fmt;

use serde::Deserialize;
use serde::de::{Deserializer, Unexpected, Visitor};

use cluster_spec::MAX_TASK_INDEX;

pub(super) fn rpc_layer<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    d.deserialize_any(OptionalString { key: "rpc_layer" })
}

pub(super) fn session_master<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    d.deserialize_any(OptionalString {
        key: "session_master",
    })
}

pub(super) fn task_type<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    d.deserialize_any(TaskType)
}

pub(super) fn task_index<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    d.deserialize_any(TaskIndex)
}

/// A string if it is one, else nothing: for `environment`, which TensorFlow never reads, so
/// no value of it may make a TF_CONFIG unusable.
pub(super) fn lenient_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match serde_json::Value::deserialize(d)? {
        serde_json::Value::String(s) => Some(s),
        _ => None,
    })
}

struct OptionalString {
    key: &'static str,
}

impl Visitor<'_> for OptionalString {
    type Value = Option<String>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` to be a string", self.key)
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Some(v.to_owned()))
    }

    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Some(v))
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

/// `task.type`: a string, or an integer, which TensorFlow's `str()` turns into one (its own
/// tests read `123456` as `"123456"`). Other values TensorFlow would stringify too (`true`
/// as `"True"`, `1.5`) are errors: no job has such a name.
struct TaskType;

impl Visitor<'_> for TaskType {
    type Value = Option<String>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("`task.type` to be a string (or an integer, which TensorFlow turns into one)")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Some(v.to_owned()))
    }

    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Some(v))
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

/// `task.index`: a number from 0 to 2^31-1, or a string of ASCII digits (`"1"`, which
/// TensorFlow's `int()` reads, and which launchers that write every value as a string
/// produce). TensorFlow's `int()` would also take `1.9` (as 1), `true`, `" 1"`, `"+1"`,
/// `"1_0"` and negative numbers; each is an error here.
struct TaskIndex;

impl TaskIndex {
    fn in_range<E: serde::de::Error>(
        self,
        v: u64,
        shown: Unexpected<'_>,
    ) -> Result<Option<u32>, E> {
        match u32::try_from(v) {
            Ok(index) if index <= MAX_TASK_INDEX => Ok(Some(index)),
            _ => Err(E::invalid_value(shown, &self)),
        }
    }
}

impl Visitor<'_> for TaskIndex {
    type Value = Option<u32>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`task.index` to be a task index from 0 to {MAX_TASK_INDEX}, \
             as a number or a string of decimal digits"
        )
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Self::Value, E> {
        self.in_range(v, Unexpected::Unsigned(v))
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Self::Value, E> {
        match u64::try_from(v) {
            Ok(v) => self.visit_u64(v),
            Err(_) => Err(E::invalid_value(Unexpected::Signed(v), &self)),
        }
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
        let shown = Unexpected::Str(v);
        if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
            return Err(E::invalid_value(shown, &self));
        }
        // Leading zeros are fine (`int("007")` is 7) but must not overflow the parse.
        let digits = v.trim_start_matches('0');
        match digits.parse::<u64>() {
            Ok(n) => self.in_range(n, shown),
            Err(_) if digits.is_empty() => Ok(Some(0)),
            Err(_) => Err(E::invalid_value(shown, &self)),
        }
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(json: &str) -> Result<Option<u32>, String> {
        let mut de = serde_json::Deserializer::from_str(json);
        task_index(&mut de).map_err(|e| e.to_string())
    }

    #[test]
    fn leading_zeros_never_overflow() {
        assert_eq!(index(&format!("\"{}1\"", "0".repeat(40))), Ok(Some(1)));
        assert_eq!(index("\"0000\""), Ok(Some(0)));
        assert!(index(&format!("\"{}\"", "9".repeat(40))).is_err());
    }

    #[test]
    fn messages_name_key_and_value() {
        assert_eq!(
            index("-3").unwrap_err(),
            "invalid value: integer `-3`, expected `task.index` to be a task index from 0 to \
             2147483647, as a number or a string of decimal digits at line 1 column 2"
        );
    }
}
