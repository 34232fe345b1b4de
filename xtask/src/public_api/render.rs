//! Rustdoc JSON types, generics and signatures rendered as Rust source reads them, for the
//! public-API listing: `fn(json: &str) -> Result<ClusterSpec, Error>`.
//!
//! Paths are shown as the source writes them (less a leading `$crate::`, `crate::`, `self::`
//! or `super::`), so a listing line reads like the signature in the code.

use serde_json::Value;

/// `ty` (a rustdoc JSON `Type`) as Rust source.
pub(crate) fn ty(value: &Value) -> String {
    let Some((kind, inner)) = only_entry(value) else {
        // "infer" (`_`) is the one type that is a bare string.
        return match value.as_str() {
            Some("infer") => "_".to_owned(),
            _ => format!("{value}"),
        };
    };
    match kind {
        "resolved_path" => path(inner),
        "dyn_trait" => {
            let mut parts: Vec<String> = list(&inner["traits"])
                .iter()
                .map(|t| format!("{}{}", hrtb(&t["generic_params"]), path(&t["trait"])))
                .collect();
            if let Some(lifetime) = inner["lifetime"].as_str() {
                parts.push(lifetime.to_owned());
            }
            format!("dyn {}", parts.join(" + "))
        }
        "generic" | "primitive" => inner.as_str().unwrap_or_default().to_owned(),
        "function_pointer" => {
            let header = header(&inner["header"]);
            let sig = &inner["sig"];
            let inputs: Vec<String> = list(&sig["inputs"]).iter().map(|i| ty(&i[1])).collect();
            format!(
                "{}{header}fn({}){}",
                hrtb(&inner["generic_params"]),
                inputs.join(", "),
                output(&sig["output"])
            )
        }
        "tuple" => {
            let items: Vec<String> = list(inner).iter().map(ty).collect();
            match items.as_slice() {
                [one] => format!("({one},)"),
                _ => format!("({})", items.join(", ")),
            }
        }
        "slice" => format!("[{}]", ty(inner)),
        "array" => format!(
            "[{}; {}]",
            ty(&inner["type"]),
            inner["len"].as_str().unwrap_or("_")
        ),
        "impl_trait" => format!("impl {}", bounds(inner)),
        "raw_pointer" => format!(
            "*{} {}",
            if inner["is_mutable"].as_bool() == Some(true) {
                "mut"
            } else {
                "const"
            },
            ty(&inner["type"])
        ),
        "borrowed_ref" => {
            let lifetime = inner["lifetime"]
                .as_str()
                .map(|l| format!("{l} "))
                .unwrap_or_default();
            let mutable = if inner["is_mutable"].as_bool() == Some(true) {
                "mut "
            } else {
                ""
            };
            format!("&{lifetime}{mutable}{}", ty(&inner["type"]))
        }
        "qualified_path" => {
            let self_type = ty(&inner["self_type"]);
            let name = inner["name"].as_str().unwrap_or_default();
            let args = generic_args(&inner["args"]);
            match inner["trait"].is_null() {
                true => format!("{self_type}::{name}{args}"),
                false => format!("<{self_type} as {}>::{name}{args}", path(&inner["trait"])),
            }
        }
        "pat" => ty(&inner["type"]),
        other => format!("<{other}>"),
    }
}

/// A `Path` (a type or trait named by path) with its generic arguments.
pub(crate) fn path(path: &Value) -> String {
    let written = path["path"].as_str().unwrap_or_default();
    let mut shown = written;
    for prefix in ["$crate::", "crate::", "self::", "super::"] {
        shown = shown.strip_prefix(prefix).unwrap_or(shown);
    }
    format!("{shown}{}", generic_args(&path["args"]))
}

/// `<A, B, Item = C>` or `(A, B) -> C`; empty for none.
fn generic_args(args: &Value) -> String {
    let Some((kind, inner)) = only_entry(args) else {
        return String::new();
    };
    match kind {
        "angle_bracketed" => {
            let mut parts: Vec<String> = list(&inner["args"])
                .iter()
                .map(|arg| match only_entry(arg) {
                    Some(("lifetime", l)) => l.as_str().unwrap_or_default().to_owned(),
                    Some(("type", t)) => ty(t),
                    Some(("const", c)) => c["expr"].as_str().unwrap_or("_").to_owned(),
                    _ => "_".to_owned(),
                })
                .collect();
            for constraint in list(&inner["constraints"]) {
                let name = constraint["name"].as_str().unwrap_or_default();
                let args = generic_args(&constraint["args"]);
                parts.push(match only_entry(&constraint["binding"]) {
                    Some(("equality", term)) => match only_entry(term) {
                        Some(("type", t)) => format!("{name}{args} = {}", ty(t)),
                        Some(("constant", c)) => {
                            format!("{name}{args} = {}", c["expr"].as_str().unwrap_or("_"))
                        }
                        _ => format!("{name}{args} = _"),
                    },
                    Some(("constraint", b)) => format!("{name}{args}: {}", bounds(b)),
                    _ => name.to_owned(),
                });
            }
            if parts.is_empty() {
                String::new()
            } else {
                format!("<{}>", parts.join(", "))
            }
        }
        "parenthesized" => {
            let inputs: Vec<String> = list(&inner["inputs"]).iter().map(ty).collect();
            format!("({}){}", inputs.join(", "), output(&inner["output"]))
        }
        _ => String::new(),
    }
}

/// ` -> T`, or nothing for `()`.
fn output(out: &Value) -> String {
    if out.is_null() {
        String::new()
    } else {
        format!(" -> {}", ty(out))
    }
}

/// Bounds joined with ` + `: `Clone + Send + 'static`.
pub(crate) fn bounds(bounds: &Value) -> String {
    let parts: Vec<String> = list(bounds)
        .iter()
        .map(|bound| match only_entry(bound) {
            Some(("trait_bound", b)) => {
                let maybe = match b["modifier"].as_str() {
                    Some("maybe") => "?",
                    Some("maybe_const") => "~const ",
                    _ => "",
                };
                format!("{}{maybe}{}", hrtb(&b["generic_params"]), path(&b["trait"]))
            }
            Some(("outlives", l)) => l.as_str().unwrap_or_default().to_owned(),
            Some(("use", args)) => {
                let args: Vec<String> = list(args)
                    .iter()
                    .map(|a| match only_entry(a) {
                        Some((_, name)) => name.as_str().unwrap_or_default().to_owned(),
                        None => a.as_str().unwrap_or_default().to_owned(),
                    })
                    .collect();
                format!("use<{}>", args.join(", "))
            }
            _ => "_".to_owned(),
        })
        .collect();
    parts.join(" + ")
}

/// `for<'a> `, or nothing.
fn hrtb(params: &Value) -> String {
    let params: Vec<String> = list(params).iter().filter_map(param).collect();
    if params.is_empty() {
        String::new()
    } else {
        format!("for<{}> ", params.join(", "))
    }
}

/// One generic parameter's definition; `None` for those the compiler made (`impl Trait`
/// arguments), which the signature already shows.
fn param(param: &Value) -> Option<String> {
    let name = param["name"].as_str().unwrap_or_default();
    match only_entry(&param["kind"]) {
        Some(("lifetime", l)) => {
            let outlives: Vec<&str> = list(&l["outlives"])
                .iter()
                .filter_map(Value::as_str)
                .collect();
            Some(match outlives.is_empty() {
                true => name.to_owned(),
                false => format!("{name}: {}", outlives.join(" + ")),
            })
        }
        Some(("type", t)) => {
            if t["is_synthetic"].as_bool() == Some(true) {
                return None;
            }
            let mut shown = name.to_owned();
            if !list(&t["bounds"]).is_empty() {
                shown = format!("{shown}: {}", bounds(&t["bounds"]));
            }
            if !t["default"].is_null() {
                shown = format!("{shown} = {}", ty(&t["default"]));
            }
            Some(shown)
        }
        Some(("const", c)) => Some(format!("const {name}: {}", ty(&c["type"]))),
        _ => Some(name.to_owned()),
    }
}

/// `<T: Clone, 'a>`, or nothing.
pub(crate) fn generics(generics: &Value) -> String {
    let params: Vec<String> = list(&generics["params"]).iter().filter_map(param).collect();
    if params.is_empty() {
        String::new()
    } else {
        format!("<{}>", params.join(", "))
    }
}

/// ` where T: Clone`, or nothing.
pub(crate) fn where_clause(generics: &Value) -> String {
    let predicates: Vec<String> = list(&generics["where_predicates"])
        .iter()
        .map(|p| match only_entry(p) {
            Some(("bound_predicate", b)) => format!(
                "{}{}: {}",
                hrtb(&b["generic_params"]),
                ty(&b["type"]),
                bounds(&b["bounds"])
            ),
            Some(("lifetime_predicate", l)) => {
                let outlives: Vec<&str> = list(&l["outlives"])
                    .iter()
                    .filter_map(Value::as_str)
                    .collect();
                format!(
                    "{}: {}",
                    l["lifetime"].as_str().unwrap_or_default(),
                    outlives.join(" + ")
                )
            }
            Some(("eq_predicate", e)) => {
                let rhs = match only_entry(&e["rhs"]) {
                    Some(("type", t)) => ty(t),
                    _ => "_".to_owned(),
                };
                format!("{} = {rhs}", ty(&e["lhs"]))
            }
            _ => "_".to_owned(),
        })
        .collect();
    if predicates.is_empty() {
        String::new()
    } else {
        format!(" where {}", predicates.join(", "))
    }
}

/// `const async unsafe extern "C" ` as the header says, each only when set.
fn header(header: &Value) -> String {
    let mut shown = String::new();
    for (flag, word) in [
        ("is_const", "const "),
        ("is_async", "async "),
        ("is_unsafe", "unsafe "),
    ] {
        if header[flag].as_bool() == Some(true) {
            shown.push_str(word);
        }
    }
    match &header["abi"] {
        Value::String(abi) if abi == "Rust" => {}
        Value::Null => {}
        abi => {
            let name = only_entry(abi).map_or_else(
                || abi.as_str().unwrap_or_default().to_owned(),
                |(name, _)| name.to_owned(),
            );
            shown.push_str(&format!("extern \"{name}\" "));
        }
    }
    shown
}

/// A function item (`function` inner) as `pub fn PATH<G>(ARGS) -> OUT where ..`.
pub(crate) fn function(path: &str, function: &Value) -> String {
    let sig = &function["sig"];
    let inputs: Vec<String> = list(&sig["inputs"])
        .iter()
        .map(|input| {
            let name = input[0].as_str().unwrap_or("_");
            let shown = ty(&input[1]);
            if name == "self" {
                match shown.as_str() {
                    "Self" => "self".to_owned(),
                    "&Self" => "&self".to_owned(),
                    "&mut Self" => "&mut self".to_owned(),
                    _ => format!("self: {shown}"),
                }
            } else {
                format!("{name}: {shown}")
            }
        })
        .collect();
    format!(
        "pub {}fn {path}{}({}){}{}",
        header(&function["header"]),
        generics(&function["generics"]),
        inputs.join(", "),
        output(&sig["output"]),
        where_clause(&function["generics"])
    )
}

/// The one key and value of a rustdoc JSON enum encoded as `{"kind": value}`.
pub(crate) fn only_entry(value: &Value) -> Option<(&str, &Value)> {
    let object = value.as_object()?;
    let mut entries = object.iter();
    let (key, inner) = entries.next()?;
    entries.next().is_none().then_some((key.as_str(), inner))
}

/// The elements of a JSON array; none for anything else (a missing key included).
pub(crate) fn list(value: &Value) -> &[Value] {
    value.as_array().map_or(&[], Vec::as_slice)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{function, ty};

    #[test]
    fn types_read_as_source() {
        let result = json!({"resolved_path": {"path": "$crate::result::Result", "id": 1, "args":
            {"angle_bracketed": {"args": [
                {"type": {"borrowed_ref": {"lifetime": "'a", "is_mutable": false,
                    "type": {"primitive": "str"}}}},
                {"type": {"tuple": []}}], "constraints": []}}}});
        assert_eq!(ty(&result), "result::Result<&'a str, ()>");
        let boxed = json!({"impl_trait": [{"trait_bound": {"trait": {"path": "Fn", "id": 2,
            "args": {"parenthesized": {"inputs": [{"primitive": "u32"}], "output": null}}},
            "generic_params": [], "modifier": "none"}}, {"outlives": "'static"}]});
        assert_eq!(ty(&boxed), "impl Fn(u32) + 'static");
        assert_eq!(ty(&json!("infer")), "_");
    }

    #[test]
    fn methods_show_their_receiver_and_output() {
        let method = json!({
            "sig": {"inputs": [
                ["self", {"generic": "Self"}],
                ["t", {"resolved_path": {"path": "Duration", "id": 3, "args": null}}]],
                "output": {"generic": "Self"}, "is_c_variadic": false},
            "generics": {"params": [], "where_predicates": []},
            "header": {"is_const": false, "is_unsafe": false, "is_async": true, "abi": "Rust"},
            "has_body": true});
        assert_eq!(
            function("a::B::with_timeout", &method),
            "pub async fn a::B::with_timeout(self, t: Duration) -> Self"
        );
    }
}
