//! Each crate with cargo features, checked with no features and with each feature on its own,
//! so a feature combination that stops compiling (an item used under the wrong `cfg`, an
//! import only one feature needs) fails here rather than in a user's build. The rest of
//! `cargo xtask test` runs with `--all-features`, which hides such breakage.
//!
//! And the tests of what a feature's absence changes, which `--all-features` never runs: a
//! chosen few, as each such run compiles the crate and its dependencies once more.
//!
//! And the docs as docs.rs builds them (`--cfg docsrs`, nightly), so every gated item shows the
//! feature that enables it.

use std::process::Command;

use crate::tally::{self, Suite};
use crate::workspace;

/// Every crate with features, and the feature sets checked besides none. cluster-resolver's
/// `kubernetes` alone names no Kubernetes API version (the final binary picks one), so it is
/// checked through `k8s-openapi-earliest`, which is `kubernetes` plus the oldest version.
const CRATES: &[(&str, &[&str])] = &[
    ("cluster-proto", &["grpc"]),
    (
        "cluster-resolver",
        &["k8s-openapi-earliest", "gce", "watch"],
    ),
    ("grpc-guard", &["tls"]),
    ("remote-connect", &["tls"]),
    // Without `etcd`, elastic builds without etcd-client (its built-in rendezvous only).
    ("tfcluster-elastic", &["etcd", "tls"]),
];

/// The binaries (and the Python extension module) with features: checked like [`CRATES`], but
/// not documented for docs.rs. Both have `kubernetes` by default, so the `--no-default-features`
/// run is the build without Kubernetes (and `--features gce` is gce without it).
const BINARIES: &[(&str, &[&str])] = &[
    ("tfcluster", &["kubernetes", "gce"]),
    ("tfcluster-python", &["kubernetes"]),
];

/// `cargo clippy -D warnings` on each crate of [`CRATES`] and [`BINARIES`] with no features,
/// then each feature.
pub(crate) fn check() -> Result<(), String> {
    for (krate, features) in CRATES.iter().chain(BINARIES) {
        clippy(krate, &["--no-default-features"])?;
        for feature in *features {
            clippy(krate, &["--no-default-features", "--features", feature])?;
        }
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
            tally::cargo_test(
                "no-default-features",
                Command::new("cargo").args(["test", "-p", krate, "--no-default-features", targets]),
            )
        })
        .collect()
}

fn clippy(krate: &str, feature_args: &[&str]) -> Result<(), String> {
    workspace::run(
        Command::new("cargo")
            .args(["clippy", "-p", krate, "--all-targets"])
            .args(feature_args)
            .args(["--", "-D", "warnings"]),
    )
}

/// The docs of each crate of [`CRATES`] as docs.rs builds them: all features, `--cfg docsrs`
/// (which needs nightly for `doc(cfg)`), warnings denied. A machine without a nightly
/// toolchain fails here, saying how to install one, rather than passing unchecked.
pub(crate) fn docs_rs() -> Result<(), String> {
    workspace::require_nightly("the docs.rs build (--cfg docsrs)")?;
    let mut command = Command::new("cargo");
    command.args(["+nightly", "doc", "--no-deps", "--all-features"]);
    for (krate, _) in CRATES {
        command.args(["-p", krate]);
    }
    workspace::run(command.env("RUSTDOCFLAGS", "--cfg docsrs -D warnings"))
}
