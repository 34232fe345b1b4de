//! [`Function`]: a TensorFlow function (what `tf.function` traces to) to register and call on
//! remote workers, with the functions it calls and its [`Signature`].

mod error;
mod library;
mod signature;

use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

use cluster_proto::{FunctionDef, FunctionDefLibrary};
use prost::Message;

pub use error::FunctionError;
pub use signature::{Arg, Signature};

/// A TensorFlow function: a `FunctionDef` as Python writes it with
/// `concrete_function.function_def.SerializeToString()`, with the functions it calls (from
/// `concrete_function.graph.as_graph_def().library`). Cheap to clone.
///
/// Register it with [`Context::register_function`](crate::Context::register_function) (or
/// let the first call do it) and call it with [`Op::function`](crate::Op::function).
///
/// ```
/// use cluster_proto::{DataType, FunctionDef, OpDef, op_def::ArgDef};
/// use prost::Message;
/// use remote_connect::Function;
///
/// let arg = |name: &str| ArgDef { name: name.into(), r#type: DataType::DtFloat as i32, ..ArgDef::default() };
/// let def = FunctionDef {
///     signature: Some(OpDef {
///         name: "__inference_f_17".into(),
///         input_arg: vec![arg("x"), arg("y")],
///         output_arg: vec![arg("identity")],
///         ..OpDef::default()
///     }),
///     ..FunctionDef::default()
/// };
/// let f = Function::from_function_def(&def.encode_to_vec())?;
/// assert_eq!(f.signature().to_string(), "__inference_f_17(x: float32, y: float32) -> (float32)");
/// # Ok::<(), remote_connect::FunctionError>(())
/// ```
#[derive(Clone, Debug)]
pub struct Function {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    def: FunctionDef,
    /// The functions `def` calls, directly or not, as registered with it.
    library: FunctionDefLibrary,
    signature: Signature,
    /// Tells apart two definitions under one name.
    fingerprint: u64,
}

impl Function {
    /// The function serialized in `bytes` (a `FunctionDef`), calling no function of a library
    /// (add those with [`with_library`](Self::with_library)).
    ///
    /// # Errors
    ///
    /// [`FunctionError::Decode`] for bytes that are no `FunctionDef`,
    /// [`FunctionError::Unnamed`] and [`FunctionError::Polymorphic`] for a definition that
    /// cannot be called as it is.
    pub fn from_function_def(bytes: &[u8]) -> Result<Self, FunctionError> {
        let def = FunctionDef::decode(bytes).map_err(|source| FunctionError::Decode {
            what: "FunctionDef",
            source,
        })?;
        Self::from_proto(def, &FunctionDefLibrary::default())
    }

    /// Function `name` of the library serialized in `bytes` (a `FunctionDefLibrary`), with the
    /// library's functions it calls.
    ///
    /// # Errors
    ///
    /// [`FunctionError::NotInLibrary`] when the library has no such function, and as
    /// [`from_function_def`](Self::from_function_def).
    pub fn from_library(bytes: &[u8], name: &str) -> Result<Self, FunctionError> {
        let library = decode_library(bytes)?;
        let def = library
            .function
            .iter()
            .find(|f| f.signature.as_ref().is_some_and(|s| s.name == name))
            .cloned()
            .ok_or_else(|| FunctionError::NotInLibrary {
                name: name.to_owned(),
                available: library::names(&library),
            })?;
        Self::from_proto(def, &library)
    }

    /// This function with the functions it calls taken from the library serialized in
    /// `bytes` (`concrete_function.graph.as_graph_def().library`); the library's other
    /// functions are left out.
    ///
    /// # Errors
    ///
    /// [`FunctionError::Decode`] for bytes that are no `FunctionDefLibrary`.
    pub fn with_library(self, bytes: &[u8]) -> Result<Self, FunctionError> {
        let mut library = decode_library(bytes)?;
        library
            .function
            .extend(self.inner.library.function.iter().cloned());
        Self::from_proto(self.inner.def.clone(), &library)
    }

    /// The function `def`, with the functions of `library` it calls.
    ///
    /// # Errors
    ///
    /// As [`from_function_def`](Self::from_function_def).
    pub fn from_proto(
        def: FunctionDef,
        library: &FunctionDefLibrary,
    ) -> Result<Self, FunctionError> {
        let signature = Signature::of(&def)?;
        let library = library::callees(&def, library);
        let mut hasher = DefaultHasher::new();
        def.encode_to_vec().hash(&mut hasher);
        library.encode_to_vec().hash(&mut hasher);
        Ok(Self {
            inner: Arc::new(Inner {
                def,
                library,
                signature,
                fingerprint: hasher.finish(),
            }),
        })
    }

    /// The function's name, as registered (`__inference_f_17`).
    pub fn name(&self) -> &str {
        &self.inner.signature.name
    }

    /// Its inputs and outputs.
    pub fn signature(&self) -> &Signature {
        &self.inner.signature
    }

    /// The definition.
    pub fn function_def(&self) -> &FunctionDef {
        &self.inner.def
    }

    /// The functions it calls, registered with it.
    pub fn library(&self) -> &FunctionDefLibrary {
        &self.inner.library
    }

    /// Equal for equal definitions and libraries.
    pub(crate) fn fingerprint(&self) -> u64 {
        self.inner.fingerprint
    }
}

fn decode_library(bytes: &[u8]) -> Result<FunctionDefLibrary, FunctionError> {
    FunctionDefLibrary::decode(bytes).map_err(|source| FunctionError::Decode {
        what: "FunctionDefLibrary",
        source,
    })
}

#[cfg(test)]
mod tests {
    use cluster_proto::op_def::ArgDef;
    use cluster_proto::{DataType, NodeDef, OpDef};
    use proptest::prelude::*;

    use super::*;

    fn def(name: &str, calls: &str) -> FunctionDef {
        FunctionDef {
            signature: Some(OpDef {
                name: name.into(),
                output_arg: vec![ArgDef {
                    name: "y".into(),
                    r#type: DataType::DtInt64 as i32,
                    ..ArgDef::default()
                }],
                ..OpDef::default()
            }),
            node_def: vec![NodeDef {
                op: calls.into(),
                ..NodeDef::default()
            }],
            ..FunctionDef::default()
        }
    }

    #[test]
    fn a_library_function_comes_with_its_callees_and_a_fingerprint_of_both() {
        let library = FunctionDefLibrary {
            function: vec![def("g", "AddV2"), def("f", "g"), def("h", "AddV2")],
            ..FunctionDefLibrary::default()
        };
        let f = Function::from_library(&library.encode_to_vec(), "f").unwrap();
        assert_eq!(f.name(), "f");
        assert_eq!(f.signature().to_string(), "f() -> (int64)");
        assert_eq!(library::names(f.library()), ["g"]);
        let alone = Function::from_function_def(&def("f", "g").encode_to_vec()).unwrap();
        assert!(alone.library().function.is_empty());
        assert_ne!(alone.fingerprint(), f.fingerprint());
        let joined = alone.with_library(&library.encode_to_vec()).unwrap();
        assert_eq!(joined.fingerprint(), f.fingerprint());
        let err = Function::from_library(&library.encode_to_vec(), "nope").unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"the library has no function "nope"; it has ["g", "f", "h"]"#
        );
    }

    proptest! {
        #[test]
        fn any_bytes_are_read_or_refused_without_panicking(
            bytes in proptest::collection::vec(any::<u8>(), 0..256)
        ) {
            let _ = Function::from_function_def(&bytes);
            let _ = Function::from_library(&bytes, "f");
        }
    }
}
