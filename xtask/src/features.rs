//! Each crate with cargo features, its library and binaries checked with no features and with
//! each feature on its own, so a feature combination that stops compiling (an item used under
//! the wrong `cfg`, an import only one feature needs) fails here rather than in a user's
//! build. The rest of `cargo xtask test` runs with `--all-features`, which hides such
//! breakage.
//!
//! And the tests of what a feature's absence changes, which `--all-features` never runs: a
//! chosen few, as each such run compiles the crate and its dependencies once more.
//!
//! And the docs as docs.rs builds them (`--cfg docsrs`, nightly), so every gated item shows the
//! feature that enables it.

use std::process::Command;

use crate::tally::{self, Suite};
use crate::workspace::Beside;
use crate::{feature_superset, public_api, workspace};

/// Every crate with cargo features, checked with no features and with each feature alone
/// (a unit test holds this to the crates' manifests), in as few cargo runs as keep them
/// apart: one run compiles each selected crate once, with the features every selected crate
/// asks of it, so crates share a run only when none of them turns on a feature of another.
/// (The dependencies' features are the same in every run: [`feature_superset`].)
/// `(crate, "")` is the crate without features; for tfcluster and tfcluster-python, whose
/// default is `kubernetes`, the build without Kubernetes (and `gce` is gce without it).
const RUNS: &[&[(&str, &str)]] = &[
    &[
        ("cluster-proto", ""),
        ("cluster-resolver", ""),
        ("grpc-guard", ""),
    ],
    &[
        ("cluster-proto", "grpc"),
        ("grpc-guard", "tls"),
        // tfcluster-python's `kubernetes` is cluster-resolver's `k8s-openapi-earliest`.
        // cluster-resolver's `kubernetes` alone names no Kubernetes API version (the final
        // binary picks one): checked through this, `kubernetes` and the oldest version.
        ("cluster-resolver", "k8s-openapi-earliest"),
        ("tfcluster-python", "kubernetes"),
    ],
    &[("cluster-resolver", "gce")],
    // tfcluster-elastic, and remote-connect's tests, use cluster-resolver with `watch`.
    &[
        ("cluster-resolver", "watch"),
        ("tfcluster-elastic", ""),
        ("remote-connect", ""),
        ("tfcluster-python", ""),
    ],
    // Without `etcd`, elastic builds without etcd-client (its built-in rendezvous only).
    &[("remote-connect", "tls"), ("tfcluster-elastic", "etcd")],
    &[("tfcluster-elastic", "tls")],
    // tfcluster turns on features of every crate above.
    &[("tfcluster", "")],
    &[("tfcluster", "kubernetes")],
    &[("tfcluster", "gce")],
];

/// `cargo clippy -D warnings` of each of [`RUNS`].
pub(crate) fn check() -> Result<(), String> {
    for run in RUNS {
        let mut command = Beside::Checks.cargo();
        // The library and binaries, as a user's build compiles them: the tests, examples and
        // benches build with every feature (and a chosen few run without, [`test`]); their
        // dev-dependencies compiled once more for each feature set cost minutes and checked
        // nothing a user builds.
        command.args(["clippy", "--no-default-features"]);
        // Every run asks the dependencies for the same features, so cargo checks them in the
        // first and finds them done in the rest (and in the docs' check after).
        command.args(["-p", feature_superset::PACKAGE]);
        for (krate, _) in *run {
            command.args(["-p", krate]);
        }
        let features: Vec<String> = run
            .iter()
            .filter(|(_, feature)| !feature.is_empty())
            .map(|(krate, feature)| format!("{krate}/{feature}"))
            .collect();
        if !features.is_empty() {
            command.args(["--features", &features.join(",")]);
        }
        workspace::run(command.args(["--", "-D", "warnings"]))?;
    }
    Ok(())
}

/// The tests whose behaviour changes without a crate's features: the crate and the test
/// targets to run with `--no-default-features`.
const WITHOUT_FEATURES: &[(&str, &str)] = &[
    // Auto-detection naming the missing `kubernetes` feature when KUBERNETES_SERVICE_HOST is
    // set (`kubernetes_needs_the_feature`), among the unit tests.
    ("cluster-resolver", "--lib"),
    // Serving and connecting, which `tls` changes: the crate's examples do both.
    ("remote-connect", "--doc"),
];

/// `cargo test` of [`WITHOUT_FEATURES`], each run's suites labelled `no-default-features`.
pub(crate) fn test() -> Vec<Suite> {
    WITHOUT_FEATURES
        .iter()
        .flat_map(|(krate, targets)| {
            tally::cargo_test("no-default-features", &mut cargo_test(krate, targets))
        })
        .collect()
}

/// The builds [`test()`] needs, made ahead (beside the other suites), so it mostly runs. Doc
/// tests cannot be built ahead (`--no-run` refuses `--doc`): the unit tests' build makes the
/// dependencies they share, leaving the crate and its examples.
pub(crate) fn build_tests() -> Result<(), String> {
    WITHOUT_FEATURES.iter().try_for_each(|(krate, targets)| {
        let targets = if *targets == "--doc" {
            "--lib"
        } else {
            targets
        };
        workspace::run(cargo_test(krate, targets).arg("--no-run"))
    })
}

/// `cargo test` of `krate`'s `targets` without its default features (the tests' build has
/// them all: this one builds beside it).
fn cargo_test(krate: &str, targets: &str) -> Command {
    let mut command = Beside::WithoutFeatures.cargo();
    command.args(["test", "-p", krate, "--no-default-features", targets]);
    command
}

/// The docs of every published library as docs.rs builds them: all features, `--cfg docsrs`
/// (which needs nightly for `doc(cfg)`), warnings denied; the public-API listing's selection
/// ([`public_api::nightly_doc`]). A machine without a nightly toolchain fails here, saying
/// how to install one, rather than passing unchecked.
pub(crate) fn docs_rs() -> Result<(), String> {
    workspace::require_nightly("the docs.rs build (--cfg docsrs)")?;
    public_api::nightly_doc("--cfg docsrs -D warnings")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Features checked through another ([`RUNS`]' comments say why).
    const THROUGH_ANOTHER: &[(&str, &str)] = &[("cluster-resolver", "kubernetes")];

    #[test]
    fn the_runs_check_every_crate_without_features_and_with_each_alone_once() {
        let output = Command::new(env!("CARGO"))
            .args(["metadata", "--no-deps", "--format-version", "1"])
            .current_dir(workspace::root())
            .output()
            .expect("cargo metadata runs");
        let metadata: serde_json::Value =
            serde_json::from_slice(&output.stdout).expect("cargo metadata's JSON");
        let mut wanted: Vec<(String, String)> = Vec::new();
        for package in metadata["packages"].as_array().expect("packages") {
            let name = package["name"].as_str().expect("a name");
            let features = package["features"].as_object().expect("features");
            let own: Vec<&String> = features
                .keys()
                .filter(|f| *f != "default" && !THROUGH_ANOTHER.contains(&(name, f.as_str())))
                .collect();
            if !own.is_empty() {
                wanted.push((name.to_owned(), String::new()));
                wanted.extend(own.into_iter().map(|f| (name.to_owned(), f.clone())));
            }
        }
        let mut checked: Vec<(String, String)> = RUNS
            .iter()
            .flat_map(|run| run.iter())
            .map(|(k, f)| ((*k).to_owned(), (*f).to_owned()))
            .collect();
        wanted.sort_unstable();
        checked.sort_unstable();
        assert_eq!(checked, wanted);
        for run in RUNS {
            let mut crates: Vec<&str> = run.iter().map(|(krate, _)| *krate).collect();
            crates.sort_unstable();
            crates.dedup();
            assert_eq!(crates.len(), run.len(), "a crate twice in one run: {run:?}");
        }
    }
}
