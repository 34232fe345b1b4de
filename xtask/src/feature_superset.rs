//! The `feature-superset` crate (`xtask/feature-superset`): empty, depending on every
//! registry crate the workspace's libraries and binaries compile, each with the features the
//! whole workspace turns on. `cargo xtask codegen` writes its manifest from cargo's own plan
//! of `cargo check --workspace --all-features` (nightly's `--unit-graph`); `--check` fails
//! when a dependency, its version or its features changed without it.
//!
//! Why: each per-feature clippy run ([`crate::features`]) selects a few crates, and cargo
//! unifies the dependencies' features over the crates selected, so each run checked tokio,
//! hyper, kube and the rest again for its own feature set (637 units over the 9 runs), and
//! the package suite's check (whose copies had no `[profile.dev]`) checked them all again.
//! With this crate in every run, in the docs' `--workspace` and beside the packaged copies,
//! every check of the directory asks the dependencies for the same features, and cargo
//! checks each once: in one target directory, from empty, in the checks thread's order, the
//! 9 runs and `cargo doc` took 469 CPU-seconds instead of 863, the package check 50 instead
//! of 185.
//!
//! Our crates still build with exactly their own features: a dependency compiled with more
//! features gives a crate nothing it does not name in its own manifest, except those extra
//! features of a dependency it does name. That case (a crate using a feature of tokio it
//! forgot to declare) these checks no longer catch; the builds made alone do, as a user's
//! build would: the CLI (`tfcluster`, default features) static for musl, the wheel's module,
//! and the guide page's crate.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;
use std::process::Command;

use crate::{codegen, workspace};

/// The crate's name, as the runs select it.
pub(crate) const PACKAGE: &str = "feature-superset";

/// Its directory, relative to the workspace root.
const DIR: &str = "xtask/feature-superset";

/// The crate's files, relative to its directory.
const FILES: [&str; 2] = ["Cargo.toml", "src/lib.rs"];

/// A copy of the crate in `dir` (under the packaged copies' workspace, [`crate::package`]),
/// so their check asks the dependencies for the features the docs' check did.
pub(crate) fn copy_to(dir: &Path) -> Result<(), String> {
    let from = workspace::root().join(DIR);
    for file in FILES {
        let to = dir.join(file);
        if let Some(parent) = to.parent() {
            fs::create_dir_all(parent)
                .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        fs::copy(from.join(file), &to).map_err(|e| {
            format!(
                "cannot copy {} to {}: {e}",
                from.join(file).display(),
                to.display()
            )
        })?;
    }
    Ok(())
}

/// A registry crate at one version: its name and version.
type Release = (String, String);

/// Which side of cargo's resolution a unit is on: the code the workspace links (the
/// `--target`), or what its build scripts and proc-macros run (the host). Cargo resolves
/// their features apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Side {
    Target,
    Host,
}

/// Each crate's features on each side.
type Features = BTreeMap<(Side, Release), BTreeSet<String>>;

/// Writes the manifest, or with `check` fails if the committed one differs.
pub(crate) fn run(check: bool) -> Result<(), String> {
    workspace::require_nightly("the feature superset's manifest (cargo's --unit-graph)")?;
    codegen::write_or_check(
        &workspace::root().join(DIR).join("Cargo.toml"),
        manifest(&superset()?).as_bytes(),
        check,
        "the workspace's dependencies or their features changed",
    )
}

/// What the libraries and binaries of the whole workspace (`check --workspace
/// --all-features`) ask of each crate, less the crates the tests' build (`test --workspace
/// --all-features`) never compiles on that side: those are pyo3's, which only the Python
/// module's `cdylib` needs, and the tests' build, which has this crate among its members,
/// would compile them for it alone.
fn superset() -> Result<Features, String> {
    let host = workspace::host_triple()?;
    let tests = planned("test", &host)?;
    let mut libraries = planned("check", &host)?;
    libraries.retain(|key, _| tests.contains_key(key));
    Ok(libraries)
}

/// Cargo's plan of `cargo +nightly COMMAND --workspace --all-features --target host`,
/// without this crate: every registry crate's library units and their features.
fn planned(command: &str, host: &str) -> Result<Features, String> {
    let graph = workspace::json(
        Command::new("cargo")
            .args(["+nightly", command, "--workspace", "--exclude", PACKAGE])
            .args(["--all-features", "--locked", "--target", host])
            .args(["--unit-graph", "-Z", "unstable-options"]),
    )?;
    features(&graph)
}

/// The registry crates' library units of `graph` (planned with an explicit `--target`, so a
/// host unit is the one without a platform), with their features.
fn features(graph: &serde_json::Value) -> Result<Features, String> {
    let units = graph["units"]
        .as_array()
        .ok_or("cargo's unit graph has no units")?;
    let mut features = Features::new();
    for unit in units {
        let id = unit["pkg_id"].as_str().ok_or("a unit without a pkg_id")?;
        let Some(release) = registry_release(id) else {
            continue;
        };
        let kinds = unit["target"]["kind"]
            .as_array()
            .ok_or("a unit without kinds")?;
        if !kinds
            .iter()
            .any(|k| k == "lib" || k == "rlib" || k == "proc-macro")
        {
            continue;
        }
        let side = if unit["platform"].is_null() {
            Side::Host
        } else {
            Side::Target
        };
        let names = unit["features"]
            .as_array()
            .ok_or("a unit without features")?;
        features
            .entry((side, release))
            .or_default()
            .extend(names.iter().filter_map(|f| f.as_str()).map(str::to_owned));
    }
    Ok(features)
}

/// `registry+URL#name@version` as (name, version); `None` for our own crates (`path+`).
fn registry_release(id: &str) -> Option<Release> {
    let (_, release) = id.strip_prefix("registry+")?.rsplit_once('#')?;
    let (name, version) = release.split_once('@')?;
    Some((name.to_owned(), version.to_owned()))
}

/// The manifest: the target side as `[dependencies]`, the host side as
/// `[build-dependencies]` (cargo unifies their features with the host side's though the crate
/// has no build script, and compiles only those another crate needs).
fn manifest(features: &Features) -> String {
    format!(
        "# Written by `cargo xtask codegen` (xtask/src/feature_superset.rs says why): do not edit.\n\
         [package]\nname = \"{PACKAGE}\"\nversion = \"0.0.0\"\nedition = \"2024\"\n\
         publish = false\n\n# Nothing to test.\n[lib]\ntest = false\ndoctest = false\n\n\
         [dependencies]\n{}\n[build-dependencies]\n{}",
        table(features, Side::Target),
        table(features, Side::Host)
    )
}

/// One line per crate of `side`, each version its own key, pinned to it.
fn table(features: &Features, side: Side) -> String {
    features
        .iter()
        .filter(|((of, _), _)| *of == side)
        .map(|((_, (name, version)), features)| {
            let listed: Vec<String> = features
                .iter()
                .filter(|f| *f != "default")
                .map(|f| format!("{f:?}"))
                .collect();
            format!(
                "{name}-{} = {{ package = \"{name}\", version = \"={version}\", \
                 default-features = {}, features = [{}] }}\n",
                version.replace(['.', '+'], "_"),
                features.contains("default"),
                listed.join(", ")
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_ids_name_a_release_and_path_ids_none() {
        assert_eq!(
            registry_release("registry+https://github.com/rust-lang/crates.io-index#syn@2.0.119"),
            Some(("syn".to_owned(), "2.0.119".to_owned()))
        );
        assert_eq!(
            registry_release("path+file:///work/main/cluster-proto#0.1.0"),
            None
        );
    }

    #[test]
    fn each_side_lists_its_features_and_default_as_the_flag() {
        let graph = serde_json::json!({"units": [
            {"pkg_id": "registry+https://x#syn@2.0.1", "target": {"kind": ["lib"]},
             "platform": "x86_64-unknown-linux-gnu", "features": ["default", "full"]},
            {"pkg_id": "registry+https://x#syn@2.0.1", "target": {"kind": ["lib"]},
             "platform": null, "features": ["visit"]},
            {"pkg_id": "registry+https://x#syn@2.0.1", "target": {"kind": ["custom-build"]},
             "platform": null, "features": ["other"]},
            {"pkg_id": "path+file:///w/a#0.1.0", "target": {"kind": ["lib"]},
             "platform": "x86_64-unknown-linux-gnu", "features": []},
        ]});
        let text = manifest(&features(&graph).unwrap());
        assert!(text.contains(
            "[dependencies]\nsyn-2_0_1 = { package = \"syn\", version = \"=2.0.1\", \
             default-features = true, features = [\"full\"] }\n"
        ));
        assert!(text.contains(
            "[build-dependencies]\nsyn-2_0_1 = { package = \"syn\", version = \"=2.0.1\", \
             default-features = false, features = [\"visit\"] }\n"
        ));
    }
}
