//! From listed pods to task addresses: ordering, the Running check and the address choice.

use std::net::IpAddr;

use k8s_openapi::api::core::v1::Pod;

use super::Error;

/// Which IP of a pod its task address uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum PodAddress {
    /// `status.podIP`: the pod's own address, where its TensorFlow server listens. The default.
    #[default]
    PodIp,
    /// `status.hostIP`: the node's address, as TensorFlow uses. Right only for pods with
    /// `hostNetwork: true` or a `hostPort`, and then two pods on one node get one address.
    HostIp,
}

impl PodAddress {
    /// The field of `PodStatus` this reads, as the API spells it (for error messages).
    pub(super) fn field(self) -> &'static str {
        match self {
            Self::PodIp => "status.podIP",
            Self::HostIp => "status.hostIP",
        }
    }
}

/// What one pod contributes to the spec.
#[derive(Debug)]
pub(super) enum PodTask {
    /// A running pod and its task address.
    Running {
        /// `metadata.name`.
        name: String,
        /// `ip:port`, IPv6 in brackets.
        address: String,
    },
    /// A pod that is not (yet) usable: not in phase Running, or running without the IP.
    NotRunning {
        /// `metadata.name`.
        name: String,
        /// `status.phase`, `"None"` when absent (TensorFlow prints Python's `None`).
        phase: String,
    },
    /// Running, but without the IP the resolver uses.
    NoAddress {
        /// `metadata.name`.
        name: String,
    },
}

/// The pods of one label selector, **sorted by name** as TensorFlow sorts them (so the task
/// order does not depend on the order the API server lists them in), each as a [`PodTask`].
pub(super) fn pod_tasks(mut pods: Vec<Pod>, which: PodAddress, port: u16) -> Vec<PodTask> {
    pods.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    pods.into_iter()
        .map(|pod| {
            let name = pod.metadata.name.unwrap_or_default();
            let status = pod.status.unwrap_or_default();
            let phase = status.phase.unwrap_or_else(|| "None".to_owned());
            if phase != "Running" {
                return PodTask::NotRunning { name, phase };
            }
            let ip = match which {
                PodAddress::PodIp => status.pod_ip,
                PodAddress::HostIp => status.host_ip,
            };
            match ip.filter(|ip| !ip.is_empty()) {
                Some(ip) => PodTask::Running {
                    address: host_port(&ip, port),
                    name,
                },
                None => PodTask::NoAddress { name },
            }
        })
        .collect()
}

/// `ip:port`, with an IPv6 address in brackets (`[fd00::1]:8470`); TensorFlow's `"%s:%s"`
/// gives `fd00::1:8470`, which its runtime cannot parse.
fn host_port(ip: &str, port: u16) -> String {
    match ip.parse::<IpAddr>() {
        Ok(IpAddr::V6(v6)) => format!("[{v6}]:{port}"),
        _ => format!("{ip}:{port}"),
    }
}

/// Ok when every pod is running with its IP; else `PodsNotRunning` naming every pod not
/// running, or (all running) `PodWithoutAddress` for the first without the IP.
pub(super) fn check_running<'a>(
    namespace: &str,
    which: PodAddress,
    tasks: impl IntoIterator<Item = &'a PodTask>,
) -> Result<(), Error> {
    let mut not_running = Vec::new();
    let mut no_address = None;
    for task in tasks {
        match task {
            PodTask::NotRunning { name, phase } => not_running.push((name.clone(), phase.clone())),
            PodTask::NoAddress { name } => {
                no_address.get_or_insert(name);
            }
            PodTask::Running { .. } => {}
        }
    }
    if !not_running.is_empty() {
        return Err(Error::PodsNotRunning {
            namespace: namespace.to_owned(),
            pods: not_running,
            waited: None,
        });
    }
    match no_address {
        Some(name) => Err(Error::PodWithoutAddress {
            namespace: namespace.to_owned(),
            pod: name.clone(),
            field: which.field(),
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::PodStatus;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;

    fn pod(name: &str, phase: Option<&str>, pod_ip: Option<&str>) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                ..ObjectMeta::default()
            },
            status: Some(PodStatus {
                phase: phase.map(str::to_owned),
                pod_ip: pod_ip.map(str::to_owned),
                host_ip: Some("10.128.0.7".to_owned()),
                ..PodStatus::default()
            }),
            ..Pod::default()
        }
    }

    fn addresses(tasks: &[PodTask]) -> Vec<&str> {
        tasks
            .iter()
            .filter_map(|t| match t {
                PodTask::Running { address, .. } => Some(address.as_str()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn sorted_by_name_in_string_order_as_tf() {
        let pods = vec![
            pod("w-2", Some("Running"), Some("10.4.0.2")),
            pod("w-10", Some("Running"), Some("10.4.0.10")),
            pod("w-1", Some("Running"), Some("10.4.0.1")),
        ];
        let tasks = pod_tasks(pods, PodAddress::PodIp, 2222);
        assert_eq!(
            addresses(&tasks),
            ["10.4.0.1:2222", "10.4.0.10:2222", "10.4.0.2:2222"]
        );
    }

    #[test]
    fn host_ip_is_the_node_address() {
        let tasks = pod_tasks(
            vec![pod("w", Some("Running"), Some("10.4.0.2"))],
            PodAddress::HostIp,
            8470,
        );
        assert_eq!(addresses(&tasks), ["10.128.0.7:8470"]);
    }

    #[test]
    fn ipv6_pod_ips_are_bracketed() {
        let tasks = pod_tasks(
            vec![pod("w", Some("Running"), Some("fd00:10:4::2"))],
            PodAddress::PodIp,
            8470,
        );
        assert_eq!(addresses(&tasks), ["[fd00:10:4::2]:8470"]);
    }

    #[test]
    fn every_pod_not_running_is_reported() {
        let tasks = pod_tasks(
            vec![
                pod("b", Some("Pending"), None),
                pod("a", None, None),
                pod("c", Some("Running"), Some("10.4.0.3")),
            ],
            PodAddress::PodIp,
            8470,
        );
        let err = check_running("ml", PodAddress::PodIp, &tasks).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Pod \"a\" is not running; phase: \"None\"; \
             Pod \"b\" is not running; phase: \"Pending\" (namespace \"ml\")"
        );
    }

    #[test]
    fn running_without_ip_names_pod_and_field() {
        let tasks = pod_tasks(
            vec![pod("w-0", Some("Running"), None)],
            PodAddress::PodIp,
            8470,
        );
        let err = check_running("ml", PodAddress::PodIp, &tasks).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Pod \"w-0\" in namespace \"ml\" is running but has no status.podIP"
        );
    }
}
