//! [`Signature`]: a function's inputs and outputs, named and typed, checked against a call's
//! inputs before it is sent.

use std::fmt;

use cluster_proto::op_def::ArgDef;
use cluster_proto::{DataType, FunctionDef};

use super::FunctionError;
use crate::tensor::dtype_name;

/// A function's name, inputs and outputs; displays as
/// `__inference_f_17(x: float32, y: float32) -> (float32)`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Signature {
    /// The function's name.
    pub name: String,
    /// The inputs, in order.
    pub inputs: Vec<Arg>,
    /// The outputs, in order.
    pub outputs: Vec<Arg>,
}

/// One input or output of a function.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Arg {
    /// Its name in the signature.
    pub name: String,
    /// Its element type.
    pub dtype: DataType,
}

impl Signature {
    /// The signature of `def`: a function traced for fixed dtypes, as every concrete
    /// `tf.function` is.
    pub(super) fn of(def: &FunctionDef) -> Result<Self, FunctionError> {
        let op = def
            .signature
            .as_ref()
            .filter(|s| !s.name.is_empty())
            .ok_or(FunctionError::Unnamed)?;
        let args = |list: &[ArgDef]| -> Result<Vec<Arg>, FunctionError> {
            list.iter()
                .map(|a| {
                    let dtype = DataType::try_from(a.r#type).unwrap_or(DataType::DtInvalid);
                    if dtype == DataType::DtInvalid || !a.number_attr.is_empty() {
                        return Err(FunctionError::Polymorphic {
                            function: op.name.clone(),
                            arg: a.name.clone(),
                        });
                    }
                    Ok(Arg {
                        name: a.name.clone(),
                        dtype,
                    })
                })
                .collect()
        };
        Ok(Self {
            name: op.name.clone(),
            inputs: args(&op.input_arg)?,
            outputs: args(&op.output_arg)?,
        })
    }

    /// Checks a call's input dtypes (`None` where unknown before the call runs).
    pub(crate) fn check(&self, inputs: &[Option<DataType>]) -> Result<(), FunctionError> {
        if inputs.len() != self.inputs.len() {
            return Err(FunctionError::InputCount {
                signature: self.to_string(),
                expected: self.inputs.len(),
                given: inputs.len(),
            });
        }
        for (index, (arg, given)) in self.inputs.iter().zip(inputs).enumerate() {
            if let Some(given) = *given
                && given != arg.dtype
            {
                return Err(FunctionError::InputDtype {
                    signature: self.to_string(),
                    index,
                    arg: arg.name.clone(),
                    expected: arg.dtype,
                    given,
                });
            }
        }
        Ok(())
    }
}

impl fmt::Display for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}(", self.name)?;
        for (i, arg) in self.inputs.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            write!(f, "{sep}{}: {}", arg.name, dtype_name(arg.dtype))?;
        }
        f.write_str(") -> (")?;
        for (i, arg) in self.outputs.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            f.write_str(sep)?;
            f.write_str(dtype_name(arg.dtype))?;
        }
        f.write_str(")")
    }
}

#[cfg(test)]
mod tests {
    use cluster_proto::OpDef;

    use super::*;

    fn arg(name: &str, dtype: DataType) -> ArgDef {
        ArgDef {
            name: name.into(),
            r#type: dtype as i32,
            ..ArgDef::default()
        }
    }

    fn signature(inputs: Vec<ArgDef>) -> Result<Signature, FunctionError> {
        Signature::of(&FunctionDef {
            signature: Some(OpDef {
                name: "__inference_two_27".into(),
                input_arg: inputs,
                output_arg: vec![
                    arg("identity", DataType::DtString),
                    arg("identity_1", DataType::DtInt32),
                ],
                ..OpDef::default()
            }),
            ..FunctionDef::default()
        })
    }

    #[test]
    fn displays_and_checks_inputs_naming_the_signature() {
        let s = signature(vec![
            arg("n", DataType::DtInt32),
            arg("s", DataType::DtString),
        ])
        .unwrap();
        let shown = "__inference_two_27(n: int32, s: string) -> (string, int32)";
        assert_eq!(s.to_string(), shown);
        s.check(&[Some(DataType::DtInt32), None]).unwrap();
        let err = s.check(&[Some(DataType::DtInt32)]).unwrap_err();
        assert_eq!(err.to_string(), format!("{shown} takes 2 inputs, 1 given"));
        let err = s
            .check(&[Some(DataType::DtInt32), Some(DataType::DtFloat)])
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("{shown}: input 1 (s) must be string, not float32")
        );
    }

    #[test]
    fn refuses_definitions_that_cannot_be_called_as_they_are() {
        let mut typed_by_attr = arg("x", DataType::DtInvalid);
        typed_by_attr.type_attr = "T".into();
        assert!(matches!(
            signature(vec![typed_by_attr]),
            Err(FunctionError::Polymorphic { arg, .. }) if arg == "x"
        ));
        assert!(matches!(
            Signature::of(&FunctionDef::default()),
            Err(FunctionError::Unnamed)
        ));
    }
}
