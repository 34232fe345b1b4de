//! Our `.proto` files against the descriptors compiled into TensorFlow 2.21 itself.
//!
//! TF's wheel carries every `FileDescriptorProto` it was built from inside its shared
//! libraries. The script finds them there and prints each message's fields; every field we
//! declare must exist in TF's message with the same number, name, label and type (a TF
//! sub-message we keep opaque may be `bytes`: both are length-delimited on the wire). Every gRPC
//! method path we serve or call must appear verbatim in TF's library, as the runtime's clients
//! and servers use literal paths.

use std::collections::BTreeMap;

use prost::Message;
use prost_types::field_descriptor_proto::Type;
use prost_types::{DescriptorProto, FileDescriptorSet};
use serde_json::{Value, json};

const SCRIPT: &str = r#"
import glob, json, os, sys
from google.protobuf import descriptor_pb2
import tensorflow as tf

root = os.path.dirname(tf.__file__)
blobs = [open(p, "rb").read() for p in sorted(glob.glob(os.path.join(root, "*.so*")))]

def varint(b, i):
    shift = v = 0
    while True:
        c = b[i]; i += 1
        v |= (c & 0x7F) << shift; shift += 7
        if not c & 0x80:
            return v, i

def file_descriptor(name):
    # A serialized FileDescriptorProto starts with field 1 (its name); walk its fields to the
    # first byte that cannot continue it (the string literal's NUL).
    key = b"\n" + bytes([len(name)]) + name.encode()
    for blob in blobs:
        start = blob.find(key)
        while start >= 0:
            i = start
            try:
                while True:
                    tag, j = varint(blob, i)
                    field, wire = tag >> 3, tag & 7
                    if field == 0 or field > 20 or wire not in (0, 2):
                        break
                    if wire == 0:
                        _, j = varint(blob, j)
                    else:
                        n, j = varint(blob, j); j += n
                    i = j
                fd = descriptor_pb2.FileDescriptorProto.FromString(blob[start:i])
                if fd.message_type or fd.service:
                    return fd
            except Exception:
                pass
            start = blob.find(key, start + 1)
    raise SystemExit(f"descriptor of {name} not found in TensorFlow's libraries")

messages = {}
enums = {}
def add(prefix, message):
    full = f"{prefix}.{message.name}"
    messages[full] = [
        {"name": f.name, "number": f.number, "type": f.type, "label": f.label, "type_name": f.type_name}
        for f in message.field
    ]
    for nested in message.nested_type:
        add(full, nested)

request = json.loads(sys.stdin.read())
for name in request["files"]:
    fd = file_descriptor(name)
    for m in fd.message_type:
        add("." + fd.package, m)
    for e in fd.enum_type:
        enums[f".{fd.package}.{e.name}"] = {v.name: v.number for v in e.value}
library = blobs[0] + blobs[1]
paths = {p: p.encode() in library for p in request["paths"]}
print(json.dumps({"messages": messages, "enums": enums, "paths": paths}))
"#;

/// TF's source files holding the messages of ours.
const TF_FILES: &[&str] = &[
    "tensorflow/core/protobuf/cluster.proto",
    "tensorflow/core/protobuf/device_filters.proto",
    "tensorflow/core/protobuf/tensorflow_server.proto",
    "tensorflow/core/protobuf/config.proto",
    "tensorflow/core/protobuf/worker.proto",
    "tensorflow/core/protobuf/eager_service.proto",
    "tensorflow/core/framework/device_attributes.proto",
    "tensorflow/core/framework/versions.proto",
    "tensorflow/core/framework/types.proto",
    "tensorflow/core/framework/tensor_shape.proto",
    "tensorflow/core/framework/tensor.proto",
    "tensorflow/core/framework/attr_value.proto",
    "tensorflow/core/framework/full_type.proto",
    "tensorflow/core/framework/resource_handle.proto",
    "tensorflow/core/framework/op_def.proto",
    "tensorflow/core/framework/node_def.proto",
    "tensorflow/core/framework/function.proto",
    "tensorflow/core/protobuf/remote_tensor_handle.proto",
    "xla/tsl/protobuf/coordination_config.proto",
    "xla/tsl/protobuf/rpc_options.proto",
];

fn ours() -> FileDescriptorSet {
    FileDescriptorSet::decode(cluster_proto::FILE_DESCRIPTOR_SET).unwrap()
}

fn collect<'a>(
    prefix: &str,
    message: &'a DescriptorProto,
    out: &mut Vec<(String, &'a DescriptorProto)>,
) {
    let full = format!("{prefix}.{}", message.name());
    for nested in &message.nested_type {
        collect(&full, nested, out);
    }
    out.push((full, message));
}

#[test]
fn every_field_matches_tensorflow_2_21() {
    let set = ours();
    let mut messages = Vec::new();
    let mut paths = Vec::new();
    for file in &set.file {
        for message in &file.message_type {
            collect(&format!(".{}", file.package()), message, &mut messages);
        }
        for service in &file.service {
            for method in &service.method {
                paths.push(format!(
                    "/{}.{}/{}",
                    file.package(),
                    service.name(),
                    method.name()
                ));
            }
        }
    }
    let request = json!({"files": TF_FILES, "paths": paths});
    let tf: Value = serde_json::from_str(&tf_oracle::run(SCRIPT, &request.to_string())).unwrap();

    let mut checked = 0;
    for (name, message) in &messages {
        let tf_fields = tf["messages"][name]
            .as_array()
            .unwrap_or_else(|| panic!("TensorFlow 2.21 has no message {name}"));
        let by_number: BTreeMap<i64, &Value> = tf_fields
            .iter()
            .map(|f| (f["number"].as_i64().unwrap(), f))
            .collect();
        for field in &message.field {
            let tf_field = by_number
                .get(&i64::from(field.number()))
                .unwrap_or_else(|| {
                    panic!(
                        "{name}.{} = {}: TensorFlow has no such field number",
                        field.name(),
                        field.number()
                    )
                });
            let context = format!("{name}.{} = {}", field.name(), field.number());
            assert_eq!(tf_field["name"], field.name(), "{context}: name");
            assert_eq!(tf_field["label"], field.label() as i32, "{context}: label");
            let opaque = field.r#type() == Type::Bytes && tf_field["type"] == Type::Message as i32;
            if !opaque {
                assert_eq!(tf_field["type"], field.r#type() as i32, "{context}: type");
                assert_eq!(
                    tf_field["type_name"],
                    field.type_name(),
                    "{context}: type name"
                );
            }
            checked += 1;
        }
    }
    let mut enums = 0;
    for file in &set.file {
        for declared in &file.enum_type {
            let name = format!(".{}.{}", file.package(), declared.name());
            let values: BTreeMap<&str, i64> = declared
                .value
                .iter()
                .map(|v| (v.name(), i64::from(v.number())))
                .collect();
            let tf_values: BTreeMap<&str, i64> = tf["enums"][&name]
                .as_object()
                .unwrap_or_else(|| panic!("TensorFlow 2.21 has no enum {name}"))
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_i64().unwrap()))
                .collect();
            // Every value, so a tensor of any dtype TF sends decodes to a named variant.
            assert_eq!(values, tf_values, "enum {name}");
            enums += 1;
        }
    }
    for path in &paths {
        assert_eq!(
            tf["paths"][path], true,
            "{path} is not a method path TensorFlow 2.21 uses"
        );
    }
    // Guards against an empty descriptor set passing vacuously.
    assert!(
        checked >= 150 && paths.len() == 10 && enums >= 1,
        "{checked} fields, {} paths, {enums} enums",
        paths.len()
    );
}
