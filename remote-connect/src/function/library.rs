//! The functions a function calls: by node op name, or through a `func` attribute
//! (`PartitionedCall`'s `f`, which is how one `tf.function` calls another).

use std::collections::BTreeSet;

use cluster_proto::attr_value::Value;
use cluster_proto::{AttrValue, FunctionDef, FunctionDefLibrary};

/// The functions of `library` that `def` calls, directly or through others, callees before
/// their callers (the order TensorFlow's client registers them in). A name the library does
/// not hold is left to the worker (a primitive op, or a function registered there already).
pub(super) fn callees(def: &FunctionDef, library: &FunctionDefLibrary) -> FunctionDefLibrary {
    let mut seen = BTreeSet::new();
    if let Some(signature) = &def.signature {
        seen.insert(signature.name.clone());
    }
    let mut order = Vec::new();
    visit(def, library, &mut seen, &mut order);
    FunctionDefLibrary {
        function: order,
        ..FunctionDefLibrary::default()
    }
}

fn visit(
    def: &FunctionDef,
    library: &FunctionDefLibrary,
    seen: &mut BTreeSet<String>,
    order: &mut Vec<FunctionDef>,
) {
    for name in called(def) {
        if seen.contains(&name) {
            continue;
        }
        let Some(callee) = library
            .function
            .iter()
            .find(|f| f.signature.as_ref().is_some_and(|s| s.name == name))
        else {
            continue;
        };
        seen.insert(name);
        visit(callee, library, seen, order);
        order.push(callee.clone());
    }
}

/// Every name `def`'s body may call.
fn called(def: &FunctionDef) -> Vec<String> {
    let mut names = Vec::new();
    for node in &def.node_def {
        names.push(node.op.clone());
        for value in node.attr.values() {
            functions_in(value, &mut names);
        }
    }
    for value in def.attr.values() {
        functions_in(value, &mut names);
    }
    names
}

fn functions_in(value: &AttrValue, names: &mut Vec<String>) {
    match &value.value {
        Some(Value::Func(f)) => {
            names.push(f.name.clone());
            for v in f.attr.values() {
                functions_in(v, names);
            }
        }
        Some(Value::List(list)) => names.extend(list.func.iter().map(|f| f.name.clone())),
        _ => {}
    }
}

/// The names of the library's functions.
pub(super) fn names(library: &FunctionDefLibrary) -> Vec<String> {
    library
        .function
        .iter()
        .filter_map(|f| f.signature.as_ref().map(|s| s.name.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use cluster_proto::{NameAttrList, NodeDef, OpDef};

    use super::*;

    fn def(name: &str, calls: &[&str]) -> FunctionDef {
        FunctionDef {
            signature: Some(OpDef {
                name: name.into(),
                ..OpDef::default()
            }),
            node_def: calls
                .iter()
                .map(|c| NodeDef {
                    op: "PartitionedCall".into(),
                    attr: BTreeMap::from([(
                        "f".to_owned(),
                        AttrValue {
                            value: Some(Value::Func(NameAttrList {
                                name: (*c).into(),
                                attr: BTreeMap::new(),
                            })),
                        },
                    )]),
                    ..NodeDef::default()
                })
                .collect(),
            ..FunctionDef::default()
        }
    }

    #[test]
    fn callees_come_before_callers_once_each_and_unused_ones_are_left_out() {
        let library = FunctionDefLibrary {
            function: vec![
                def("b", &["c"]),
                def("c", &[]),
                def("unused", &[]),
                def("a", &["b", "c", "a"]),
            ],
            ..FunctionDefLibrary::default()
        };
        let got = callees(&def("top", &["b", "c", "top"]), &library);
        assert_eq!(names(&got), ["c", "b"]);
    }
}
