//! Every pod an Indexed Job or a JobSet of a manifest makes, with the environment Kubernetes
//! gives its container: `JOB_COMPLETION_INDEX`, `HOSTNAME` (`<job>-<i>`, or JobSet's
//! `<jobset>-<replicatedjob>-<j>-<i>`), the API server's service variables, and the
//! manifest's `env`, its downward-API fields resolved for a pod in namespace [`NAMESPACE`].

use serde_json::Value;

/// The namespace the checks take the manifests to be applied in.
pub(super) const NAMESPACE: &str = "default";

/// What every container gets from the `kubernetes` Service in the default namespace
/// (`enableServiceLinks`); an address of a typical cluster.
const SERVICE_LINKS: [(&str, &str); 2] = [
    ("KUBERNETES_SERVICE_HOST", "10.96.0.1"),
    ("KUBERNETES_SERVICE_PORT", "443"),
];

/// One pod: its host name and subdomain, its container's command and environment.
#[derive(Debug, Clone)]
pub(super) struct Pod {
    pub(super) host: String,
    /// The headless Service its DNS name is in: `<host>.<subdomain>`.
    pub(super) subdomain: String,
    pub(super) command: Vec<String>,
    pub(super) env: Vec<(String, String)>,
}

/// The pods of every Job and JobSet in `docs` (a manifest's documents), in index order.
pub(super) fn of(docs: &[Value]) -> Result<Vec<Pod>, String> {
    let mut pods = Vec::new();
    for doc in docs {
        let name = text(&doc["metadata"]["name"], "metadata.name")?;
        match doc["kind"].as_str() {
            Some("Job") => {
                let path = &doc["spec"]["template"]["spec"]["subdomain"];
                let subdomain = text(path, "spec.template.spec.subdomain")?;
                pods.extend(job(&name, &doc["spec"], &subdomain)?);
            }
            Some("JobSet") => {
                // JobSet's default subdomain is its name.
                let subdomain = match &doc["spec"]["network"]["subdomain"] {
                    Value::Null => name.clone(),
                    value => text(value, "spec.network.subdomain")?,
                };
                for rjob in array(&doc["spec"]["replicatedJobs"], "spec.replicatedJobs")? {
                    let rname = text(&rjob["name"], "replicatedJobs[].name")?;
                    let replicas = count(&rjob["replicas"], 1, "replicatedJobs[].replicas")?;
                    for j in 0..replicas {
                        let job_name = format!("{name}-{rname}-{j}");
                        pods.extend(job(&job_name, &rjob["template"]["spec"], &subdomain)?);
                    }
                }
            }
            _ => {}
        }
    }
    Ok(pods)
}

/// The pods of one Indexed Job named `name` with spec `spec`, host names `<name>-<i>`.
fn job(name: &str, spec: &Value, subdomain: &str) -> Result<Vec<Pod>, String> {
    if spec["completionMode"] != "Indexed" {
        return Err(format!(
            "Job {name}: completionMode is {}, not Indexed",
            spec["completionMode"]
        ));
    }
    let completions = count(&spec["completions"], 1, "spec.completions")?;
    let containers = array(&spec["template"]["spec"]["containers"], "containers")?;
    let container = containers
        .first()
        .ok_or_else(|| format!("Job {name} has no container"))?;
    let command = array(&container["command"], "command")?
        .iter()
        .map(|arg| text(arg, "command[]"))
        .collect::<Result<Vec<_>, _>>()?;
    let mut manifest_env = Vec::new();
    for var in container["env"].as_array().into_iter().flatten() {
        let var_name = text(&var["name"], "env[].name")?;
        let value = match (&var["value"], &var["valueFrom"]["fieldRef"]["fieldPath"]) {
            (Value::String(value), _) => value.clone(),
            (_, Value::String(path)) if path == "metadata.namespace" => NAMESPACE.to_owned(),
            _ => {
                return Err(format!(
                    "Job {name}: env {var_name} is neither a value nor metadata.namespace, \
                     which is all this check derives"
                ));
            }
        };
        manifest_env.push((var_name, value));
    }
    Ok((0..completions)
        .map(|i| {
            let host = format!("{name}-{i}");
            let mut env = vec![
                ("JOB_COMPLETION_INDEX".to_owned(), i.to_string()),
                ("HOSTNAME".to_owned(), host.clone()),
            ];
            env.extend(SERVICE_LINKS.map(|(k, v)| (k.to_owned(), v.to_owned())));
            env.extend(manifest_env.iter().cloned());
            Pod {
                host,
                subdomain: subdomain.to_owned(),
                command: command.clone(),
                env,
            }
        })
        .collect())
}

/// The elastic job's `--rdzv HOST:PORT` is its pod 0's name in the Service's subdomain, at
/// the port the Service and the container name `rdzv`.
pub(super) fn check_rdzv(docs: &[Value], pods: &[Pod]) -> Result<(), String> {
    let pod0 = pods.first().ok_or("the elastic manifest makes no pod")?;
    let rdzv = pod0
        .command
        .iter()
        .position(|arg| arg == "--rdzv")
        .and_then(|i| pod0.command.get(i + 1))
        .ok_or("the elastic job's command has no --rdzv")?;
    let job = docs
        .iter()
        .find(|doc| doc["kind"] == "Job")
        .ok_or("the elastic manifest has no Job")?;
    let subdomain = text(&job["spec"]["template"]["spec"]["subdomain"], "subdomain")?;
    let service = docs
        .iter()
        .find(|doc| doc["kind"] == "Service" && doc["metadata"]["name"] == subdomain.as_str())
        .ok_or_else(|| format!("no Service named {subdomain}, the pods' subdomain"))?;
    let port = |ports: &Value| {
        ports
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["name"] == "rdzv")
            .map(|p| p["port"].as_u64().or(p["containerPort"].as_u64()))
    };
    let service_port = port(&service["spec"]["ports"]).flatten();
    let container_port = port(&job["spec"]["template"]["spec"]["containers"][0]["ports"]).flatten();
    let expected = format!("{}.{subdomain}:{}", pod0.host, service_port.unwrap_or(0));
    if *rdzv != expected || service_port != container_port {
        return Err(format!(
            "--rdzv {rdzv}: expected {expected} (pod 0 in subdomain {subdomain}, the \
             Service's rdzv port {service_port:?}; the container's is {container_port:?})"
        ));
    }
    Ok(())
}

fn text(value: &Value, what: &str) -> Result<String, String> {
    value
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("{what} is {value}, not a string"))
}

fn array<'a>(value: &'a Value, what: &str) -> Result<&'a [Value], String> {
    value
        .as_array()
        .map(Vec::as_slice)
        .ok_or_else(|| format!("{what} is {value}, not a list"))
}

/// A count field, `default` when absent (Kubernetes' default for completions and replicas).
fn count(value: &Value, default: u64, what: &str) -> Result<u64, String> {
    match value {
        Value::Null => Ok(default),
        value => value
            .as_u64()
            .ok_or_else(|| format!("{what} is {value}, not a count")),
    }
}
