//! `cargo xtask kubernetes`: the manifests of `deploy/kubernetes/` checked as Kubernetes would
//! take them and run as their pods would run, with no Kubernetes here.
//!
//! - [`schema`]: every object of every manifest against the official Kubernetes Python
//!   client's models (`kubernetes` from pip, in the TensorFlow venv), unknown and misspelt
//!   fields refused; the JobSet against JobSet's CRD schema (`xtask/kubernetes/`, its source
//!   and commit named there) with `jsonschema`, its pod templates as `V1PodTemplateSpec`.
//! - [`hardening`]: what the manifests must not allow: a token written in them, a pod that
//!   runs privileged, the elastic job's pods open to other pods than its own.
//! - [`pods`] derives every pod of the Indexed Job and the JobSet with the environment
//!   Kubernetes gives it; [`resolve`] runs `tfcluster resolve --from k8s-indexed` with only that
//!   environment in every pod, which must give every pod the cluster written down here for the
//!   manifest and each its own task, and TensorFlow 2.21's `TFConfigClusterResolver` must read
//!   the same from our TF_CONFIG.
//! - [`training`]: three network-namespace hosts named as the pods are
//!   ([`crate::host_network`], shared with the Slurm suite): the Indexed Job's own command on
//!   each, with only its pod's environment, trains MultiWorkerMirroredStrategy; the elastic
//!   job's command (with `--dry-run`) forms a round at the rendezvous pod 0 serves.
//!
//! Needs root (namespaces, `/etc/hosts`), iproute2 and nsenter, and the TensorFlow venv.

mod hardening;
mod pods;
mod resolve;
mod schema;
mod training;

use std::path::PathBuf;
use std::time::Instant;

use serde_json::Value;

use crate::tally::{self, Suite};
use crate::{python, tf_venv, workspace};

/// The suite's name in the tally and the floors file.
const SUITE: &str = "kubernetes: checks";

/// The manifests, in `deploy/kubernetes/`.
const MWMS: &str = "mwms-indexed-job.yaml";
const PS: &str = "ps-jobset.yaml";
const ELASTIC: &str = "elastic-indexed-job.yaml";
const MANIFESTS: [&str; 3] = [MWMS, PS, ELASTIC];

/// Where the checks write their scratch files.
fn scratch() -> PathBuf {
    workspace::root().join("target/kubernetes")
}

/// `cargo xtask kubernetes` alone, its checks counted.
pub(crate) fn task() -> Result<(), String> {
    tally::alone([run()])
}

/// Every check, each counted; a check that fails does not stop the others, a missing tool
/// (pip, TensorFlow, the build) stops them all (one failure).
pub(crate) fn run() -> Suite {
    let mut suite = Suite::new(SUITE);
    if let Err(e) = checks(&mut suite) {
        suite.record("the Kubernetes checks' tools", Err(e));
    }
    suite
}

fn checks(suite: &mut Suite) -> Result<(), String> {
    let building = Instant::now();
    let python = tf_venv::python()?;
    python::ensure_tools(&python)?;
    let tfcluster = crate::test_build::artifact("tfcluster", "bin", "tfcluster")?;
    // The clock is the checks', not pip's or cargo's.
    eprintln!(
        "xtask: kubernetes: tools and {} ready in {:.2?}",
        tfcluster.display(),
        building.elapsed()
    );
    let started = Instant::now();
    let dir = workspace::root().join("deploy/kubernetes");
    let paths: Vec<PathBuf> = MANIFESTS.iter().map(|name| dir.join(name)).collect();
    let manifests = schema::check(&python, &paths, suite)?;
    let docs = |name: &str| -> Result<&[Value], String> {
        manifests
            .get(name)
            .map(Vec::as_slice)
            .ok_or_else(|| format!("the schema check returned no documents of {name}"))
    };
    let tools = resolve::Tools {
        tfcluster: &tfcluster,
        python: &python,
    };
    let mwms = pods::of(docs(MWMS)?)?;
    let ps = pods::of(docs(PS)?)?;
    resolve::check(&tools, MWMS, &mwms, &resolve::expected_mwms(), suite);
    resolve::check(&tools, PS, &ps, &resolve::expected_ps(), suite);
    let elastic = pods::of(docs(ELASTIC)?)?;
    suite.record(
        "elastic-indexed-job.yaml: --rdzv names pod 0 at the Service's port",
        pods::check_rdzv(docs(ELASTIC)?, &elastic),
    );
    suite.record(
        "elastic-indexed-job.yaml: holds no token (its Secret is the user's to make)",
        hardening::holds_no_secret(docs(ELASTIC)?),
    );
    for name in MANIFESTS {
        suite.record(
            &format!("{name}: every pod runs unprivileged"),
            hardening::unprivileged(docs(name)?),
        );
        suite.record(
            &format!("{name}: every image names a version or a digest, never latest"),
            hardening::images_pinned(docs(name)?),
        );
    }
    suite.record(
        "elastic-indexed-job.yaml: a NetworkPolicy admits only the job's pods",
        hardening::only_the_job_admitted(docs(ELASTIC)?, "elastic"),
    );
    training::run(&tools, &mwms, &elastic, suite)?;
    eprintln!(
        "xtask: kubernetes: {} checks passed, {} failed in {:.2?}",
        suite.passed,
        suite.failed.len(),
        started.elapsed()
    );
    Ok(())
}
