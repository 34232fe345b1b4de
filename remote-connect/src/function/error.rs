//! [`FunctionError`]: a function that cannot be read, or a call that does not fit its
//! signature.

use cluster_proto::DataType;

use crate::tensor::dtype_name;

/// A function that cannot be read or called as given; found before anything is sent.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FunctionError {
    /// The bytes are not a serialized message of that type.
    #[error("the bytes are no serialized {what}")]
    Decode {
        /// `FunctionDef` or `FunctionDefLibrary`.
        what: &'static str,
        /// prost's reason.
        #[source]
        source: prost::DecodeError,
    },
    /// The definition's signature names no function.
    #[error("the FunctionDef's signature names no function")]
    Unnamed,
    /// The library holds no function of that name.
    #[error("the library has no function {name:?}; it has {available:?}")]
    NotInLibrary {
        /// The name asked for.
        name: String,
        /// The library's functions.
        available: Vec<String>,
    },
    /// An argument typed by an attribute (a generic function, not a traced `tf.function`).
    #[error(
        "function {function}: argument {arg:?} has no fixed dtype (it is set by an attribute); \
         only functions traced for fixed dtypes can be called"
    )]
    Polymorphic {
        /// The function.
        function: String,
        /// The argument.
        arg: String,
    },
    /// A call with the wrong number of inputs.
    #[error("{signature} takes {expected} inputs, {given} given")]
    InputCount {
        /// The function's signature, as displayed.
        signature: String,
        /// How many inputs it takes.
        expected: usize,
        /// How many inputs the call has.
        given: usize,
    },
    /// A call whose input has the wrong dtype.
    #[error(
        "{signature}: input {index} ({arg}) must be {}, not {}",
        dtype_name(*.expected),
        dtype_name(*.given)
    )]
    InputDtype {
        /// The function's signature, as displayed.
        signature: String,
        /// The input's position.
        index: usize,
        /// The input's name in the signature.
        arg: String,
        /// The signature's dtype.
        expected: DataType,
        /// The dtype given.
        given: DataType,
    },
}
