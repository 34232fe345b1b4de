//! The output dtypes of an op, worked out as TensorFlow's client does from the op's
//! registered signature: a remote worker reports only the shapes of outputs it keeps, yet a
//! [`RemoteTensor`](crate::RemoteTensor) used as an input on another task must name its dtype.
//!
//! The signatures are TensorFlow 2.21's op registry, generated into `signatures.txt` by
//! `signatures.py` (`cargo xtask op-signatures`) and checked against TensorFlow by a test.

use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

use cluster_proto::{AttrValue, DataType, attr_value};

/// The generated registry, one op per line.
pub(crate) const SIGNATURES: &str = include_str!("signatures.txt");

/// One argument of a signature.
#[derive(Debug, PartialEq)]
enum Arg<'a> {
    /// The dtype held by a type attribute.
    Attr(&'a str),
    /// A fixed dtype.
    Fixed(DataType),
    /// `count` (an int attribute) arguments of one dtype.
    Repeated { count: &'a str, of: Box<Arg<'a>> },
    /// One argument per dtype of a type-list attribute.
    List(&'a str),
}

#[derive(Debug)]
struct Signature<'a> {
    inputs: Vec<Arg<'a>>,
    outputs: Vec<Arg<'a>>,
    defaults: Vec<(&'a str, DataType)>,
}

fn registry() -> &'static HashMap<&'static str, Signature<'static>> {
    static REGISTRY: OnceLock<HashMap<&'static str, Signature<'static>>> = OnceLock::new();
    REGISTRY.get_or_init(|| SIGNATURES.lines().filter_map(parse_line).collect())
}

fn parse_line(line: &str) -> Option<(&str, Signature<'_>)> {
    let (head, defaults) = line.split_once(" ; ").unwrap_or((line, ""));
    let (left, outputs) = head.split_once(" -> ")?;
    let (name, inputs) = left.split_once(' ')?;
    let defaults = defaults
        .split_whitespace()
        .filter_map(|d| {
            let (attr, number) = d.split_once('=')?;
            Some((attr, DataType::try_from(number.parse::<i32>().ok()?).ok()?))
        })
        .collect();
    Some((
        name,
        Signature {
            inputs: parse_args(inputs),
            outputs: parse_args(outputs),
            defaults,
        },
    ))
}

fn parse_args(text: &str) -> Vec<Arg<'_>> {
    text.split(',')
        .filter(|a| !a.is_empty())
        .map(parse_arg)
        .collect()
}

fn parse_arg(text: &str) -> Arg<'_> {
    if let Some(list) = text.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
        return Arg::List(list);
    }
    if let Some((count, of)) = text.split_once('*') {
        return Arg::Repeated {
            count,
            of: Box::new(parse_arg(of)),
        };
    }
    match text.strip_prefix('#').and_then(|n| n.parse::<i32>().ok()) {
        Some(n) => Arg::Fixed(DataType::try_from(n).unwrap_or(DataType::DtInvalid)),
        None => Arg::Attr(text),
    }
}

/// What is known of an op's attributes: those given, and those inferred from its inputs.
#[derive(Default)]
struct Bindings<'a> {
    types: HashMap<&'a str, DataType>,
    lists: HashMap<&'a str, Vec<DataType>>,
    counts: HashMap<&'a str, usize>,
    /// Attributes of variable-length inputs inferred here: TensorFlow's worker infers a type
    /// attribute from a single input, but not a list's length or types, which its Python
    /// client sets; so the client must send them.
    inferred: BTreeMap<String, AttrValue>,
}

/// What the registry tells about op `name` run with `attrs` on inputs of dtypes `inputs`.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Completion {
    /// The dtype of each output; `None` for an op not in the registry (a function, or a custom
    /// op) or outputs the signature leaves open.
    pub(crate) outputs: Option<Vec<DataType>>,
    /// Attributes of variable-length inputs (`N`, list types) to send along.
    pub(crate) attrs: BTreeMap<String, AttrValue>,
}

/// Completes an op from TensorFlow's registry: its output dtypes and the attributes of its
/// variable-length inputs, as TensorFlow's Python client works them out.
pub(crate) fn complete(
    name: &str,
    attrs: &BTreeMap<String, AttrValue>,
    inputs: &[DataType],
) -> Completion {
    let Some(signature) = registry().get(name) else {
        return Completion::default();
    };
    let b = bind(signature, attrs, inputs);
    let mut outputs = Some(Vec::new());
    for arg in &signature.outputs {
        if let Some(out) = outputs.as_mut()
            && expand(arg, &b, out).is_none()
        {
            outputs = None;
        }
    }
    Completion {
        outputs,
        attrs: b.inferred,
    }
}

#[cfg(test)]
fn output_dtypes(
    name: &str,
    attrs: &BTreeMap<String, AttrValue>,
    inputs: &[DataType],
) -> Option<Vec<DataType>> {
    complete(name, attrs, inputs).outputs
}

fn bind<'a>(
    signature: &Signature<'a>,
    attrs: &'a BTreeMap<String, AttrValue>,
    inputs: &[DataType],
) -> Bindings<'a> {
    let mut b = Bindings::default();
    for (attr, value) in attrs {
        match &value.value {
            Some(attr_value::Value::Type(t)) => {
                if let Ok(t) = DataType::try_from(*t) {
                    b.types.insert(attr, t);
                }
            }
            Some(attr_value::Value::List(list)) => {
                let types = list
                    .r#type
                    .iter()
                    .filter_map(|t| DataType::try_from(*t).ok());
                b.lists.insert(attr, types.collect());
            }
            Some(attr_value::Value::I(n)) => {
                if let Ok(n) = usize::try_from(*n) {
                    b.counts.insert(attr, n);
                }
            }
            _ => {}
        }
    }
    bind_inputs(signature, inputs, &mut b);
    for (attr, default) in &signature.defaults {
        b.types.entry(attr).or_insert(*default);
    }
    b
}

/// Infers attributes from the inputs' dtypes, as TensorFlow's eager runtime does when an op's
/// inputs are added. A variable-length argument whose length is not given takes what the
/// fixed-length arguments leave, when it is the only one.
fn bind_inputs<'a>(signature: &Signature<'a>, inputs: &[DataType], b: &mut Bindings<'a>) {
    let fixed = signature
        .inputs
        .iter()
        .filter(|a| matches!(a, Arg::Attr(_) | Arg::Fixed(_)))
        .count();
    let variable = signature.inputs.len() - fixed;
    let spare = inputs.len().saturating_sub(fixed);
    let mut next = inputs.iter().copied();
    for arg in &signature.inputs {
        match arg {
            Arg::Attr(attr) => {
                if let Some(t) = next.next() {
                    b.types.entry(attr).or_insert(t);
                }
            }
            Arg::Fixed(_) => {
                next.next();
            }
            Arg::Repeated { count, of } => {
                let n = match b.counts.get(count) {
                    Some(n) => *n,
                    None if variable == 1 => {
                        b.inferred.insert((*count).to_owned(), int(spare));
                        spare
                    }
                    None => return,
                };
                b.counts.insert(count, n);
                let taken: Vec<DataType> = next.by_ref().take(n).collect();
                if let (Arg::Attr(attr), Some(&t)) = (of.as_ref(), taken.first())
                    && t != DataType::DtInvalid
                    && !b.types.contains_key(attr)
                {
                    b.types.insert(attr, t);
                    b.inferred.insert((*attr).to_owned(), single(t));
                }
            }
            Arg::List(attr) => {
                let n = match b.lists.get(attr) {
                    Some(types) => types.len(),
                    None if variable == 1 => spare,
                    None => return,
                };
                let taken: Vec<DataType> = next.by_ref().take(n).collect();
                if !b.lists.contains_key(attr) && !taken.contains(&DataType::DtInvalid) {
                    b.inferred.insert((*attr).to_owned(), list(&taken));
                    b.lists.insert(attr, taken);
                }
            }
        }
    }
}

fn int(n: usize) -> AttrValue {
    AttrValue {
        value: Some(attr_value::Value::I(n as i64)),
    }
}

fn single(t: DataType) -> AttrValue {
    AttrValue {
        value: Some(attr_value::Value::Type(t as i32)),
    }
}

fn list(types: &[DataType]) -> AttrValue {
    AttrValue {
        value: Some(attr_value::Value::List(attr_value::ListValue {
            r#type: types.iter().map(|t| *t as i32).collect(),
            ..attr_value::ListValue::default()
        })),
    }
}

fn expand(arg: &Arg<'_>, b: &Bindings<'_>, out: &mut Vec<DataType>) -> Option<()> {
    match arg {
        Arg::Attr(attr) => out.push(*b.types.get(attr)?),
        Arg::Fixed(t) => out.push(*t),
        Arg::Repeated { count, of } => {
            for _ in 0..*b.counts.get(count)? {
                expand(of, b, out)?;
            }
        }
        Arg::List(attr) => out.extend(b.lists.get(attr)?),
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ty(t: DataType) -> AttrValue {
        AttrValue {
            value: Some(attr_value::Value::Type(t as i32)),
        }
    }

    #[test]
    fn outputs_follow_the_registry() {
        use DataType as D;
        let none = BTreeMap::new();
        let f = D::DtFloat;
        assert_eq!(output_dtypes("AddV2", &none, &[f, f]), Some(vec![f]));
        assert_eq!(
            output_dtypes("Equal", &none, &[f, f]),
            Some(vec![D::DtBool])
        );
        assert_eq!(output_dtypes("Shape", &none, &[f]), Some(vec![D::DtInt32]));
        let int64 = [("out_type".to_string(), ty(D::DtInt64))].into();
        assert_eq!(output_dtypes("Shape", &int64, &[f]), Some(vec![D::DtInt64]));
        assert_eq!(
            output_dtypes("Unique", &none, &[D::DtString]),
            Some(vec![D::DtString, D::DtInt32])
        );
        assert_eq!(
            output_dtypes("ConcatV2", &none, &[f, f, f, D::DtInt32]),
            Some(vec![f])
        );
        assert_eq!(
            output_dtypes("IdentityN", &none, &[f, D::DtInt64]),
            Some(vec![f, D::DtInt64])
        );
        assert_eq!(
            output_dtypes("Cast", &none, &[f]),
            None,
            "DstT is not given"
        );
        let to_int = [("DstT".to_string(), ty(D::DtInt32))].into();
        assert_eq!(output_dtypes("Cast", &to_int, &[f]), Some(vec![D::DtInt32]));
        assert_eq!(output_dtypes("NoSuchOp", &none, &[]), None);
    }

    #[test]
    fn variable_length_inputs_get_their_attributes() {
        use DataType as D;
        let none = BTreeMap::new();
        let c = complete("ConcatV2", &none, &[D::DtFloat, D::DtFloat, D::DtInt32]);
        assert_eq!(c.attrs["N"], int(2));
        assert_eq!(c.attrs["T"], single(D::DtFloat));
        assert!(
            !c.attrs.contains_key("Tidx"),
            "a single input's type the worker infers"
        );
        let c = complete("IdentityN", &none, &[D::DtFloat, D::DtInt64]);
        assert_eq!(c.attrs["T"], list(&[D::DtFloat, D::DtInt64]));
        let given = [("N".to_string(), int(1))].into();
        assert!(
            !complete("AddN", &given, &[D::DtFloat])
                .attrs
                .contains_key("N")
        );
    }

    #[test]
    fn every_line_parses() {
        let lines = SIGNATURES.lines().count();
        assert!(lines > 1500, "{lines} signatures");
        assert_eq!(registry().len(), lines);
    }
}
