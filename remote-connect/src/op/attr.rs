//! [`Attr`]: an op attribute's value, from the Rust value it reads as.

use cluster_proto::attr_value::{ListValue, Value};
use cluster_proto::{AttrValue, DataType};

use crate::Tensor;
use crate::tensor::shape_proto;

/// An attribute value (TensorFlow's `AttrValue`): made from `bool`, `i64`, `f32`, a string,
/// a [`DataType`], a [`Tensor`], or with [`Attr::shape`], [`Attr::ints`] and [`Attr::types`].
#[derive(Clone, Debug, PartialEq)]
pub struct Attr(AttrValue);

impl Attr {
    /// A shape attribute, such as `Placeholder`'s `shape`.
    pub fn shape(dims: &[u64]) -> Self {
        Self::of(Value::Shape(shape_proto(dims)))
    }

    /// A list of integers, such as `Conv2D`'s `strides`.
    pub fn ints(values: &[i64]) -> Self {
        Self::of(Value::List(ListValue {
            i: values.to_vec(),
            ..ListValue::default()
        }))
    }

    /// A list of types, such as `IdentityN`'s `T`.
    pub fn types(types: &[DataType]) -> Self {
        Self::of(Value::List(ListValue {
            r#type: types.iter().map(|t| *t as i32).collect(),
            ..ListValue::default()
        }))
    }

    /// The protobuf sent.
    pub fn into_proto(self) -> AttrValue {
        self.0
    }

    fn of(value: Value) -> Self {
        Self(AttrValue { value: Some(value) })
    }
}

impl From<AttrValue> for Attr {
    fn from(v: AttrValue) -> Self {
        Self(v)
    }
}

impl From<bool> for Attr {
    fn from(v: bool) -> Self {
        Self::of(Value::B(v))
    }
}

impl From<i64> for Attr {
    fn from(v: i64) -> Self {
        Self::of(Value::I(v))
    }
}

impl From<f32> for Attr {
    fn from(v: f32) -> Self {
        Self::of(Value::F(v))
    }
}

impl From<&str> for Attr {
    fn from(v: &str) -> Self {
        Self::of(Value::S(v.as_bytes().to_vec()))
    }
}

impl From<String> for Attr {
    fn from(v: String) -> Self {
        Self::of(Value::S(v.into_bytes()))
    }
}

impl From<DataType> for Attr {
    fn from(v: DataType) -> Self {
        Self::of(Value::Type(v as i32))
    }
}

impl From<Tensor> for Attr {
    fn from(v: Tensor) -> Self {
        Self::of(Value::Tensor(v.to_proto()))
    }
}
