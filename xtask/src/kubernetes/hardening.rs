//! What the manifests must not allow, checked on their documents: a token written in a
//! manifest (one everyone who reads the repository has), a pod that runs privileged (root,
//! privilege escalation, capabilities, a writable root, no seccomp), and for the elastic job
//! a pod network open to anyone (its rendezvous port).

use serde_json::Value;

/// No document of `docs` is a Secret: a manifest applied unchanged would run with its token.
pub(super) fn holds_no_secret(docs: &[Value]) -> Result<(), String> {
    match docs.iter().find(|doc| doc["kind"] == "Secret") {
        Some(secret) => Err(format!(
            "a Secret in the manifest: {}",
            secret["metadata"]["name"]
        )),
        None => Ok(()),
    }
}

/// Every pod of every Job and JobSet in `docs` runs unprivileged: as a non-root user under
/// the runtime's seccomp profile, each container without privilege escalation, with every
/// capability dropped and a read-only root filesystem.
pub(super) fn unprivileged(docs: &[Value]) -> Result<(), String> {
    let pods: Vec<(String, &Value)> = docs.iter().flat_map(pod_specs).collect();
    if pods.is_empty() {
        return Err("no pod template".into());
    }
    let mut wrong = Vec::new();
    for (what, pod) in pods {
        let context = &pod["securityContext"];
        if context["runAsNonRoot"] != true {
            wrong.push(format!("{what}: securityContext.runAsNonRoot is not true"));
        }
        if context["seccompProfile"]["type"] != "RuntimeDefault" {
            wrong.push(format!("{what}: seccompProfile.type is not RuntimeDefault"));
        }
        for container in pod["containers"].as_array().into_iter().flatten() {
            let name = &container["name"];
            let context = &container["securityContext"];
            if context["allowPrivilegeEscalation"] != false {
                wrong.push(format!("{what}: container {name} may escalate privileges"));
            }
            if context["readOnlyRootFilesystem"] != true {
                wrong.push(format!("{what}: container {name} has a writable root"));
            }
            let drops_all = context["capabilities"]["drop"]
                .as_array()
                .is_some_and(|drop| drop.iter().any(|c| c == "ALL"));
            if !drops_all {
                wrong.push(format!("{what}: container {name} keeps capabilities"));
            }
        }
    }
    match wrong.is_empty() {
        true => Ok(()),
        false => Err(wrong.join("; ")),
    }
}

/// Every container image of every pod in `docs` names a digest (`@sha256:`) or a tag other
/// than `latest`: a pod started later must run what the others run, not whatever `latest`
/// names by then (a Job's pods start over hours when they are restarted or scaled).
pub(super) fn images_pinned(docs: &[Value]) -> Result<(), String> {
    let mut wrong = Vec::new();
    for (what, pod) in docs.iter().flat_map(pod_specs) {
        for container in pod["containers"].as_array().into_iter().flatten() {
            let image = container["image"].as_str().unwrap_or_default();
            if !image_pinned(image) {
                wrong.push(format!(
                    "{what}: container {} runs image {image:?}",
                    container["name"]
                ));
            }
        }
    }
    match wrong.is_empty() {
        true => Ok(()),
        false => Err(wrong.join("; ")),
    }
}

/// Whether `image` names a digest, or a tag other than `latest` (the tag is what follows
/// the last `:` after the last `/`: a registry's port is no tag).
fn image_pinned(image: &str) -> bool {
    if image.contains("@sha256:") {
        return true;
    }
    let last = image.rsplit('/').next().unwrap_or(image);
    matches!(last.rsplit_once(':'), Some((_, tag)) if !tag.is_empty() && tag != "latest")
}

/// A NetworkPolicy in `docs` selects Job `job`'s pods and admits traffic to them from those
/// pods alone.
pub(super) fn only_the_job_admitted(docs: &[Value], job: &str) -> Result<(), String> {
    let of_job = |selector: &Value| {
        selector["matchLabels"]["batch.kubernetes.io/job-name"] == job
            && selector["matchLabels"].as_object().map(|m| m.len()) == Some(1)
    };
    let policy = docs
        .iter()
        .find(|doc| doc["kind"] == "NetworkPolicy" && of_job(&doc["spec"]["podSelector"]))
        .ok_or_else(|| format!("no NetworkPolicy selects the pods of Job {job}"))?;
    let spec = &policy["spec"];
    let ingress_type = spec["policyTypes"]
        .as_array()
        .is_some_and(|types| types.iter().any(|t| t == "Ingress"));
    let rules = spec["ingress"].as_array().cloned().unwrap_or_default();
    let only_job = rules.iter().all(|rule| {
        rule["from"].as_array().is_some_and(|from| {
            !from.is_empty()
                && from.iter().all(|peer| {
                    of_job(&peer["podSelector"])
                        && peer["namespaceSelector"].is_null()
                        && peer["ipBlock"].is_null()
                })
        })
    });
    match ingress_type && only_job {
        true => Ok(()),
        false => Err(format!(
            "NetworkPolicy {} admits more than Job {job}'s pods: {spec}",
            policy["metadata"]["name"]
        )),
    }
}

/// The pod specs of a Job (`Job NAME`) or of each replicated job of a JobSet (`JobSet
/// NAME/RJOB`).
fn pod_specs(doc: &Value) -> Vec<(String, &Value)> {
    let name = doc["metadata"]["name"].as_str().unwrap_or("?");
    match doc["kind"].as_str() {
        Some("Job") => vec![(format!("Job {name}"), &doc["spec"]["template"]["spec"])],
        Some("JobSet") => doc["spec"]["replicatedJobs"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|rjob| {
                (
                    format!("JobSet {name}/{}", rjob["name"].as_str().unwrap_or("?")),
                    &rjob["template"]["spec"]["template"]["spec"],
                )
            })
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{image_pinned, only_the_job_admitted, unprivileged};

    #[test]
    fn an_image_is_pinned_by_a_version_or_a_digest_never_latest() {
        for pinned in [
            "my-registry/tf-train:2.21.0-1",
            "registry:5000/tf-train:v3",
            "tf-train@sha256:0123abcd",
        ] {
            assert!(image_pinned(pinned), "{pinned}");
        }
        for loose in [
            "my-registry/tf-train:latest",
            "my-registry/tf-train",
            "registry:5000/tf-train",
            "",
        ] {
            assert!(!image_pinned(loose), "{loose}");
        }
    }

    #[test]
    fn a_privileged_pod_and_an_open_policy_are_named() {
        let job = |pod: serde_json::Value| json!({"kind": "Job", "metadata": {"name": "j"}, "spec": {"template": {"spec": pod}}});
        let tight = json!({
            "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": "tf", "securityContext": {
                "allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
                "capabilities": {"drop": ["ALL"]}}}],
        });
        assert_eq!(unprivileged(&[job(tight)]), Ok(()));
        let loose = json!({"containers": [{"name": "tf"}]});
        let err = unprivileged(&[job(loose)]).unwrap_err();
        for said in [
            "runAsNonRoot",
            "seccompProfile",
            "escalate",
            "writable root",
            "capabilities",
        ] {
            assert!(err.contains(said), "{said}: {err}");
        }
        let policy = |from: serde_json::Value| {
            json!({"kind": "NetworkPolicy", "metadata": {"name": "p"}, "spec": {
                "podSelector": {"matchLabels": {"batch.kubernetes.io/job-name": "e"}},
                "policyTypes": ["Ingress"], "ingress": [{"from": from}]}})
        };
        let own = json!([{"podSelector": {"matchLabels": {"batch.kubernetes.io/job-name": "e"}}}]);
        assert_eq!(only_the_job_admitted(&[policy(own)], "e"), Ok(()));
        let anyone = json!([{"ipBlock": {"cidr": "0.0.0.0/0"}}]);
        assert!(only_the_job_admitted(&[policy(anyone)], "e").is_err());
        assert!(only_the_job_admitted(&[], "e").is_err());
    }
}
