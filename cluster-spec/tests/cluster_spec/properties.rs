//! Property tests: every conversion round-trips, and no input makes a parser panic.

use cluster_proto::ClusterDef;
use cluster_spec::ClusterSpec;
use proptest::prelude::*;
use prost::Message;
use serde_json::Value;

use super::strategies::{Tasks, cluster};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn json_round_trip(c in cluster()) {
        let spec = ClusterSpec::from_json(&c.to_json()).unwrap();
        let again = ClusterSpec::from_json(&spec.to_json()).unwrap();
        prop_assert_eq!(&again, &spec);
        prop_assert_eq!(again.jobs(), spec.jobs());
        prop_assert_eq!(again.to_json(), spec.to_json());
    }

    #[test]
    fn serde_agrees_with_from_json(c in cluster()) {
        let json = c.to_json();
        let fast = ClusterSpec::from_json(&json).unwrap();
        let via_serde: ClusterSpec = serde_json::from_str(&json).unwrap();
        prop_assert_eq!(&via_serde, &fast);
        prop_assert_eq!(via_serde.jobs(), fast.jobs());
        prop_assert_eq!(serde_json::to_string(&fast).unwrap(), fast.to_json());
    }

    #[test]
    fn builder_agrees_with_from_json(c in cluster()) {
        let mut builder = ClusterSpec::builder();
        for (name, tasks) in &c.0 {
            builder = match tasks {
                Tasks::Dense(addrs) => builder.job(name, addrs),
                Tasks::Sparse(map) => builder.sparse_job(name, map.iter().map(|(&i, a)| (i, a))),
            };
        }
        prop_assert_eq!(builder.build().unwrap(), ClusterSpec::from_json(&c.to_json()).unwrap());
    }

    #[test]
    fn cluster_def_round_trip(c in cluster()) {
        let spec = ClusterSpec::from_json(&c.to_json()).unwrap();
        let def = spec.as_cluster_def();
        // Structure: back to an equal spec, jobs sorted by name as TF emits them.
        prop_assert_eq!(ClusterSpec::try_from(&def).unwrap(), spec.clone());
        let names: Vec<&str> = def.job.iter().map(|j| j.name.as_str()).collect();
        prop_assert!(names.is_sorted());
        // Bytes: the direct encoder writes exactly prost's encoding, which decodes back.
        let bytes = spec.encode_cluster_def();
        prop_assert_eq!(&bytes, &def.encode_to_vec());
        prop_assert_eq!(ClusterDef::decode(&bytes[..]).unwrap(), def);
        prop_assert_eq!(ClusterSpec::decode_cluster_def(&bytes).unwrap(), spec);
    }

    #[test]
    fn dense_and_sparse_forms_are_equal(addrs in prop::collection::vec(super::strategies::address(), 0..8)) {
        let dense = ClusterSpec::builder().job("w", &addrs).build().unwrap();
        let sparse = ClusterSpec::builder()
            .sparse_job("w", addrs.iter().enumerate().rev().map(|(i, a)| (i as u32, a)))
            .build()
            .unwrap();
        prop_assert_eq!(&dense, &sparse);
        prop_assert_eq!(dense.to_json(), sparse.to_json());
        prop_assert_eq!(dense.to_string(), sparse.to_string());
    }

    /// `to_json` follows TF's `as_dict`: indices exactly 0..n -> array, otherwise an object
    /// keyed by index; no tasks -> `{}`.
    #[test]
    fn to_json_follows_as_dict(c in cluster()) {
        let spec = ClusterSpec::from_json(&c.to_json()).unwrap();
        let value: Value = serde_json::from_str(&spec.to_json()).unwrap();
        for job in spec.jobs() {
            let indices = spec.task_indices(job).unwrap();
            let dense = !indices.is_empty() && indices.iter().enumerate().all(|(k, &i)| k as u32 == i);
            match &value[job] {
                Value::Array(items) => {
                    prop_assert!(dense);
                    prop_assert_eq!(items.len(), indices.len());
                }
                Value::Object(map) => {
                    prop_assert!(!dense);
                    let keys: Vec<u32> = map.keys().map(|k| k.parse().unwrap()).collect();
                    let mut sorted = keys.clone();
                    sorted.sort();
                    prop_assert_eq!(sorted, indices);
                }
                other => prop_assert!(false, "unexpected {other}"),
            }
        }
    }

    #[test]
    fn lookups_agree(c in cluster()) {
        let spec = ClusterSpec::from_json(&c.to_json()).unwrap();
        for (name, tasks) in &c.0 {
            let expected: Vec<(u32, &str)> = match tasks {
                Tasks::Dense(a) => a.iter().enumerate().map(|(i, a)| (i as u32, a.as_str())).collect(),
                Tasks::Sparse(m) => m.iter().map(|(&i, a)| (i, a.as_str())).collect(),
            };
            prop_assert_eq!(spec.tasks(name).unwrap().collect::<Vec<_>>(), expected.clone());
            prop_assert_eq!(spec.num_tasks(name).unwrap(), expected.len());
            for (i, a) in expected {
                prop_assert_eq!(spec.task_address(name, i).unwrap(), a);
            }
        }
    }

    /// Escaped strings take the slow path and are copied; unescaped ones are spans of the
    /// input. Any mix must give the same spec.
    #[test]
    fn escapes_anywhere_give_the_same_spec(c in cluster(), seed in any::<u64>()) {
        let json = c.to_json();
        let mut escaped = String::with_capacity(json.len() * 2);
        let mut in_string = false;
        for (i, ch) in json.chars().enumerate() {
            let pick = (seed.rotate_left(i as u32 % 64) ^ i as u64).is_multiple_of(7);
            match ch {
                '"' => {
                    in_string = !in_string;
                    escaped.push(ch);
                }
                _ if in_string && pick && ch.is_ascii_alphanumeric() => {
                    escaped.push_str(&format!("\\u{:04x}", ch as u32));
                }
                _ => escaped.push(ch),
            }
        }
        let plain = ClusterSpec::from_json(&json).unwrap();
        let from_escaped = ClusterSpec::from_json(&escaped).unwrap();
        prop_assert_eq!(&from_escaped, &plain);
        prop_assert_eq!(from_escaped.jobs(), plain.jobs());
        prop_assert_eq!(from_escaped.to_json(), plain.to_json());
    }

    #[test]
    fn from_json_never_panics(s in "\\PC{0,64}") {
        let _ = ClusterSpec::from_json(&s);
    }

    #[test]
    fn from_json_never_panics_on_near_misses(c in cluster(), cut in 0usize..400, byte in any::<u8>()) {
        // Valid documents with one byte changed or cut short reach deep into the reader.
        let mut bytes = c.to_json().into_bytes();
        if !bytes.is_empty() {
            let at = cut % bytes.len();
            if byte.is_ascii() { bytes[at] = byte; } else { bytes.truncate(at); }
        }
        if let Ok(s) = String::from_utf8(bytes)
            && let Ok(spec) = ClusterSpec::from_json(&s)
        {
            // Whatever parses is valid: it survives its own round trip.
            prop_assert_eq!(ClusterSpec::from_json(&spec.to_json()).unwrap(), spec);
        }
    }

    #[test]
    fn decode_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..128)) {
        let _ = ClusterSpec::decode_cluster_def(&bytes);
    }

    /// The hand-written decoder accepts exactly what prost + `TryFrom` accepts, with the same
    /// spec: valid encodings with a byte changed or the input cut, so most of them are close
    /// to valid (repeated fields, unknown fields, bad lengths, bad UTF-8).
    #[test]
    fn decode_agrees_with_prost(c in cluster(), cut in any::<usize>(), byte in any::<u8>()) {
        let mut bytes = ClusterSpec::from_json(&c.to_json()).unwrap().encode_cluster_def();
        if !bytes.is_empty() {
            let at = cut % bytes.len();
            if byte % 4 == 0 {
                bytes.truncate(at);
            } else {
                // prost reads a map field as length-delimited whatever wire type its key says
                // (`0x11` for `0x12` still decodes the entry); protobuf, TensorFlow's C++ parser
                // and ours do not. A byte that changes only a key's wire type is no oracle.
                let old = bytes[at];
                prop_assume!(!(old >> 3 == byte >> 3 && old & 7 != byte & 7));
                bytes[at] = byte;
            }
        }
        let ours = ClusterSpec::decode_cluster_def(&bytes).ok();
        let prost = ClusterDef::decode(bytes.as_slice())
            .ok()
            .and_then(|def| ClusterSpec::try_from(def).ok());
        prop_assert_eq!(ours, prost);
    }
}
