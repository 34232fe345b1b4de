//! The walk over a crate's rustdoc JSON that lists its public items: from the crate root,
//! through public modules and re-exports (`pub use`), every item a user can name, one line
//! each, under the path a user names it by.
//!
//! Listed: modules, structs (and their public fields), enums (and their variants), unions,
//! traits (and their methods, constants and types), functions, constants, statics, type
//! aliases, macros; each type's inherent methods and constants, and the traits it implements
//! (`impl Trait for Type`, the stable auto traits included: losing `Send` breaks users too,
//! but not the blanket impls every type gets, nor nightly's internal marker traits). Items rustdoc leaves out (`#[doc(hidden)]`, private)
//! are left out here too. A re-export of another crate's item is one `pub use` line.

use std::collections::{BTreeSet, HashSet};

use serde_json::Value;

use super::render::{self, list, only_entry};

/// Every public item of the crate `doc` documents, one line each, sorted.
pub(crate) fn listing(doc: &Value) -> Result<Vec<String>, String> {
    let root = doc["root"].to_string();
    let Some(index) = doc["index"].as_object() else {
        return Err("rustdoc JSON without an index".to_owned());
    };
    let name = index
        .get(&root)
        .and_then(|item| item["name"].as_str())
        .ok_or("rustdoc JSON without its root module")?;
    let mut walk = Walk {
        index: doc["index"].clone(),
        lines: BTreeSet::new(),
        seen: HashSet::new(),
    };
    walk.module(&root, name);
    Ok(walk.lines.into_iter().collect())
}

/// Traits rustdoc lists that are nightly's internals, not API a stable user can name (and
/// which come and go with the nightly): left out so the listing does not change with it.
const UNSTABLE_TRAITS: &[&str] = &["Freeze", "UnsafeUnpin", "StructuralPartialEq"];

struct Walk {
    index: Value,
    lines: BTreeSet<String>,
    /// (item id, path) pairs already listed: a module that re-exports its parent ends here.
    seen: HashSet<(String, String)>,
}

impl Walk {
    fn item(&self, id: &str) -> Option<&Value> {
        self.index.get(id).filter(|item| !item.is_null())
    }

    /// The items of module `id`, listed under `path`.
    fn module(&mut self, id: &str, path: &str) {
        let Some(module) = self.item(id) else { return };
        let items: Vec<String> = list(&module["inner"]["module"]["items"])
            .iter()
            .map(Value::to_string)
            .collect();
        for child in items {
            self.named(&child, path, None);
        }
    }

    /// Item `id` listed inside `parent`, under its own name or `rename` (a `pub use .. as`).
    fn named(&mut self, id: &str, parent: &str, rename: Option<&str>) {
        let Some(item) = self.item(id).cloned() else {
            return;
        };
        let Some((kind, inner)) = only_entry(&item["inner"]) else {
            return;
        };
        if kind == "impl" || item["visibility"].as_str() != Some("public") {
            return;
        }
        // A `pub use` has no name of its own: it is the name it re-exports under.
        let name = rename
            .or(item["name"].as_str())
            .or(inner["name"].as_str())
            .unwrap_or("_");
        let path = format!("{parent}::{name}");
        if !self.seen.insert((id.to_owned(), path.clone())) {
            return;
        }
        let add = |walk: &mut Self, line: String| {
            walk.lines.insert(line);
        };
        match kind {
            "use" => self.reexport(inner, parent, &path),
            "module" => {
                add(self, format!("pub mod {path}"));
                self.module(id, &path);
            }
            "struct" => {
                let generics = render::generics(&inner["generics"]);
                add(self, format!("pub struct {path}{generics}"));
                match only_entry(&inner["kind"]) {
                    Some(("plain", plain)) => self.fields(&plain["fields"], &path),
                    Some(("tuple", fields)) => self.fields(fields, &path),
                    _ => {}
                }
                self.impls(&inner["impls"], &path);
            }
            "union" => {
                let generics = render::generics(&inner["generics"]);
                add(self, format!("pub union {path}{generics}"));
                self.fields(&inner["fields"], &path);
                self.impls(&inner["impls"], &path);
            }
            "enum" => {
                let generics = render::generics(&inner["generics"]);
                add(self, format!("pub enum {path}{generics}"));
                for variant in list(&inner["variants"]) {
                    self.variant(&variant.to_string(), &path);
                }
                self.impls(&inner["impls"], &path);
            }
            "trait" => self.trait_(inner, &path),
            "function" => add(self, render::function(&path, inner)),
            "constant" => add(
                self,
                format!("pub const {path}: {}", render::ty(&inner["type"])),
            ),
            "static" => {
                let mutable = if inner["is_mutable"].as_bool() == Some(true) {
                    "mut "
                } else {
                    ""
                };
                add(
                    self,
                    format!("pub static {mutable}{path}: {}", render::ty(&inner["type"])),
                );
            }
            "type_alias" => add(
                self,
                format!(
                    "pub type {path}{} = {}",
                    render::generics(&inner["generics"]),
                    render::ty(&inner["type"])
                ),
            ),
            "macro" | "proc_macro" => add(self, format!("pub macro {path}!")),
            other => add(self, format!("pub {other} {path}")),
        }
    }

    /// A `pub use`: the item it names listed where it is re-exported (a glob's items, for
    /// `*`); another crate's item, which this crate does not document, as one line.
    fn reexport(&mut self, reexport: &Value, parent: &str, path: &str) {
        let target = reexport["id"].to_string();
        let source = reexport["source"].as_str().unwrap_or_default();
        let glob = reexport["is_glob"].as_bool() == Some(true);
        let local = self
            .item(&target)
            .is_some_and(|item| item["crate_id"].as_u64() == Some(0));
        match (local, glob) {
            (true, true) => self.module(&target, parent),
            (true, false) => self.named(&target, parent, reexport["name"].as_str()),
            (false, true) => {
                self.lines
                    .insert(format!("pub use {parent}::* = {source}::*"));
            }
            (false, false) => {
                self.lines.insert(format!("pub use {path} = {source}"));
            }
        }
    }

    /// The public fields (ids, `null` for a private one) of a struct, union or variant.
    fn fields(&mut self, fields: &Value, path: &str) {
        for field in list(fields) {
            let Some(item) = self.item(&field.to_string()) else {
                continue;
            };
            if item["visibility"].as_str() != Some("public") {
                continue;
            }
            let name = item["name"].as_str().unwrap_or("_");
            let ty = render::ty(&item["inner"]["struct_field"]);
            self.lines.insert(format!("pub field {path}::{name}: {ty}"));
        }
    }

    /// A variant with its fields inline: `V`, `V(u64)`, `V { job: String }`.
    fn variant(&mut self, id: &str, path: &str) {
        let Some(item) = self.item(id).cloned() else {
            return;
        };
        let name = item["name"].as_str().unwrap_or("_");
        let field = |id: &Value| {
            self.item(&id.to_string()).map(|f| {
                (
                    f["name"].as_str().unwrap_or("_").to_owned(),
                    render::ty(&f["inner"]["struct_field"]),
                )
            })
        };
        let shape = match only_entry(&item["inner"]["variant"]["kind"]) {
            Some(("tuple", fields)) => {
                let types: Vec<String> = list(fields)
                    .iter()
                    .map(|f| field(f).map_or_else(|| "_".to_owned(), |(_, ty)| ty))
                    .collect();
                format!("({})", types.join(", "))
            }
            Some(("struct", s)) => {
                let mut shown: Vec<String> = list(&s["fields"])
                    .iter()
                    .filter_map(field)
                    .map(|(name, ty)| format!("{name}: {ty}"))
                    .collect();
                if s["has_stripped_fields"].as_bool() == Some(true) {
                    shown.push("..".to_owned());
                }
                format!(" {{ {} }}", shown.join(", "))
            }
            _ => String::new(),
        };
        self.lines
            .insert(format!("pub variant {path}::{name}{shape}"));
    }

    /// A trait, and each item it declares.
    fn trait_(&mut self, inner: &Value, path: &str) {
        let supertraits = render::bounds(&inner["bounds"]);
        let colon = if supertraits.is_empty() { "" } else { ": " };
        let unsafety = if inner["is_unsafe"].as_bool() == Some(true) {
            "unsafe "
        } else {
            ""
        };
        self.lines.insert(format!(
            "pub {unsafety}trait {path}{}{colon}{supertraits}",
            render::generics(&inner["generics"])
        ));
        self.associated(&inner["items"], path);
    }

    /// Associated functions, constants and types (of a trait, or an inherent impl's public
    /// ones).
    fn associated(&mut self, items: &Value, path: &str) {
        for id in list(items) {
            let Some(item) = self.item(&id.to_string()).cloned() else {
                continue;
            };
            let name = item["name"].as_str().unwrap_or("_");
            let line = match only_entry(&item["inner"]) {
                Some(("function", f)) => render::function(&format!("{path}::{name}"), f),
                Some(("assoc_const", c)) => {
                    format!("pub const {path}::{name}: {}", render::ty(&c["type"]))
                }
                Some(("assoc_type", t)) => {
                    let bounds = render::bounds(&t["bounds"]);
                    let colon = if bounds.is_empty() { "" } else { ": " };
                    format!("pub type {path}::{name}{colon}{bounds}")
                }
                _ => continue,
            };
            self.lines.insert(line);
        }
    }

    /// A type's impls: inherent ones' public items, and one line per implemented trait.
    fn impls(&mut self, impls: &Value, path: &str) {
        for id in list(impls) {
            let Some(item) = self.item(&id.to_string()).cloned() else {
                continue;
            };
            let imp = &item["inner"]["impl"];
            if !imp["blanket_impl"].is_null() {
                continue;
            }
            if imp["trait"].is_null() {
                let public: Vec<Value> = list(&imp["items"])
                    .iter()
                    .filter(|id| {
                        self.item(&id.to_string())
                            .is_some_and(|i| i["visibility"].as_str() == Some("public"))
                    })
                    .cloned()
                    .collect();
                self.associated(&Value::Array(public), path);
                continue;
            }
            if UNSTABLE_TRAITS.contains(&imp["trait"]["path"].as_str().unwrap_or_default()) {
                continue;
            }
            let negative = if imp["is_negative"].as_bool() == Some(true) {
                "!"
            } else {
                ""
            };
            let unsafety = if imp["is_unsafe"].as_bool() == Some(true) {
                "unsafe "
            } else {
                ""
            };
            // The type as listed, with the impl's own arguments (`Chain<'a>`).
            let for_args = match only_entry(&imp["for"]) {
                Some(("resolved_path", p)) => render::path(&serde_json::json!({
                    "path": "", "args": p["args"]
                })),
                _ => String::new(),
            };
            self.lines.insert(format!(
                "{unsafety}impl{} {negative}{} for {path}{for_args}{}",
                render::generics(&imp["generics"]),
                render::path(&imp["trait"]),
                render::where_clause(&imp["generics"])
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::listing;

    /// A crate `demo` with a private module whose struct is re-exported at the root, a public
    /// module, an enum, a trait, and impls of each kind.
    fn sample() -> serde_json::Value {
        let none = json!({"params": [], "where_predicates": []});
        let rust = json!({"is_const": false, "is_unsafe": false, "is_async": false, "abi": "Rust"});
        let string = json!({"resolved_path": {"path": "String", "id": 90, "args": null}});
        let index: serde_json::Map<String, serde_json::Value> = [
            ("0", json!({"id": 0, "crate_id": 0, "name": "demo", "visibility": "public",
                  "inner": {"module": {"is_crate": true, "items": [1, 2, 3, 4], "is_stripped": false}}})),
            ("1", json!({"id": 1, "crate_id": 0, "name": null, "visibility": "public",
                  "inner": {"use": {"source": "inner::Spec", "name": "Spec", "id": 10, "is_glob": false}}})),
            ("2", json!({"id": 2, "crate_id": 0, "name": "util", "visibility": "public",
                  "inner": {"module": {"is_crate": false, "items": [20], "is_stripped": false}}})),
            ("3", json!({"id": 3, "crate_id": 0, "name": "Error", "visibility": "public",
                  "inner": {"enum": {"generics": none, "has_stripped_variants": false,
                                     "variants": [30, 31], "impls": []}}})),
            ("4", json!({"id": 4, "crate_id": 0, "name": null, "visibility": "public",
                  "inner": {"use": {"source": "tonic", "name": "tonic", "id": 99, "is_glob": false}}})),
            ("10", json!({"id": 10, "crate_id": 0, "name": "Spec", "visibility": "public",
                   "inner": {"struct": {"kind": {"plain": {"fields": [11, 12], "has_stripped_fields": true}},
                                        "generics": none, "impls": [13, 14, 15, 16]}}})),
            ("11", json!({"id": 11, "crate_id": 0, "name": "name", "visibility": "public",
                   "inner": {"struct_field": string}})),
            ("12", json!({"id": 12, "crate_id": 0, "name": "hidden", "visibility": "default",
                   "inner": {"struct_field": string}})),
            ("13", json!({"id": 13, "crate_id": 0, "name": null, "visibility": "default",
                   "inner": {"impl": {"is_unsafe": false, "generics": none, "trait": null,
                       "for": {"resolved_path": {"path": "Spec", "id": 10, "args": null}},
                       "items": [17, 18], "is_negative": false, "is_synthetic": false, "blanket_impl": null}}})),
            ("14", json!({"id": 14, "crate_id": 0, "name": null, "visibility": "default",
                   "inner": {"impl": {"is_unsafe": false, "generics": none,
                       "trait": {"path": "Clone", "id": 91, "args": null},
                       "for": {"resolved_path": {"path": "Spec", "id": 10, "args": null}},
                       "items": [], "is_negative": false, "is_synthetic": false, "blanket_impl": null}}})),
            ("15", json!({"id": 15, "crate_id": 0, "name": null, "visibility": "default",
                   "inner": {"impl": {"is_unsafe": false, "generics": none,
                       "trait": {"path": "Send", "id": 92, "args": null},
                       "for": {"resolved_path": {"path": "Spec", "id": 10, "args": null}},
                       "items": [], "is_negative": false, "is_synthetic": true, "blanket_impl": null}}})),
            ("16", json!({"id": 16, "crate_id": 0, "name": null, "visibility": "default",
                   "inner": {"impl": {"is_unsafe": false, "generics": none,
                       "trait": {"path": "Into", "id": 93, "args": null},
                       "for": {"generic": "T"},
                       "items": [], "is_negative": false, "is_synthetic": false,
                       "blanket_impl": {"generic": "T"}}}})),
            ("17", json!({"id": 17, "crate_id": 0, "name": "from_json", "visibility": "public",
                   "inner": {"function": {"sig": {"inputs": [["json", {"borrowed_ref":
                       {"lifetime": null, "is_mutable": false, "type": {"primitive": "str"}}}]],
                       "output": {"resolved_path": {"path": "Result", "id": 94, "args":
                           {"angle_bracketed": {"args": [
                               {"type": {"resolved_path": {"path": "Spec", "id": 10, "args": null}}},
                               {"type": {"resolved_path": {"path": "Error", "id": 3, "args": null}}}],
                               "constraints": []}}}},
                       "is_c_variadic": false}, "generics": none, "header": rust, "has_body": true}}})),
            ("18", json!({"id": 18, "crate_id": 0, "name": "check", "visibility": "default",
                   "inner": {"function": {"sig": {"inputs": [], "output": null, "is_c_variadic": false},
                       "generics": none, "header": rust, "has_body": true}}})),
            ("20", json!({"id": 20, "crate_id": 0, "name": "LIMIT", "visibility": "public",
                   "inner": {"constant": {"type": {"primitive": "usize"},
                       "const": {"expr": "8", "value": "8usize", "is_literal": true}}}})),
            ("30", json!({"id": 30, "crate_id": 0, "name": "Missing", "visibility": "default",
                   "inner": {"variant": {"kind": {"struct": {"fields": [32], "has_stripped_fields": false}},
                                         "discriminant": null}}})),
            ("31", json!({"id": 31, "crate_id": 0, "name": "Empty", "visibility": "default",
                   "inner": {"variant": {"kind": "plain", "discriminant": null}}})),
            ("32", json!({"id": 32, "crate_id": 0, "name": "job", "visibility": "default",
                   "inner": {"struct_field": string}})),
        ]
        .into_iter()
        .map(|(id, item)| (id.to_owned(), item))
        .collect();
        json!({"root": 0, "format_version": 57, "index": index})
    }

    #[test]
    fn lists_what_a_user_can_name_under_its_public_path() {
        assert_eq!(
            listing(&sample()).unwrap(),
            [
                "impl Clone for demo::Spec",
                "impl Send for demo::Spec",
                "pub enum demo::Error",
                "pub field demo::Spec::name: String",
                "pub fn demo::Spec::from_json(json: &str) -> Result<Spec, Error>",
                "pub mod demo::util",
                "pub struct demo::Spec",
                "pub use demo::tonic = tonic",
                "pub variant demo::Error::Empty",
                "pub variant demo::Error::Missing { job: String }",
                "pub const demo::util::LIMIT: usize",
            ]
            .iter()
            .map(ToString::to_string)
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_document_without_an_index_is_an_error() {
        assert!(listing(&json!({"root": 0})).is_err());
    }
}
