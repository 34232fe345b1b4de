//! TensorFlow's `TensorProto`, as a peer sends it in op results, read into a `Tensor`.

use cluster_proto::TensorProto;
use prost::Message;
use remote_connect::Tensor;

/// The largest tensor compared and round-tripped. The decoder may build a filled tensor of up
/// to 64 MiB from a few bytes (its stated bound); the checks hold a tensor three times over
/// (two reads and a proto), which for such a tensor would measure this harness against the
/// memory cap rather than the decoder. Every tensor is still read both ways and printed.
const CHECKED_BYTES: u64 = 4 << 20;

/// The most shown elements times axes a tensor printed may have. `Display` prints numpy's
/// text, which for a summarized tensor shows 6 elements per axis, each line indented by its
/// depth: a tensor of 80 axes, six of them long, is 6^6 elements of 80-column lines (numpy's
/// own output takes as long). Larger texts are that format's size, not a bug to find here.
const PRINTED: u64 = 1 << 16;

/// `TensorProto` bytes decoded with prost, then read by `Tensor::from_proto` and
/// `Tensor::from_proto_owned`, which must agree; a tensor read is printed as TensorFlow
/// prints it (when its text is no more than 65,536 elements times axes), and must read back equal from its own proto.
pub fn tensor_proto(data: &[u8]) {
    let Ok(proto) = TensorProto::decode(data) else {
        return;
    };
    let borrowed = Tensor::from_proto(&proto).map(|tensor| {
        if printed_size(&tensor) <= PRINTED {
            let _ = tensor.to_string();
        }
        (size_bound(&tensor, data.len()) <= CHECKED_BYTES).then_some(tensor)
    });
    let owned = Tensor::from_proto_owned(proto);
    match (borrowed, owned) {
        (Ok(Some(borrowed)), Ok(owned)) => {
            assert_eq!(borrowed, owned, "from_proto and from_proto_owned disagree");
            assert_eq!(
                Tensor::from_proto(&owned.to_proto()),
                Ok(owned),
                "a tensor does not read back from its own proto"
            );
        }
        (Ok(_), Ok(_)) => {}
        (Err(borrowed), Err(owned)) => assert_eq!(borrowed, owned),
        (borrowed, owned) => panic!(
            "from_proto and from_proto_owned disagree: {:?} and {:?}",
            borrowed.err(),
            owned.err()
        ),
    }
}

/// At least the bytes `tensor`'s elements take, read from an `input`-byte proto: a string
/// element is at most the whole input, plus its `Vec`.
fn size_bound(tensor: &Tensor, input: usize) -> u64 {
    match tensor.as_bytes() {
        Some(bytes) => bytes.len() as u64,
        None => tensor
            .num_elements()
            .saturating_mul((size_of::<Vec<u8>>() + input) as u64),
    }
}

/// The elements `Display` shows (all up to 1,000, else at most 6 per axis) times the axes.
fn printed_size(tensor: &Tensor) -> u64 {
    let shown = if tensor.num_elements() > 1000 {
        tensor
            .shape()
            .iter()
            .fold(1u64, |n, &d| n.saturating_mul(d.min(6)))
    } else {
        tensor.num_elements()
    };
    shown.saturating_mul(tensor.shape().len() as u64 + 1)
}
