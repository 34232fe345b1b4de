//! [`Tensor`] against TensorFlow 2.21 itself: the `TensorProto`s TensorFlow writes (both
//! `tensor_content` and the typed `*_val` fields) decode to the values TensorFlow holds, ours
//! encode to protos TensorFlow reads back equal, and `Display` prints what `print(tensor)`
//! prints. Also the op signature table against TensorFlow's op registry.

use cluster_proto::{DataType, TensorProto};
use prost::Message;
use remote_connect::{Tensor, TensorError};
use serde_json::{Value, json};

/// For each case `[dtype, shape, values]`: TensorFlow's `str(tensor)`, and its protos as hex:
/// `make_tensor_proto` (tensor_content for numbers) and the typed-field form.
const TF_TENSORS: &str = r#"
import json, sys
import numpy as np
import tensorflow as tf
from tensorflow.core.framework import tensor_pb2
out = []
for dtype, shape, values in json.loads(sys.stdin.read()):
    if dtype == "string":
        values = [v.encode("latin-1") for v in values]
    t = tf.constant(values, dtype=getattr(tf, dtype), shape=shape)
    content = tf.make_tensor_proto(t.numpy()).SerializeToString().hex()
    typed = tensor_pb2.TensorProto(dtype=t.dtype.as_datatype_enum, tensor_shape=t.shape.as_proto())
    flat = np.asarray(t.numpy()).reshape(-1).tolist()
    field = {"float32": "float_val", "float64": "double_val", "int32": "int_val", "int64": "int64_val",
             "bool": "bool_val", "string": "string_val", "uint8": "int_val", "int16": "int_val"}[dtype]
    getattr(typed, field).extend(flat)
    out.append({"str": str(t), "content": content, "typed": typed.SerializeToString().hex()})
print(json.dumps(out))
"#;

/// Reads each hex `TensorProto` with TensorFlow and prints `str` of the tensor.
const TF_READ: &str = r#"
import json, sys
import tensorflow as tf
from tensorflow.core.framework import tensor_pb2
out = []
for h in json.loads(sys.stdin.read()):
    out.append(str(tf.constant(tf.make_ndarray(tensor_pb2.TensorProto.FromString(bytes.fromhex(h))))))
print(json.dumps(out))
"#;

fn cases() -> Value {
    json!([
        ["float32", [2], [2.0, 4.0]],
        ["float32", [2, 2], [1.0, 2.0, 3.0, 4.0]],
        ["float32", [3], [1.5, 10.25, -0.125]],
        ["float32", [], [3.0]],
        ["float32", [], [0.1]],
        ["float32", [], [1e-5]],
        ["float32", [3], [1e-5, 1.0, 100.0]],
        ["float32", [4], [1e9, 2.5, 0.0, -3.0]],
        ["float32", [2, 3], [0.1, 0.2, 0.3, 1.0, 2.0, 3.0]],
        ["float32", [2, 2, 2], [1, 2, 3, 4, 5, 6, 7, 8]],
        [
            "float32",
            [30],
            (0..30).map(|i| f64::from(i) * 1.25).collect::<Vec<_>>()
        ],
        [
            "float32",
            [1200],
            (0..1200).map(f64::from).collect::<Vec<_>>()
        ],
        ["float32", [0], []],
        ["float64", [3], [1.0 / 3.0, 2.0, -7.5]],
        ["float64", [], [2.5]],
        ["int32", [4], [1, -20, 300, 4]],
        ["int32", [2, 2], [1, 2, 3, 4]],
        ["int32", [], [7]],
        ["int64", [3], [9_007_199_254_740_993i64, -1, 0]],
        ["int64", [40], (0..40).collect::<Vec<_>>()],
        ["uint8", [3], [0, 128, 255]],
        ["int16", [2], [-300, 300]],
        ["bool", [3], [true, false, true]],
        ["bool", [2], [true, true]],
        ["bool", [], [false]],
        ["string", [2], ["ab", "c"]],
        ["string", [], ["it's"]],
        ["string", [3], ["tab\there", "quote\"", "\u{00ff}"]],
    ])
}

#[test]
fn tensors_read_and_print_as_tensorflow() {
    let cases = cases();
    let tf = tf_oracle::run_json(TF_TENSORS, &cases);
    let mut checked = 0;
    let cases = cases.as_array().unwrap();
    for (case, answer) in cases.iter().zip(tf_oracle::one_per_case(&tf, cases.len())) {
        let expected = answer["str"].as_str().unwrap();
        for form in ["content", "typed"] {
            let bytes = tf_oracle::unhex(answer[form].as_str().unwrap());
            let proto = TensorProto::decode(&bytes[..]).unwrap();
            let tensor = Tensor::from_proto(&proto)
                .unwrap_or_else(|e| panic!("{case}: TensorFlow's {form} proto: {e}"));
            assert_eq!(tensor.to_string(), expected, "{case} ({form})");
            // Ours encodes to a proto that decodes to the same tensor.
            assert_eq!(Tensor::from_proto(&tensor.to_proto()).unwrap(), tensor);
            checked += 1;
        }
    }
    assert_eq!(checked, 2 * cases.len());
}

#[test]
fn tensorflow_reads_our_protos() {
    let ours = [
        Tensor::new(&[2, 2], vec![1.0f32, 2.0, 3.0, 4.0]).unwrap(),
        Tensor::vector(vec![1i64 << 40, -5]),
        Tensor::vector(vec![true, false]),
        Tensor::vector(vec!["x".to_string(), "yz".to_string()]),
        Tensor::scalar(2.5f64),
        Tensor::new::<i32>(&[0, 3], vec![]).unwrap(),
    ];
    let hex: Vec<String> = ours
        .iter()
        .map(|t| tf_oracle::hex(&t.to_proto().encode_to_vec()))
        .collect();
    let printed = tf_oracle::run_json(TF_READ, &json!(hex));
    for (tensor, tf) in ours
        .iter()
        .zip(tf_oracle::one_per_case(&printed, ours.len()))
    {
        assert_eq!(tensor.to_string(), tf.as_str().unwrap());
    }
}

#[test]
fn typed_fields_fill_as_tensorflow_does() {
    let proto = |float_val: Vec<f32>, dims: &[i64]| TensorProto {
        dtype: DataType::DtFloat as i32,
        tensor_shape: shape(dims),
        float_val,
        ..TensorProto::default()
    };
    let read = |p: TensorProto| Tensor::from_proto(&p).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(
        read(proto(vec![7.0], &[3])),
        [7.0; 3],
        "the last value repeats"
    );
    assert_eq!(read(proto(vec![1.0, 2.0], &[3])), [1.0, 2.0, 2.0]);
    assert_eq!(read(proto(vec![], &[2])), [0.0; 2], "no values are zeros");
    // A one-value proto cannot make us allocate a huge shape.
    let huge = Tensor::from_proto(&proto(vec![1.0], &[1 << 40])).unwrap_err();
    assert!(matches!(huge, TensorError::TooLarge { .. }), "{huge}");
    let negative = Tensor::from_proto(&proto(vec![1.0], &[-1])).unwrap_err();
    assert_eq!(
        negative.to_string(),
        "invalid TensorProto: dimension size -1"
    );
    let short = TensorProto {
        tensor_content: vec![0; 5].into(),
        ..proto(vec![], &[2])
    };
    assert_eq!(
        Tensor::from_proto(&short).unwrap_err().to_string(),
        "invalid TensorProto: tensor_content has 5 bytes where 2 elements of 4 bytes need 8"
    );
    let wrong = Tensor::vector(vec![1i32]).to_vec::<f32>().unwrap_err();
    assert_eq!(wrong.to_string(), "the tensor is int32, not float32");
}

#[test]
fn op_signatures_are_tensorflows_registry() {
    let script = include_str!("../../src/op/signatures.py");
    let committed = include_str!("../../src/op/signatures.txt");
    let tf = tf_oracle::run(script, "");
    assert!(
        tf == committed,
        "remote-connect/src/op/signatures.txt differs from TensorFlow 2.21's op registry: \
         run `cargo xtask op-signatures`"
    );
}

#[test]
fn small_protos_cannot_ask_for_huge_tensors() {
    let dims = |size: i64| shape(&[size]);
    let strings = TensorProto {
        dtype: DataType::DtString as i32,
        tensor_shape: dims(100_000_000),
        string_val: vec![b"x".to_vec()],
        ..TensorProto::default()
    };
    assert!(matches!(
        Tensor::from_proto(&strings),
        Err(TensorError::TooLarge { .. })
    ));
    let floats = TensorProto {
        dtype: DataType::DtFloat as i32,
        tensor_shape: dims(100_000_000),
        float_val: vec![1.0],
        ..TensorProto::default()
    };
    assert!(matches!(
        Tensor::from_proto(&floats),
        Err(TensorError::TooLarge { .. })
    ));
    // A string content whose lengths overrun it is refused, not read past.
    let overrun = TensorProto {
        dtype: DataType::DtString as i32,
        tensor_shape: dims(2),
        tensor_content: vec![5, 1, b'a'].into(),
        ..TensorProto::default()
    };
    assert_eq!(
        Tensor::from_proto(&overrun).unwrap_err().to_string(),
        "invalid TensorProto: string tensor_content is malformed"
    );
}

/// A shape of `dims`.
fn shape(dims: &[i64]) -> Option<cluster_proto::TensorShapeProto> {
    Some(cluster_proto::TensorShapeProto {
        dim: dims
            .iter()
            .map(|&size| cluster_proto::tensor_shape_proto::Dim {
                size,
                name: String::new(),
            })
            .collect(),
        unknown_rank: false,
    })
}

/// Found with the tensor_proto fuzz target (its corpus keeps the input,
/// crash-display-rank-80.bin): a tensor of more
/// than 75 dimensions made `Display` subtract past zero from numpy's line width. TensorFlow
/// refuses shapes of more than 254 dimensions; so does `from_proto`.
#[test]
fn deep_tensors_print_and_ranks_past_254_are_refused() {
    let deep = Tensor::new(&[1; 100], vec![7i32]).unwrap();
    let nested = format!("tf.Tensor({}7{}, shape=(", "[".repeat(100), "]".repeat(100));
    assert!(deep.to_string().starts_with(&nested), "{deep}");
    let proto = |rank: usize| TensorProto {
        dtype: DataType::DtInt32 as i32,
        tensor_shape: shape(&vec![1; rank]),
        int_val: vec![7],
        ..TensorProto::default()
    };
    assert_eq!(Tensor::from_proto(&proto(254)).unwrap().shape(), [1; 254]);
    assert_eq!(
        Tensor::from_proto(&proto(255)).unwrap_err().to_string(),
        "invalid TensorProto: the shape has 255 dimensions, more than TensorFlow's 254"
    );
}

/// Found with the tensor_proto fuzz target: `Display` turned every element into text before
/// choosing the few it shows, so printing a filled 16-MiB tensor (one `bool_val`, a few bytes
/// of proto) took hundreds of megabytes of heap. Now only the shown elements are converted.
#[test]
fn printing_converts_only_the_elements_shown() {
    let proto = TensorProto {
        dtype: DataType::DtBool as i32,
        tensor_shape: shape(&[4096, 4096]),
        bool_val: vec![true],
        ..TensorProto::default()
    };
    let tensor = Tensor::from_proto(&proto).unwrap();
    let (text, bytes) = memory_meter::peak(|| tensor.to_string());
    let row = "[ True  True  True ...  True  True  True]";
    let expected = format!(
        "tf.Tensor(\n[{row}\n {row}\n {row}\n ...\n {row}\n {row}\n {row}], shape=(4096, 4096), dtype=bool)"
    );
    assert_eq!(text, expected);
    assert!(bytes < 64 << 10, "printing took {bytes} bytes of heap");
}

/// Found with the tensor_proto fuzz target (oom-filled-one-byte-strings.bin in its corpus): a
/// filled string tensor was bounded at 64 MiB counting each element as its `Vec` plus its
/// bytes, but the bytes are an allocation of their own, which malloc makes at least 32 bytes:
/// a tensor of one-byte strings held more than twice the bound. Now counted as allocated.
#[test]
fn filled_strings_are_bounded_by_the_heap_they_take() {
    let strings = |n: i64| TensorProto {
        dtype: DataType::DtString as i32,
        tensor_shape: shape(&[n]),
        string_val: vec![b"c".to_vec()],
        ..TensorProto::default()
    };
    // 56 bytes an element (a 24-byte `Vec` and a 32-byte chunk): a million fit in 64 MiB.
    let (tensor, bytes) = memory_meter::peak(|| Tensor::from_proto(&strings(1_000_000)));
    assert_eq!(tensor.unwrap().num_elements(), 1_000_000);
    assert!(bytes <= 64 << 20, "{bytes} bytes of heap");
    assert!(matches!(
        Tensor::from_proto(&strings(2_000_000)),
        Err(TensorError::TooLarge { .. })
    ));
}
