//! `cargo xtask public-api [--check]`: each library crate's public items, one per line, in
//! `<crate>/public-api.txt`, so an API change shows in review as a change of that file.
//!
//! The items come from nightly rustdoc's JSON (`--output-format json`), read as plain JSON
//! ([`walk`]) rather than through `rustdoc-types`, whose format version must match the
//! nightly's exactly. With `--check`, nothing is written: a crate whose listing differs
//! fails, with the lines added and removed.

mod render;
mod walk;

use std::collections::BTreeSet;
use std::fs;

use crate::workspace;
use crate::workspace::Beside;

/// The library crates whose public API is listed: each one's directory (whose name is its
/// library's) and package name.
const CRATES: &[(&str, &str)] = &[
    ("cluster-proto", "cluster-proto"),
    ("cluster-spec", "cluster-spec"),
    ("device-filter", "device-filter"),
    ("cluster-resolver", "cluster-resolver"),
    ("grpc-guard", "grpc-guard"),
    ("metrics-endpoint", "metrics-endpoint"),
    ("remote-connect", "remote-connect"),
    ("failure-policy", "failure-policy"),
    ("cloud-notices", "cloud-notices"),
    ("launcher", "tfcluster-launcher"),
    ("elastic", "tfcluster-elastic"),
];

/// The listing file of each crate, in its directory.
const LISTING: &str = "public-api.txt";

pub(crate) fn run(check: bool) -> Result<(), String> {
    workspace::require_nightly("the public-API listing (rustdoc's JSON output)")?;
    document()?;
    let mut stale = Vec::new();
    for &(krate, _) in CRATES {
        let fresh = listing(krate)?;
        let file = workspace::root().join(krate).join(LISTING);
        if check {
            let committed = fs::read_to_string(&file).unwrap_or_default();
            if let Some(diff) = difference(&committed, &fresh) {
                stale.push(format!(
                    "{krate}/{LISTING} differs from the crate's API:\n{diff}"
                ));
            }
        } else {
            fs::write(&file, &fresh)
                .map_err(|e| format!("cannot write {}: {e}", file.display()))?;
            eprintln!("xtask: wrote {}", file.display());
        }
    }
    if stale.is_empty() {
        if check {
            eprintln!("xtask: the public-API listings are up to date");
        }
        Ok(())
    } else {
        Err(format!(
            "{}\nrun `cargo xtask public-api` and commit the listings",
            stale.join("\n")
        ))
    }
}

/// `cargo +nightly doc --no-deps --all-features` of every crate of [`CRATES`] with `flags`
/// for rustdoc: one run, so their dependencies are checked once (one `rustdoc -p` a crate
/// resolved each one's features apart, and checked what they share again for each), and
/// the same selection and features for the docs.rs build
/// ([`crate::features::docs_rs`]), which then checks nothing again.
pub(crate) fn nightly_doc(rustdoc_flags: &str) -> Result<(), String> {
    let mut command = Beside::Checks.cargo();
    command.args(["+nightly", "doc", "-q", "--no-deps", "--all-features"]);
    for (_, package) in CRATES {
        command.args(["-p", package]);
    }
    workspace::run(command.env("RUSTDOCFLAGS", rustdoc_flags))
}

/// rustdoc's JSON of every crate of [`CRATES`], in `target/beside/checks/doc/CRATE.json`.
fn document() -> Result<(), String> {
    nightly_doc("-Z unstable-options --output-format json")
}

/// The listing of the crate in directory `krate`: rustdoc's JSON of its library (all
/// features), walked.
fn listing(krate: &str) -> Result<String, String> {
    let path = Beside::Checks
        .dir()
        .join("doc")
        .join(format!("{}.json", krate.replace('-', "_")));
    let text =
        fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let doc: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{} is not JSON: {e}", path.display()))?;
    let lines = walk::listing(&doc).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(lines.iter().map(|line| format!("{line}\n")).collect())
}

/// The lines only `fresh` has (`+ `) and only `committed` has (`- `); `None` when the two
/// hold the same lines.
fn difference(committed: &str, fresh: &str) -> Option<String> {
    let old: BTreeSet<&str> = committed.lines().collect();
    let new: BTreeSet<&str> = fresh.lines().collect();
    let mut diff: Vec<String> = new.difference(&old).map(|l| format!("  + {l}")).collect();
    diff.extend(old.difference(&new).map(|l| format!("  - {l}")));
    (!diff.is_empty() || committed != fresh).then(|| {
        if diff.is_empty() {
            "  (the same items, in another order)".to_owned()
        } else {
            diff.join("\n")
        }
    })
}

#[cfg(test)]
mod tests {
    use super::difference;

    #[test]
    fn the_difference_names_added_and_removed_lines() {
        assert_eq!(difference("a\nb\n", "a\nb\n"), None);
        assert_eq!(
            difference("a\nb\n", "a\nc\n").as_deref(),
            Some("  + c\n  - b")
        );
        assert_eq!(difference("", "a\n").as_deref(), Some("  + a"));
    }
}
