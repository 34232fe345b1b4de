//! [`Tensor`]: a value TensorFlow ops take and return (dtype, shape and elements), read from and
//! written to TensorFlow's `TensorProto`.

mod display;
pub(crate) mod element;
mod error;
mod proto;

use cluster_proto::DataType;

pub use element::Element;
pub use error::TensorError;
pub(crate) use error::dtype_name;
pub(crate) use proto::{shape_of, shape_proto};

/// A dense tensor's value: its element type, shape and elements, as TensorFlow's
/// `tf.Tensor.numpy()` holds them.
///
/// Numeric and boolean elements are kept packed little-endian, as TensorFlow's
/// `tensor_content` carries them, so any fixed-width dtype (half, complex, quantized …)
/// round-trips even where there is no Rust element type to read it as; string elements are
/// kept as bytes.
///
/// ```
/// use remote_connect::Tensor;
///
/// let t = Tensor::new(&[2, 2], vec![1.0f32, 2.0, 3.0, 4.0])?;
/// assert_eq!(t.shape(), [2, 2]);
/// assert_eq!(t.to_vec::<f32>()?, [1.0, 2.0, 3.0, 4.0]);
/// // As TensorFlow prints it.
/// assert_eq!(t.to_string(), "tf.Tensor(\n[[1. 2.]\n [3. 4.]], shape=(2, 2), dtype=float32)");
/// assert_eq!(Tensor::scalar(7i64).to_string(), "tf.Tensor(7, shape=(), dtype=int64)");
/// # Ok::<(), remote_connect::TensorError>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    dtype: DataType,
    shape: Vec<u64>,
    data: Data,
}

/// The elements (public only to the sealed element trait; not reachable from outside).
#[derive(Clone, Debug, PartialEq)]
pub enum Data {
    /// Fixed-width elements, packed little-endian.
    Packed(Vec<u8>),
    /// `DT_STRING` elements.
    Strings(Vec<Vec<u8>>),
}

impl Tensor {
    /// A tensor of `shape` holding `values` in row-major order.
    ///
    /// # Errors
    ///
    /// [`TensorError::ElementCount`] when `values` does not fill `shape` exactly.
    pub fn new<T: Element>(shape: &[u64], values: Vec<T>) -> Result<Self, TensorError> {
        let expected = element_count(shape)?;
        if values.len() as u64 != expected {
            return Err(TensorError::ElementCount {
                shape: shape.to_vec(),
                expected,
                got: values.len() as u64,
            });
        }
        Ok(Self {
            dtype: T::DTYPE,
            shape: shape.to_vec(),
            data: T::pack(values),
        })
    }

    /// A scalar (shape `()`).
    pub fn scalar<T: Element>(value: T) -> Self {
        Self {
            dtype: T::DTYPE,
            shape: Vec::new(),
            data: T::pack(vec![value]),
        }
    }

    /// A vector (shape `(n,)`).
    pub fn vector<T: Element>(values: Vec<T>) -> Self {
        Self {
            dtype: T::DTYPE,
            shape: vec![values.len() as u64],
            data: T::pack(values),
        }
    }

    /// The element type.
    pub fn dtype(&self) -> DataType {
        self.dtype
    }

    /// The dimensions, outermost first; empty for a scalar.
    pub fn shape(&self) -> &[u64] {
        &self.shape
    }

    /// The number of elements (1 for a scalar).
    pub fn num_elements(&self) -> u64 {
        self.shape.iter().product()
    }

    /// The elements in row-major order.
    ///
    /// # Errors
    ///
    /// [`TensorError::DtypeMismatch`] when `T` is not the tensor's dtype;
    /// [`TensorError::NotUtf8`] reading a `String` that is not UTF-8.
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>, TensorError> {
        if self.dtype != T::DTYPE {
            return Err(TensorError::DtypeMismatch {
                tensor: self.dtype,
                requested: T::DTYPE,
            });
        }
        T::unpack(&self.data)
    }

    /// The packed little-endian bytes of a fixed-width tensor (`None` for strings).
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match &self.data {
            Data::Packed(bytes) => Some(bytes),
            Data::Strings(_) => None,
        }
    }
}

/// The number of elements of `shape`, refusing a product past `u64`.
fn element_count(shape: &[u64]) -> Result<u64, TensorError> {
    shape
        .iter()
        .try_fold(1u64, |n, &d| n.checked_mul(d))
        .ok_or_else(|| TensorError::TooLarge {
            shape: shape.to_vec(),
        })
}
