//! Every object of the manifests checked against the official Kubernetes Python client's
//! models and JobSet's CRD schema, by `xtask/kubernetes/check_manifests.py` (which says how),
//! each object a check; it returns the documents as parsed, for the other checks.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::slurm::deadline;
use crate::tally::Suite;
use crate::{venv, workspace};

/// Importing the Kubernetes client and checking six objects takes about a second.
const TIMEOUT: Duration = Duration::from_secs(120);

/// Runs the checker on `manifests` with `python` (which has the client, PyYAML and
/// jsonschema), records each of its checks in `suite`, and returns every manifest's documents
/// by file name. A checker that does not run is the error.
pub(super) fn check(
    python: &Path,
    manifests: &[PathBuf],
    suite: &mut Suite,
) -> Result<BTreeMap<String, Vec<Value>>, String> {
    let root = workspace::root();
    let mut command = venv::command(python);
    command
        .arg(root.join("xtask/kubernetes/check_manifests.py"))
        .arg(root.join("xtask/kubernetes/jobset-v1alpha2-schema.json"))
        .args(manifests);
    let shown = deadline::show(&command);
    let finished =
        deadline::run(&mut command, &super::scratch().join("schema"), TIMEOUT)?.success(&shown)?;
    let report: Value = serde_json::from_str(finished.stdout.trim())
        .map_err(|e| format!("{shown} printed no JSON object ({e}):\n{}", finished.stdout))?;
    let checks = report["checks"]
        .as_array()
        .ok_or_else(|| format!("{shown} reported no checks:\n{}", finished.stdout))?;
    for entry in checks {
        let name = entry[0].as_str().unwrap_or("?");
        let outcome = match entry[1].as_str() {
            None => Ok(()),
            Some(error) => Err(error.to_owned()),
        };
        suite.record(&format!("schema: {name}"), outcome);
    }
    let manifests = report["manifests"]
        .as_object()
        .ok_or_else(|| format!("{shown} returned no manifests:\n{}", finished.stdout))?;
    Ok(manifests
        .iter()
        .map(|(name, docs)| (name.clone(), docs.as_array().cloned().unwrap_or_default()))
        .collect())
}
