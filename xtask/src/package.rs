//! `cargo xtask package`: every crate users depend on packaged as `cargo publish` would
//! package it, and built from the package's contents alone (cargo's verification: each
//! package's sources unpacked under `target/package`, the workspace's crates among them
//! through a local registry, nothing else of the repository: the proto files and generated
//! code must be inside the crate). And every other crate is `publish = false`. Part of the
//! test command; nothing is published.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::tally::{self, Suite};
use crate::workspace;

/// The crates that are published, in the order they depend on each other.
const PUBLISHED: [&str; 10] = [
    "cluster-proto",
    "cluster-spec",
    "device-filter",
    "cluster-resolver",
    "grpc-guard",
    "metrics-endpoint",
    "remote-connect",
    "tfcluster-launcher",
    "tfcluster-elastic",
    "tfcluster",
];

/// The suite's name in the tally and the floors file.
const SUITE: &str = "package: published crates";

/// One check per published crate (they are packaged and built together: one failure fails
/// them all), and one that the rest are `publish = false`.
pub(crate) fn suite() -> Suite {
    let mut suite = Suite::new(SUITE);
    let metadata = metadata();
    suite.record(
        "every other crate is publish = false",
        metadata
            .as_ref()
            .map_err(Clone::clone)
            .and_then(unpublished),
    );
    suite.record(
        "every published crate has the fields crates.io and docs.rs show",
        metadata.as_ref().map_err(Clone::clone).and_then(described),
    );
    if let Ok(metadata) = &metadata {
        forget_unpacked(metadata);
    }
    let mut command = Command::new("cargo");
    // Uncommitted files are packaged too: the check is of the working tree.
    command.args(["package", "--allow-dirty"]);
    for krate in PUBLISHED {
        command.args(["-p", krate]);
    }
    let outcome = match workspace::run_merged(&mut command) {
        Ok((_, true)) => Ok(()),
        Ok((out, false)) => Err(tail(&out)),
        Err(e) => Err(e),
    };
    for krate in PUBLISHED {
        suite.record(&format!("cargo package -p {krate}"), outcome.clone());
    }
    suite
}

/// Forgets what an earlier `cargo package` made of our crates from its local registry: the
/// copies it unpacked (`$CARGO_HOME/registry/src/-HASH/NAME-VERSION`) and what it built of
/// them (`cargo clean -p NAME`). Cargo takes a registry's version as never changing: it
/// unpacks it only when no copy is there and rebuilds it only by its version, so a crate
/// changed under the same version would build its dependents against the old one.
/// crates.io's copies (`index.crates.io-*`) are never touched.
fn forget_unpacked(metadata: &Value) {
    let home = std::env::var_os("CARGO_HOME").map_or_else(
        || PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cargo"),
        PathBuf::from,
    );
    let ours: Vec<(&str, &str)> = packages(metadata)
        .filter_map(|p| Some((p["name"].as_str()?, p["version"].as_str()?)))
        .filter(|(name, _)| PUBLISHED.contains(name))
        .collect();
    let remove = |path: &Path| {
        if let Err(e) = std::fs::remove_dir_all(path) {
            eprintln!("xtask: cannot remove {}: {e}", path.display());
        }
    };
    if let Ok(registries) = std::fs::read_dir(home.join("registry/src")) {
        for registry in registries.flatten() {
            if !registry.file_name().to_string_lossy().starts_with('-') {
                continue;
            }
            for (name, version) in &ours {
                let unpacked = registry.path().join(format!("{name}-{version}"));
                if unpacked.exists() {
                    remove(&unpacked);
                }
            }
        }
    }
    // What was built of them from the local registry is taken as fresh by its version
    // alone: cleaned (their workspace builds with it; a fresh clone has none anyway).
    let mut clean = Command::new("cargo");
    clean.arg("clean").arg("-q");
    for (name, _) in &ours {
        clean.args(["-p", name]);
    }
    if let Err(e) = clean.current_dir(workspace::root()).status() {
        eprintln!("xtask: cannot run cargo clean: {e}");
    }
}

/// `cargo xtask package`: the check alone.
pub(crate) fn run() -> Result<(), String> {
    tally::alone([suite()])
}

/// The workspace's packages as `cargo metadata` describes them.
fn metadata() -> Result<Value, String> {
    let out = Command::new("cargo")
        .args(["metadata", "--no-deps", "--format-version", "1"])
        .current_dir(workspace::root())
        .output()
        .map_err(|e| format!("cannot run cargo metadata: {e}"))?;
    serde_json::from_slice(&out.stdout).map_err(|e| format!("cargo metadata printed no JSON: {e}"))
}

/// The workspace's `rust-version`, as cargo reads it for `tfcluster` (every crate takes the
/// workspace's).
pub(crate) fn rust_version() -> Result<String, String> {
    let metadata = metadata()?;
    packages(&metadata)
        .find(|p| p["name"] == "tfcluster")
        .and_then(|p| p["rust_version"].as_str())
        .map(str::to_owned)
        .ok_or_else(|| "cargo metadata gives tfcluster no rust-version".to_owned())
}

/// The fields a crate's crates.io page and docs.rs link from; `cargo publish` needs only
/// some of them, so a missing one would be published unnoticed.
const FIELDS: [&str; 9] = [
    "description",
    "license",
    "repository",
    "homepage",
    "documentation",
    "readme",
    "keywords",
    "categories",
    "rust_version",
];

/// Checks that every crate of [`PUBLISHED`] has every one of [`FIELDS`], not empty.
fn described(metadata: &Value) -> Result<(), String> {
    let missing: Vec<String> = packages(metadata)
        .filter(|p| p["name"].as_str().is_some_and(|n| PUBLISHED.contains(&n)))
        .flat_map(|p| {
            FIELDS.iter().filter_map(move |field| {
                let empty = match &p[*field] {
                    Value::Null => true,
                    Value::String(s) => s.is_empty(),
                    Value::Array(a) => a.is_empty(),
                    _ => false,
                };
                empty.then(|| format!("{}: {field}", p["name"].as_str().unwrap_or("?")))
            })
        })
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!("missing in Cargo.toml: {}", missing.join(", ")))
    }
}

/// Every package of the metadata.
fn packages(metadata: &Value) -> impl Iterator<Item = &Value> {
    metadata["packages"].as_array().into_iter().flatten()
}

/// Checks that every workspace member but [`PUBLISHED`] says `publish = false`.
fn unpublished(metadata: &Value) -> Result<(), String> {
    let open: Vec<&str> = packages(metadata)
        .filter(|p| p["publish"] != serde_json::json!([]))
        .filter_map(|p| p["name"].as_str())
        .filter(|name| !PUBLISHED.contains(name))
        .collect();
    if open.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} may be published: give each `publish = false`, or list it in PUBLISHED",
            open.join(", ")
        ))
    }
}

/// The end of cargo's output, where it says what failed.
fn tail(out: &str) -> String {
    let lines: Vec<&str> = out.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}
