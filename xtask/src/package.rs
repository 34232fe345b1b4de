//! `cargo xtask package`: every crate users depend on packaged as `cargo publish` would
//! package it, and compiled from the packages' contents alone: each `.crate` unpacked under
//! `target/package/unpacked`, those copies made a workspace of their own (each crate's
//! dependencies on the others patched to their packaged copies, nothing else of the
//! repository: the proto files and generated code must be inside the crate), and checked
//! with every feature in one `cargo check` (beside a copy of the feature superset, so the
//! dependencies are those the per-feature runs and the docs checked in the same directory).
//! And every other crate is `publish = false`. Part of the test command; nothing is
//! published.
//!
//! Why not cargo's own verification (`cargo package` without `--no-verify`): it builds each
//! crate in turn, each with its own features, so the shared dependencies (tokio, tonic, prost,
//! rustls) were compiled up to ten times over: 9 of the test command's minutes on CI's two
//! cores. What it proved beyond this check, that each crate's own feature set compiles, the
//! per-feature clippy runs prove from the sources ([`crate::features`]).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::tally::{self, Suite};
use crate::workspace::Beside;
use crate::{feature_superset, workspace};

/// The crates that are published, in the order they depend on each other.
const PUBLISHED: [&str; 12] = [
    "cluster-proto",
    "cluster-spec",
    "device-filter",
    "cluster-resolver",
    "grpc-guard",
    "metrics-endpoint",
    "remote-connect",
    "failure-policy",
    "cloud-notices",
    "tfcluster-launcher",
    "tfcluster-elastic",
    "tfcluster",
];

/// The suite's name in the tally and the floors file.
pub(crate) const SUITE: &str = "package: published crates";

/// One check per published crate, passed when its package's copy compiled, and one that the
/// rest are `publish = false`.
pub(crate) fn suite() -> Suite {
    let mut suite = Suite::new(SUITE);
    let metadata = metadata(Beside::Checks.cargo());
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
    let outcomes = match metadata.and_then(|metadata| unpacked(&metadata)) {
        Ok((copies, target)) => checked(&copies, &target),
        Err(e) => PUBLISHED.iter().map(|k| (*k, Err(e.clone()))).collect(),
    };
    for (krate, outcome) in outcomes {
        suite.record(&format!("cargo package -p {krate}"), outcome);
    }
    suite
}

/// Packages every published crate (`cargo package --no-verify`: what `cargo publish` would
/// upload) and unpacks each into a fresh `target/package/unpacked`, under a workspace
/// manifest of those copies alone that patches crates.io's name of each to its copy and the
/// repository's `Cargo.lock` (the versions the tests ran with). Returns that directory and
/// the workspace's target directory.
fn unpacked(metadata: &Value) -> Result<(PathBuf, PathBuf), String> {
    let mut command = Beside::Checks.cargo();
    // Uncommitted files are packaged too: the check is of the working tree.
    command.args(["package", "--allow-dirty", "--no-verify"]);
    for krate in PUBLISHED {
        command.args(["-p", krate]);
    }
    workspace::run(&mut command)?;
    let target = PathBuf::from(
        metadata["target_directory"]
            .as_str()
            .ok_or("cargo metadata names no target directory")?,
    );
    let dir = target.join("package/unpacked");
    if dir.exists() {
        std::fs::remove_dir_all(&dir)
            .map_err(|e| format!("cannot remove {}: {e}", dir.display()))?;
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let versions: Vec<(&str, &str)> = packages(metadata)
        .filter_map(|p| Some((p["name"].as_str()?, p["version"].as_str()?)))
        .filter(|(name, _)| PUBLISHED.contains(name))
        .collect();
    let mut members = Vec::new();
    let mut patches = Vec::new();
    for (name, version) in &versions {
        let copy = format!("{name}-{version}");
        let archive = target.join("package").join(format!("{copy}.crate"));
        // `-m`: the files get this moment as their time, so the check never takes an earlier
        // run's build of a changed file as fresh.
        workspace::run(
            Command::new("tar")
                .arg("-xzmf")
                .arg(&archive)
                .arg("-C")
                .arg(&dir),
        )?;
        members.push(format!("{copy:?}"));
        patches.push(format!("{name} = {{ path = {copy:?} }}"));
    }
    // The dependencies with the features every other check of the directory asked for, so
    // this check finds them checked (xtask/src/feature_superset.rs).
    feature_superset::copy_to(&dir.join(feature_superset::PACKAGE))?;
    members.push(format!("{:?}", feature_superset::PACKAGE));
    let root = workspace::root().join("Cargo.toml");
    let root = std::fs::read_to_string(&root)
        .map_err(|e| format!("cannot read {}: {e}", root.display()))?;
    let manifest = format!(
        "# The published crates as packaged (`cargo xtask package`): made and removed by it.\n\
         [workspace]\nresolver = \"3\"\nmembers = [{}]\n\n[patch.crates-io]\n{}\n\n{}",
        members.join(", "),
        patches.join("\n"),
        profiles(&root)
    );
    let manifest_path = dir.join("Cargo.toml");
    std::fs::write(&manifest_path, manifest)
        .map_err(|e| format!("cannot write {}: {e}", manifest_path.display()))?;
    let lock = workspace::root().join("Cargo.lock");
    std::fs::copy(&lock, dir.join("Cargo.lock"))
        .map_err(|e| format!("cannot copy {} into {}: {e}", lock.display(), dir.display()))?;
    Ok((dir, target))
}

/// The `[profile...]` tables of the workspace's `manifest`, for the copies' workspace: a
/// dependency checked under another profile is another unit, which cargo would check again.
fn profiles(manifest: &str) -> String {
    let mut in_profile = false;
    manifest
        .lines()
        .filter(|line| {
            if line.starts_with('[') {
                in_profile = line.starts_with("[profile.");
            }
            in_profile
        })
        .map(|line| format!("{line}\n"))
        .collect()
}

/// `cargo check --all-features` of the packaged copies in `dir`, in target directory `target`
/// (the checks', where `cargo doc` checked the dependencies before), and each
/// crate's outcome: passed when its targets compiled with no error; failed with its errors,
/// or, when it had none, because a crate it needs failed (`--keep-going` checks the rest).
fn checked(dir: &Path, target: &Path) -> Vec<(&'static str, Result<(), String>)> {
    let mut command = Command::new("cargo");
    command
        .args(["check", "--workspace", "--all-features", "--keep-going"])
        .arg("--message-format=json")
        .env("CARGO_TARGET_DIR", target)
        .current_dir(dir);
    match workspace::run_captured(&mut command) {
        Ok((output, _)) => compiled(&output),
        Err(e) => PUBLISHED.iter().map(|k| (*k, Err(e.clone()))).collect(),
    }
}

/// Each published crate's outcome read from `cargo check --message-format=json`'s `output`:
/// its `compiler-artifact` messages, and its `compiler-message` errors.
fn compiled(output: &str) -> Vec<(&'static str, Result<(), String>)> {
    let messages: Vec<Value> = output
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    // A copy's package id is `path+file:///DIR/NAME-VERSION#NAME@VERSION` (cargo writes the
    // name because the directory is not it): the name is between `#` and `@`.
    let of = |m: &Value, krate: &str| {
        m["package_id"]
            .as_str()
            .and_then(|id| id.rsplit_once('#'))
            .and_then(|(_, tail)| tail.split_once('@'))
            .is_some_and(|(name, _)| name == krate)
    };
    // What cargo printed besides JSON: a build script's failure, a resolution error.
    let text: String = output
        .lines()
        .filter(|line| !line.starts_with('{'))
        .collect::<Vec<_>>()
        .join("\n");
    PUBLISHED
        .iter()
        .map(|&krate| {
            let errors: Vec<&str> = messages
                .iter()
                .filter(|m| m["reason"] == "compiler-message" && of(m, krate))
                .filter(|m| m["message"]["level"] == "error")
                .filter_map(|m| m["message"]["rendered"].as_str())
                .collect();
            let built = messages
                .iter()
                .any(|m| m["reason"] == "compiler-artifact" && of(m, krate));
            let outcome = if !errors.is_empty() {
                Err(errors.join("\n"))
            } else if built {
                Ok(())
            } else {
                Err(format!(
                    "its package's copy was not checked (a crate it needs failed, or cargo \
                     stopped):\n{}",
                    tail(&text)
                ))
            };
            (krate, outcome)
        })
        .collect()
}

/// `cargo xtask package`: the check alone.
pub(crate) fn run() -> Result<(), String> {
    tally::alone([suite()])
}

/// The workspace's packages as `cargo metadata`, run by `cargo`, describes them (its
/// `target_directory` is `cargo`'s).
fn metadata(mut cargo: Command) -> Result<Value, String> {
    workspace::json(cargo.args(["metadata", "--no-deps", "--format-version", "1"]))
}

/// The workspace's `rust-version`, as cargo reads it for `tfcluster` (every crate takes the
/// workspace's).
pub(crate) fn rust_version() -> Result<String, String> {
    // Not through the checks' directory: from the tests' thread, that would say the tests
    // wait for the checks ([`Beside::building_in`]).
    let metadata = metadata(Command::new("cargo"))?;
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
    use super::{PUBLISHED, compiled, profiles};

    #[test]
    fn the_profiles_are_every_profile_table_and_nothing_else() {
        let manifest = "[workspace]\nmembers = []\n\n[profile.dev]\ndebug = 1\n# why\n\n\
                        [workspace.lints.rust]\nx = 1\n[profile.dev.package.a]\nopt-level = 3\n";
        assert_eq!(
            profiles(manifest),
            "[profile.dev]\ndebug = 1\n# why\n\n[profile.dev.package.a]\nopt-level = 3\n"
        );
    }

    /// cargo's JSON line for an artifact of `krate`'s packaged copy.
    fn artifact(krate: &str) -> String {
        format!(
            r#"{{"reason":"compiler-artifact","package_id":"path+file:///t/package/unpacked/{krate}-0.1.0#{krate}@0.1.0","target":{{"kind":["lib"]}}}}"#
        )
    }

    #[test]
    fn each_crate_counts_by_its_own_artifacts_and_errors() {
        let all: String = PUBLISHED.iter().map(|k| artifact(k) + "\n").collect();
        let outcomes = compiled(&all);
        assert!(outcomes.iter().all(|(_, o)| o.is_ok()), "{outcomes:?}");
        // The third has an error: the two before it passed, it failed with its error, and
        // the rest were never checked.
        let error = r#"{"reason":"compiler-message","package_id":"path+file:///t/package/unpacked/device-filter-0.1.0#device-filter@0.1.0","message":{"level":"error","rendered":"error[E0583]: file not found for module `tf`"}}"#;
        let some = format!(
            "{}\n{}\n{error}\nerror: could not compile `device-filter`\n",
            artifact(PUBLISHED[0]),
            artifact(PUBLISHED[1])
        );
        let outcomes = compiled(&some);
        let failed: Vec<&str> = outcomes
            .iter()
            .filter(|(_, o)| o.is_err())
            .map(|(k, _)| *k)
            .collect();
        assert_eq!(failed, PUBLISHED[2..]);
        assert!(outcomes[2].1.as_ref().unwrap_err().contains("E0583"));
        assert!(
            outcomes[3]
                .1
                .as_ref()
                .unwrap_err()
                .starts_with("its package's copy was not checked")
        );
        // A run that built nothing passes none.
        assert!(compiled("").iter().all(|(_, o)| o.is_err()));
    }
}
