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

/// One check per published crate, passed when cargo verified it (built it from its package)
/// and went on, and one that the rest are `publish = false`.
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
    let outcomes = match workspace::run_merged(&mut command) {
        Ok((out, succeeded)) => verified(&out, succeeded),
        Err(e) => PUBLISHED.iter().map(|k| (*k, Err(e.clone()))).collect(),
    };
    for (krate, outcome) in outcomes {
        suite.record(&format!("cargo package -p {krate}"), outcome);
    }
    suite
}

/// Each published crate's outcome, read from one `cargo package` run's output: cargo
/// verifies the crates one after the other (`Verifying NAME vX.Y.Z`), and stops at the first
/// that fails. A crate passed when its verification began and the run went on past it (to
/// the next crate's, or to its successful end); the crate being verified when the run failed
/// failed with the end of the output; a crate never verified failed too, saying so.
fn verified(output: &str, succeeded: bool) -> Vec<(&'static str, Result<(), String>)> {
    let started: Vec<&str> = output
        .lines()
        .filter_map(|line| line.trim().strip_prefix("Verifying "))
        .filter_map(|rest| rest.split_once(" v").map(|(name, _)| name))
        .collect();
    PUBLISHED
        .iter()
        .map(|&krate| {
            let at = started.iter().position(|&name| name == krate);
            let outcome = match at {
                None => Err(format!(
                    "cargo package never verified it (no `Verifying {krate}` line){}",
                    if succeeded {
                        String::new()
                    } else {
                        format!(":\n{}", tail(output))
                    }
                )),
                Some(at) if !succeeded && at + 1 == started.len() => Err(tail(output)),
                Some(_) => Ok(()),
            };
            (krate, outcome)
        })
        .collect()
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

#[cfg(test)]
mod tests {
    use super::{PUBLISHED, verified};

    /// `cargo package`'s lines for the first `n` crates of [`PUBLISHED`].
    fn run(n: usize) -> String {
        PUBLISHED[..n]
            .iter()
            .map(|k| format!("   Verifying {k} v0.1.0 (/w/{k})\n   Compiling {k} v0.1.0\n"))
            .collect()
    }

    #[test]
    fn each_crate_counts_by_its_own_verification() {
        let all = verified(&run(PUBLISHED.len()), true);
        assert!(all.iter().all(|(_, o)| o.is_ok()), "{all:?}");
        // The third fails: two passed, it failed with the output's end, the rest never ran.
        let out = run(3) + "error[E0425]: cannot find value `x`\n";
        let some = verified(&out, false);
        let failed: Vec<&str> = some
            .iter()
            .filter(|(_, o)| o.is_err())
            .map(|(k, _)| *k)
            .collect();
        assert_eq!(failed, PUBLISHED[2..]);
        assert!(some[2].1.as_ref().unwrap_err().contains("E0425"));
        assert!(
            some[3]
                .1
                .as_ref()
                .unwrap_err()
                .starts_with("cargo package never verified it")
        );
        // A run that says it succeeded but never named a crate passes none.
        assert!(verified("", true).iter().all(|(_, o)| o.is_err()));
    }
}
