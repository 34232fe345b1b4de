//! What can be wrong with a tensor's value or a request to read it.

use cluster_proto::DataType;

/// A tensor that cannot be built, decoded or read as asked.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum TensorError {
    /// The values do not fill the shape.
    #[error("shape {shape:?} holds {expected} elements, but {got} were given")]
    ElementCount {
        /// The shape.
        shape: Vec<u64>,
        /// Its element count.
        expected: u64,
        /// The number of values.
        got: u64,
    },
    /// The shape's element count overflows.
    #[error("shape {shape:?} has more elements than fit in 64 bits")]
    TooLarge {
        /// The shape.
        shape: Vec<u64>,
    },
    /// Read as a type that is not the tensor's.
    #[error("the tensor is {}, not {}", dtype_name(*.tensor), dtype_name(*.requested))]
    DtypeMismatch {
        /// The tensor's dtype.
        tensor: DataType,
        /// The dtype asked for.
        requested: DataType,
    },
    /// A string element that is not UTF-8, read as `String`.
    #[error("string element {index} is not UTF-8")]
    NotUtf8 {
        /// The element's row-major index.
        index: usize,
    },
    /// A dtype this crate cannot hold (resource, variant, reference or unknown types).
    #[error("dtype {} cannot be held as a value here", dtype_name(*.0))]
    UnsupportedDtype(DataType),
    /// A `TensorProto` that does not describe a valid tensor.
    #[error("invalid TensorProto: {0}")]
    InvalidProto(String),
}

/// The dtype as Python TensorFlow names it (`float32`, `int64`, `string`, …).
pub(crate) fn dtype_name(dtype: DataType) -> &'static str {
    use DataType as D;
    match dtype {
        D::DtFloat => "float32",
        D::DtDouble => "float64",
        D::DtInt32 => "int32",
        D::DtUint8 => "uint8",
        D::DtInt16 => "int16",
        D::DtInt8 => "int8",
        D::DtString => "string",
        D::DtComplex64 => "complex64",
        D::DtInt64 => "int64",
        D::DtBool => "bool",
        D::DtQint8 => "qint8",
        D::DtQuint8 => "quint8",
        D::DtQint32 => "qint32",
        D::DtBfloat16 => "bfloat16",
        D::DtQint16 => "qint16",
        D::DtQuint16 => "quint16",
        D::DtUint16 => "uint16",
        D::DtComplex128 => "complex128",
        D::DtHalf => "float16",
        D::DtResource => "resource",
        D::DtVariant => "variant",
        D::DtUint32 => "uint32",
        D::DtUint64 => "uint64",
        D::DtFloat8E5m2 => "float8_e5m2",
        D::DtFloat8E4m3fn => "float8_e4m3fn",
        D::DtFloat8E4m3fnuz => "float8_e4m3fnuz",
        D::DtFloat8E4m3b11fnuz => "float8_e4m3b11fnuz",
        D::DtFloat8E5m2fnuz => "float8_e5m2fnuz",
        D::DtInt4 => "int4",
        D::DtUint4 => "uint4",
        D::DtInt2 => "int2",
        D::DtUint2 => "uint2",
        D::DtFloat4E2m1fn => "float4_e2m1fn",
        _ => dtype.as_str_name(),
    }
}
