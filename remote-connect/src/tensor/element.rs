//! [`Element`]: the Rust types a [`Tensor`](super::Tensor) is built from and read as.

use cluster_proto::DataType;

use super::{Data, TensorError};

/// A Rust type that is a tensor element type: `f32`, `f64`, the integers, `bool`, and
/// `String`/`Vec<u8>` for `DT_STRING`. Sealed: the set follows TensorFlow's dtypes.
pub trait Element: Sized + sealed::Sealed {
    /// The TensorFlow dtype of this type.
    const DTYPE: DataType;
}

pub(crate) mod sealed {
    use super::{Data, TensorError};

    /// How values of an element type are packed; private, so the set of types stays ours.
    pub trait Sealed: Sized {
        fn pack(values: Vec<Self>) -> Data;

        fn unpack(data: &Data) -> Result<Vec<Self>, TensorError>;
    }
}

macro_rules! numeric {
    ($($t:ty => $dtype:ident),* $(,)?) => {$(
        impl Element for $t {
            const DTYPE: DataType = DataType::$dtype;
        }

        impl sealed::Sealed for $t {
            fn pack(values: Vec<Self>) -> Data {
                Data::Packed(values.iter().flat_map(|v| v.to_le_bytes()).collect())
            }

            fn unpack(data: &Data) -> Result<Vec<Self>, TensorError> {
                const WIDTH: usize = std::mem::size_of::<$t>();
                match data {
                    Data::Packed(bytes) => Ok(bytes
                        .chunks_exact(WIDTH)
                        .map(|c| <$t>::from_le_bytes(c.try_into().expect("exact chunk")))
                        .collect()),
                    Data::Strings(_) => Err(TensorError::DtypeMismatch {
                        tensor: DataType::DtString,
                        requested: <Self as Element>::DTYPE,
                    }),
                }
            }
        }
    )*};
}

numeric! {
    f32 => DtFloat,
    f64 => DtDouble,
    i8 => DtInt8,
    i16 => DtInt16,
    i32 => DtInt32,
    i64 => DtInt64,
    u8 => DtUint8,
    u16 => DtUint16,
    u32 => DtUint32,
    u64 => DtUint64,
}

impl Element for bool {
    const DTYPE: DataType = DataType::DtBool;
}

impl sealed::Sealed for bool {
    fn pack(values: Vec<Self>) -> Data {
        Data::Packed(values.into_iter().map(u8::from).collect())
    }

    fn unpack(data: &Data) -> Result<Vec<Self>, TensorError> {
        match data {
            Data::Packed(bytes) => Ok(bytes.iter().map(|&b| b != 0).collect()),
            Data::Strings(_) => Err(TensorError::DtypeMismatch {
                tensor: DataType::DtString,
                requested: <Self as Element>::DTYPE,
            }),
        }
    }
}

impl Element for Vec<u8> {
    const DTYPE: DataType = DataType::DtString;
}

impl sealed::Sealed for Vec<u8> {
    fn pack(values: Vec<Self>) -> Data {
        Data::Strings(values)
    }

    fn unpack(data: &Data) -> Result<Vec<Self>, TensorError> {
        Ok(strings(data)?.to_vec())
    }
}

impl Element for String {
    const DTYPE: DataType = DataType::DtString;
}

impl sealed::Sealed for String {
    fn pack(values: Vec<Self>) -> Data {
        Data::Strings(values.into_iter().map(String::into_bytes).collect())
    }

    fn unpack(data: &Data) -> Result<Vec<Self>, TensorError> {
        strings(data)?
            .iter()
            .enumerate()
            .map(|(index, s)| {
                String::from_utf8(s.clone()).map_err(|_| TensorError::NotUtf8 { index })
            })
            .collect()
    }
}

fn strings(data: &Data) -> Result<&[Vec<u8>], TensorError> {
    match data {
        Data::Strings(s) => Ok(s),
        // Only a string tensor holds `Data::Strings`; `to_vec` checked the dtype first.
        Data::Packed(_) => Err(TensorError::UnsupportedDtype(DataType::DtInvalid)),
    }
}

/// Bytes per element of a fixed-width dtype; `None` for strings and dtypes not held here.
pub(crate) fn width(dtype: DataType) -> Option<usize> {
    use DataType as D;
    Some(match dtype {
        D::DtBool
        | D::DtInt8
        | D::DtUint8
        | D::DtQint8
        | D::DtQuint8
        | D::DtFloat8E5m2
        | D::DtFloat8E4m3fn
        | D::DtFloat8E4m3fnuz
        | D::DtFloat8E4m3b11fnuz
        | D::DtFloat8E5m2fnuz
        | D::DtInt4
        | D::DtUint4
        | D::DtInt2
        | D::DtUint2
        | D::DtFloat4E2m1fn => 1,
        D::DtInt16 | D::DtUint16 | D::DtQint16 | D::DtQuint16 | D::DtHalf | D::DtBfloat16 => 2,
        D::DtFloat | D::DtInt32 | D::DtUint32 | D::DtQint32 => 4,
        D::DtDouble | D::DtInt64 | D::DtUint64 | D::DtComplex64 => 8,
        D::DtComplex128 => 16,
        _ => return None,
    })
}
