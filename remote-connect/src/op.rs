//! [`Op`]: one TensorFlow operation to run on a remote device, named and attributed as
//! TensorFlow's op registry names them.

mod attr;
pub(crate) mod signature;

use std::collections::BTreeMap;

use cluster_proto::{AttrValue, DataType};

pub use attr::Attr;

use crate::{Function, RemoteTensor, Tensor};

/// A TensorFlow operation: its registered name (`"AddV2"`, `"MatMul"`), inputs in the op's
/// order and attributes.
///
/// Type attributes that TensorFlow infers from the inputs (such as `T` of `AddV2`) may be left
/// out, as in Python; attributes with defaults (`transpose_a`) too. Others (`DstT` of `Cast`)
/// must be given.
///
/// ```
/// use remote_connect::{Op, Tensor};
///
/// let a = Tensor::new(&[2, 2], vec![1.0f32, 2.0, 3.0, 4.0])?;
/// let op = Op::new("MatMul")
///     .input(a.clone())
///     .input(a)
///     .attr("transpose_b", true);
/// assert_eq!(op.name(), "MatMul");
/// # Ok::<(), remote_connect::TensorError>(())
/// ```
#[derive(Clone, Debug)]
pub struct Op {
    name: String,
    inputs: Vec<Input>,
    attrs: BTreeMap<String, AttrValue>,
    /// Set for a call of a registered function.
    function: Option<Function>,
}

/// An op's input: a value sent with the op ([`Tensor`]), a tensor already on a task
/// ([`RemoteTensor`]), or an output of an earlier op of the same batch
/// ([`Pending::output`](crate::Pending::output)).
#[derive(Clone, Debug)]
pub struct Input(pub(crate) Source);

#[derive(Clone, Debug)]
pub(crate) enum Source {
    Value(Tensor),
    Remote(RemoteTensor),
    /// Output `output` of op `op_id`, enqueued earlier in the same batch.
    Pending {
        op_id: i64,
        output: i32,
        device: String,
        dtype: Option<DataType>,
    },
}

impl Input {
    /// The input's dtype, when known before the op runs.
    pub(crate) fn dtype(&self) -> Option<DataType> {
        match &self.0 {
            Source::Value(t) => Some(t.dtype()),
            Source::Remote(t) => t.dtype(),
            Source::Pending { dtype, .. } => *dtype,
        }
    }
}

impl From<Tensor> for Input {
    fn from(t: Tensor) -> Self {
        Input(Source::Value(t))
    }
}

impl From<&Tensor> for Input {
    fn from(t: &Tensor) -> Self {
        Input(Source::Value(t.clone()))
    }
}

impl From<RemoteTensor> for Input {
    fn from(t: RemoteTensor) -> Self {
        Input(Source::Remote(t))
    }
}

impl From<&RemoteTensor> for Input {
    fn from(t: &RemoteTensor) -> Self {
        Input(Source::Remote(t.clone()))
    }
}

impl Op {
    /// The op named `name` in TensorFlow's registry, or a registered function's name.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            inputs: Vec::new(),
            attrs: BTreeMap::new(),
            function: None,
        }
    }

    /// A call of `function`: inputs are added with [`input`](Self::input) in its signature's
    /// order and checked against it before anything is sent; it is registered on the task
    /// that runs it first if needed ([`Context::register_function`](crate::Context::register_function)).
    /// It is sent as TensorFlow's client sends a `tf.function` call: an operation named
    /// after the function, marked as one, without attributes.
    ///
    /// ```
    /// # fn f(function: &remote_connect::Function) {
    /// use remote_connect::{Op, Tensor};
    ///
    /// let call = Op::function(function)
    ///     .input(Tensor::vector(vec![1.0f32, 2.0]))
    ///     .input(Tensor::vector(vec![3.0f32, 4.0]));
    /// assert_eq!(call.name(), function.name());
    /// # }
    /// ```
    pub fn function(function: &Function) -> Self {
        Self {
            function: Some(function.clone()),
            ..Self::new(function.name())
        }
    }

    /// Adds the next input.
    #[must_use]
    pub fn input(mut self, input: impl Into<Input>) -> Self {
        self.inputs.push(input.into());
        self
    }

    /// Sets attribute `name`.
    #[must_use]
    pub fn attr(mut self, name: impl Into<String>, value: impl Into<Attr>) -> Self {
        self.attrs.insert(name.into(), value.into().into_proto());
        self
    }

    /// The op's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The inputs.
    pub fn inputs(&self) -> &[Input] {
        &self.inputs
    }

    /// The attributes as sent.
    pub fn attrs(&self) -> &BTreeMap<String, AttrValue> {
        &self.attrs
    }

    /// The function called, for an op made with [`Op::function`].
    pub fn called_function(&self) -> Option<&Function> {
        self.function.as_ref()
    }
}
