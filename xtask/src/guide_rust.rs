//! The guide's Rust page made a crate, so its code and its dependencies are compiled, not
//! just read: `cargo xtask codegen` writes `test-support/guide-rust/` from
//! `docs/guide/rust.md` (its `toml` block's dependencies, paths made relative to the crate,
//! and its `rust` blocks in order in one async `main`: later blocks use the earlier ones'
//! `ctx`, `w0`, `a`), `--check` fails when the committed crate differs from the page, and
//! the test command checks the crate alone with clippy `-D warnings` (a block that does not
//! compile, an unused import, a package, path or feature the toml gets wrong all fail it).
//! It is never run: it needs a cluster.

use std::fs;
use std::path::Path;

use pulldown_cmark::{CodeBlockKind, Event, Tag, TagEnd};

use crate::workspace::Beside;
use crate::{doc_links, workspace};

/// The page, relative to the workspace root.
const PAGE: &str = "docs/guide/rust.md";
/// The crate made of it, relative to the workspace root.
const CRATE: &str = "test-support/guide-rust";
/// How the page's paths start (it tells users to check this repository out beside their
/// crate) and what they become in the crate, two levels below the root.
const PAGE_PATHS: &str = "\"../tfcluster/";
const CRATE_PATHS: &str = "\"../../";

/// Clippy on the crate alone (`-D warnings`): cargo then turns on only the features the
/// page's toml asks for, where the workspace's run would unify them with every other
/// crate's (the page once compiled there without the `watch` feature it needs).
pub(crate) fn clippy_alone() -> Result<(), String> {
    workspace::run(Beside::Checks.cargo().args([
        "clippy",
        "-p",
        "guide-rust",
        "--",
        "-D",
        "warnings",
    ]))
}

/// Writes the crate from the page, or with `check` fails naming each file that differs.
pub(crate) fn run(check: bool) -> Result<(), String> {
    let root = workspace::root();
    let page =
        fs::read_to_string(root.join(PAGE)).map_err(|e| format!("cannot read {PAGE}: {e}"))?;
    let files = generate(&page)?;
    let mut stale = Vec::new();
    for (name, text) in &files {
        let path = root.join(CRATE).join(name);
        if check {
            if fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
                stale.push(format!("{CRATE}/{name}"));
            }
        } else {
            write(&path, text)?;
        }
    }
    if stale.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} differ from {PAGE}: run `cargo xtask codegen`",
            stale.join(", ")
        ))
    }
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// The crate's files (relative to it, and their text) from the page's text.
fn generate(page: &str) -> Result<Vec<(&'static str, String)>, String> {
    let tomls = fenced(page, "toml");
    let [(toml_line, toml)] = tomls.as_slice() else {
        return Err(format!(
            "{PAGE}: expected one toml block (the dependencies), found {}",
            tomls.len()
        ));
    };
    let rust = fenced(page, "rust");
    if rust.is_empty() {
        return Err(format!("{PAGE}: no rust block"));
    }
    Ok(vec![
        (
            "Cargo.toml",
            manifest(&format!("{PAGE}:{toml_line}"), toml)?,
        ),
        ("src/main.rs", main(&rust)),
    ])
}

/// Every fenced block of `text` whose info string is `lang`: its fence's line number (as
/// the guide suite names its examples) and its text.
fn fenced(text: &str, lang: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut block: Option<(usize, String)> = None;
    for (event, range) in doc_links::parser(text).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info))) if &*info == lang => {
                let line = text[..range.start].matches('\n').count() + 1;
                block = Some((line, String::new()));
            }
            Event::Text(code) => {
                if let Some((_, body)) = block.as_mut() {
                    body.push_str(&code);
                }
            }
            Event::End(TagEnd::CodeBlock) => found.extend(block.take()),
            _ => {}
        }
    }
    found
}

/// The crate's manifest: the page's `[dependencies]` with each path made the crate's, and
/// tokio for the async main.
fn manifest(place: &str, toml: &str) -> Result<String, String> {
    if toml.lines().next() != Some("[dependencies]") {
        return Err(format!(
            "{place}: the toml block should start with [dependencies]"
        ));
    }
    let mut dependencies = String::new();
    for line in toml.lines() {
        if line.contains("path = ") && !line.contains(PAGE_PATHS) {
            return Err(format!(
                "{place}: every path should start with {PAGE_PATHS} (the checkout beside the \
                 user's crate): {line}"
            ));
        }
        dependencies.push_str(&line.replace(PAGE_PATHS, CRATE_PATHS));
        dependencies.push('\n');
    }
    Ok(format!(
        "# Made by `cargo xtask codegen` from {PAGE} (its toml block; paths made this crate's)
# and checked against it by `codegen --check`: edit the page, not this file.
[package]
name = \"guide-rust\"
description = \"Test support: the Rust guide page's code and dependencies, checked by clippy alone.\"
version = \"0.0.0\"
edition.workspace = true
rust-version.workspace = true
license.workspace = true
publish = false

[[bin]]
name = \"guide-rust\"
path = \"src/main.rs\"
# Checked, never run: it needs a cluster.
test = false
doc = false

{dependencies}# The page's blocks run in an async main.
tokio = {{ workspace = true, features = [\"macros\", \"rt-multi-thread\"] }}
"
    ))
}

/// One async `main` running `blocks` in order; their `use` lines first, one name each and
/// each once (two blocks may import the same name, which one scope cannot).
fn main(blocks: &[(usize, String)]) -> String {
    let mut uses: Vec<String> = Vec::new();
    let mut body = String::new();
    for (line, block) in blocks {
        body.push_str(&format!("\n    // {PAGE}:{line}\n"));
        let (imports, code): (Vec<&str>, Vec<&str>) =
            block.lines().partition(|code| code.starts_with("use "));
        for one in imports.into_iter().flat_map(single_uses) {
            if !uses.contains(&one) {
                uses.push(one);
            }
        }
        for code in code.into_iter().skip_while(|code| code.is_empty()) {
            if code.is_empty() {
                body.push('\n');
            } else {
                body.push_str(&format!("    {code}\n"));
            }
        }
    }
    let uses: String = uses.iter().map(|u| format!("    {u}\n")).collect();
    format!(
        "//! Made by `cargo xtask codegen` from {PAGE}: its rust blocks, in order, in one async
//! main. Edit the page, not this file.

// The page's layout, not rustfmt's: the crate is the page.
#[rustfmt::skip]
#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {{
{uses}{body}
    Ok(())
}}
"
    )
}

/// `use a::{b, c};` as `use a::b;` and `use a::c;` (`self` as `use a;`); any other line
/// as it is.
fn single_uses(line: &str) -> Vec<String> {
    let Some((path, names)) = line
        .strip_prefix("use ")
        .and_then(|rest| rest.strip_suffix("};"))
        .and_then(|rest| rest.split_once("::{"))
    else {
        return vec![line.to_owned()];
    };
    names
        .split(',')
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .map(|name| match name {
            "self" => format!("use {path};"),
            name => format!("use {path}::{name};"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_committed_crate_is_the_pages() {
        run(true).unwrap();
    }

    #[test]
    fn a_path_outside_the_checkout_is_refused_with_its_line() {
        let err = manifest("p:3", "[dependencies]\nx = { path = \"../x\" }\n").unwrap_err();
        assert!(err.contains("p:3") && err.contains("x = { path"), "{err}");
        let err = manifest("p:3", "x = 1\n").unwrap_err();
        assert!(err.contains("[dependencies]"), "{err}");
    }

    #[test]
    fn imports_are_split_and_kept_once() {
        let code = main(&[
            (1, "use a::{B, self};\nlet x = 1;\n".to_owned()),
            (9, "use a::{B, C};\nuse d::E;\n\nx;\n".to_owned()),
        ]);
        let uses: Vec<&str> = code
            .lines()
            .filter(|l| l.trim().starts_with("use "))
            .collect();
        assert_eq!(
            uses,
            [
                "    use a::B;",
                "    use a;",
                "    use a::C;",
                "    use d::E;"
            ]
        );
        assert!(
            code.contains("    // docs/guide/rust.md:9\n    x;\n"),
            "{code}"
        );
    }
}
