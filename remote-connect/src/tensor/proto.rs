//! [`Tensor`] to and from TensorFlow's `TensorProto`: both encodings TensorFlow writes
//! (`tensor_content`, and the typed `*_val` fields) are read; `tensor_content` is written.

use bytes::Bytes;
use cluster_proto::tensor_shape_proto::Dim;
use cluster_proto::{DataType, TensorProto, TensorShapeProto};

use super::element::width;
use super::{Data, Tensor, TensorError, element_count};

/// The most bytes a decoded tensor may take: TensorFlow's own 2 GiB protobuf limit.
const MAX_BYTES: u64 = i32::MAX as u64;

/// The most dimensions a shape may have: TensorFlow's `TensorShape::MaxDimensions()`.
const MAX_RANK: usize = 254;

/// The most bytes a tensor filled from fewer typed values than elements may take. One
/// `float_val` can fill any shape, so a small proto could otherwise ask for gigabytes;
/// TensorFlow's runtime sends large tensors in `tensor_content`, which is never expanded.
const MAX_FILLED_BYTES: u64 = 64 << 20;

impl Tensor {
    /// The tensor as a `TensorProto`, elements in `tensor_content` (strings in `string_val`),
    /// as TensorFlow's runtime sends them.
    pub fn to_proto(&self) -> TensorProto {
        let mut proto = TensorProto {
            dtype: self.dtype as i32,
            tensor_shape: Some(shape_proto(&self.shape)),
            ..TensorProto::default()
        };
        match &self.data {
            Data::Packed(bytes) => proto.tensor_content = Bytes::from(bytes.clone()),
            Data::Strings(strings) => proto.string_val = strings.clone(),
        }
        proto
    }

    /// Reads a `TensorProto` as TensorFlow's `Tensor::FromProto` does: `tensor_content` when
    /// present, else the dtype's `*_val` field, where no values mean zeros and fewer values
    /// than elements repeat the last.
    ///
    /// # Errors
    ///
    /// [`TensorError::InvalidProto`] for an unknown dtype, a negative or unknown dimension,
    /// more than 254 dimensions (TensorFlow's limit), or content of the wrong size; [`TensorError::UnsupportedDtype`] for resource, variant and
    /// reference dtypes; [`TensorError::TooLarge`] past 2 GiB, or past 64 MiB for a tensor
    /// filled from fewer typed values than it has elements (a few bytes of proto could
    /// otherwise ask for gigabytes; TensorFlow's runtime sends large tensors in
    /// `tensor_content`, which is never expanded).
    pub fn from_proto(proto: &TensorProto) -> Result<Self, TensorError> {
        Self::read(proto, None)
    }

    /// As [`from_proto`](Self::from_proto), taking the proto so that `tensor_content` is
    /// kept rather than copied (large tensors fetched from a worker): when the proto holds the
    /// only reference to the buffer its bytes arrived in, the tensor takes that buffer over.
    ///
    /// # Errors
    ///
    /// As [`from_proto`](Self::from_proto).
    pub fn from_proto_owned(mut proto: TensorProto) -> Result<Self, TensorError> {
        let content = std::mem::take(&mut proto.tensor_content);
        Self::read(&proto, Some(content))
    }

    /// Reads `proto`, whose `tensor_content` is `content` when taken out of it.
    fn read(proto: &TensorProto, content: Option<Bytes>) -> Result<Self, TensorError> {
        let dtype = DataType::try_from(proto.dtype)
            .map_err(|_| TensorError::InvalidProto(format!("unknown dtype {}", proto.dtype)))?;
        let shape = shape_of(proto.tensor_shape.as_ref())?;
        let n = element_count(&shape)?;
        let content = content.unwrap_or_else(|| proto.tensor_content.clone());
        let data = if dtype == DataType::DtString {
            Data::Strings(strings(proto, &content, &shape, n)?)
        } else {
            let w = width(dtype).ok_or(TensorError::UnsupportedDtype(dtype))?;
            let limit = if content.is_empty() {
                MAX_FILLED_BYTES
            } else {
                MAX_BYTES
            };
            let bytes = n
                .checked_mul(w as u64)
                .filter(|&b| b <= limit)
                .ok_or_else(|| TensorError::TooLarge {
                    shape: shape.clone(),
                })?;
            Data::Packed(packed(proto, content, dtype, w, n, bytes)?)
        };
        Ok(Self { dtype, shape, data })
    }
}

/// The `TensorShapeProto` of a shape.
pub(crate) fn shape_proto(shape: &[u64]) -> TensorShapeProto {
    TensorShapeProto {
        dim: shape
            .iter()
            .map(|&size| Dim {
                size: size as i64,
                name: String::new(),
            })
            .collect(),
        unknown_rank: false,
    }
}

/// The dimensions of a fully known shape.
pub(crate) fn shape_of(proto: Option<&TensorShapeProto>) -> Result<Vec<u64>, TensorError> {
    let Some(proto) = proto else {
        return Ok(Vec::new());
    };
    if proto.unknown_rank {
        return Err(TensorError::InvalidProto(
            "the shape's rank is unknown".into(),
        ));
    }
    if proto.dim.len() > MAX_RANK {
        return Err(TensorError::InvalidProto(format!(
            "the shape has {} dimensions, more than TensorFlow's {MAX_RANK}",
            proto.dim.len()
        )));
    }
    proto
        .dim
        .iter()
        .map(|d| {
            u64::try_from(d.size)
                .map_err(|_| TensorError::InvalidProto(format!("dimension size {}", d.size)))
        })
        .collect()
}

fn packed(
    proto: &TensorProto,
    content: Bytes,
    dtype: DataType,
    w: usize,
    n: u64,
    bytes: u64,
) -> Result<Vec<u8>, TensorError> {
    if !content.is_empty() {
        if content.len() as u64 != bytes {
            return Err(TensorError::InvalidProto(format!(
                "tensor_content has {} bytes where {n} elements of {w} bytes need {bytes}",
                content.len()
            )));
        }
        // Without a copy when `content` is the buffer's only reference.
        return Ok(Vec::from(content));
    }
    use DataType as D;
    let values: Vec<u8> = match dtype {
        D::DtFloat => proto
            .float_val
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
        D::DtDouble => proto
            .double_val
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
        D::DtInt64 => proto
            .int64_val
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
        D::DtUint32 => proto
            .uint32_val
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
        D::DtUint64 => proto
            .uint64_val
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
        D::DtBool => proto.bool_val.iter().map(|&v| u8::from(v)).collect(),
        D::DtComplex64 => proto
            .scomplex_val
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
        D::DtComplex128 => proto
            .dcomplex_val
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
        // One 16-bit pattern per int32.
        D::DtHalf | D::DtBfloat16 => narrowed(&proto.half_val, 2),
        D::DtFloat8E5m2
        | D::DtFloat8E4m3fn
        | D::DtFloat8E4m3fnuz
        | D::DtFloat8E4m3b11fnuz
        | D::DtFloat8E5m2fnuz
        | D::DtFloat4E2m1fn => proto.float8_val.clone(),
        // The narrow integers and quantized types travel in int_val.
        _ => narrowed(&proto.int_val, w),
    };
    filled(values, w, bytes)
}

/// The low `w` bytes of each value, little-endian.
fn narrowed(values: &[i32], w: usize) -> Vec<u8> {
    values
        .iter()
        .flat_map(|v| v.to_le_bytes()[..w].to_vec())
        .collect()
}

/// `values` (whole elements of `w` bytes) made exactly `bytes` long as TensorFlow does: zeros
/// when empty, the last element repeated when short, the surplus dropped when long.
fn filled(mut values: Vec<u8>, w: usize, bytes: u64) -> Result<Vec<u8>, TensorError> {
    let bytes = bytes as usize;
    if !values.len().is_multiple_of(w) {
        return Err(TensorError::InvalidProto(format!(
            "{} value bytes do not make whole {w}-byte elements",
            values.len()
        )));
    }
    if values.is_empty() {
        return Ok(vec![0; bytes]);
    }
    if values.len() >= bytes {
        values.truncate(bytes);
        return Ok(values);
    }
    let last = values[values.len() - w..].to_vec();
    values.reserve(bytes - values.len());
    while values.len() < bytes {
        values.extend_from_slice(&last);
    }
    Ok(values)
}

/// String elements from `tensor_content` (every length as a varint, then every string's
/// bytes, as TensorFlow's runtime writes them) or from `string_val`.
fn strings(
    proto: &TensorProto,
    content: &[u8],
    shape: &[u64],
    n: u64,
) -> Result<Vec<Vec<u8>>, TensorError> {
    if !content.is_empty() {
        return content_strings(content, n);
    }
    let vals = &proto.string_val;
    // Filled elements are empty or repeated strings: bound them as a filled tensor, counting
    // each element's own allocation.
    let filled = n.saturating_sub(vals.len() as u64);
    let per_element = vals.last().map_or(VEC, |v| VEC + heap_chunk(v.len()));
    if filled.saturating_mul(per_element) > MAX_FILLED_BYTES {
        return Err(TensorError::TooLarge {
            shape: shape.to_vec(),
        });
    }
    let n = n as usize;
    Ok(match vals.last() {
        None => vec![Vec::new(); n],
        Some(last) => {
            let mut out: Vec<Vec<u8>> = vals.iter().take(n).cloned().collect();
            out.resize(n, last.clone());
            out
        }
    })
}

/// The bytes of a string element's `Vec`.
const VEC: u64 = std::mem::size_of::<Vec<u8>>() as u64;

/// The heap a `len`-byte allocation really takes: malloc adds 8 bytes of header and rounds up
/// to 16, at least 32 (glibc). A million one-byte strings hold 32 MB, not 1 MB.
fn heap_chunk(len: usize) -> u64 {
    if len == 0 {
        0
    } else {
        ((len as u64).saturating_add(8 + 15) & !15).max(32)
    }
}

fn content_strings(content: &[u8], n: u64) -> Result<Vec<Vec<u8>>, TensorError> {
    let invalid = || TensorError::InvalidProto("string tensor_content is malformed".into());
    // Each element takes at least one length byte, which bounds `n` by the content.
    if n > content.len() as u64 {
        return Err(invalid());
    }
    let mut rest = content;
    let mut lengths = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let len = prost::encoding::decode_varint(&mut rest).map_err(|_| invalid())?;
        lengths.push(usize::try_from(len).map_err(|_| invalid())?);
    }
    let mut out = Vec::with_capacity(lengths.len());
    for len in lengths {
        if len > rest.len() {
            return Err(invalid());
        }
        let (head, tail) = rest.split_at(len);
        out.push(head.to_vec());
        rest = tail;
    }
    if rest.is_empty() {
        Ok(out)
    } else {
        Err(invalid())
    }
}
