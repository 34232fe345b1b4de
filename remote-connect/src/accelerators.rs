//! TensorFlow's base `ClusterResolver.num_accelerators`, which asks the master task for its
//! devices: our resolvers answer from what they know without dialling, so this is the
//! dialling form, over any resolver.

use std::collections::BTreeMap;
use std::time::Duration;

use cluster_resolver::ClusterResolver;

use crate::TaskId;
use crate::client::status_of_address;
use crate::client::{Deadline, Transport};
use crate::error::{Error, Stage, TaskFailure};

/// Counts the accelerators of the resolver's master task by device type, as TensorFlow's
/// `ClusterResolver.num_accelerators(task_type, task_id)`: the master is
/// `resolver.master(task_type, task_id)`, asked with `GetStatus` under `timeout`; `CPU` and
/// `XLA_CPU` devices do not count; with both `task_type` and `task_id` given, a device counts
/// only if its name contains `/job:<task_type>` and `/task:<task_id>` (TensorFlow's
/// substring test, so `/task:1` also matches `/task:10`). A master of `""` counts this
/// process's own devices.
///
/// # Errors
///
/// The resolver's error, or [`Error::Tasks`] when the master does not answer.
pub async fn num_accelerators(
    resolver: &dyn ClusterResolver,
    task_type: Option<&str>,
    task_id: Option<u32>,
    timeout: Duration,
) -> Result<BTreeMap<String, u32>, Error> {
    let master = resolver.master(task_type, task_id, None).await?;
    let address = master.strip_prefix("grpc://").unwrap_or(&master).to_owned();
    let devices: Vec<(String, String)> = if address.is_empty() {
        crate::devices::discover(timeout)
            .await?
            .into_iter()
            .map(|d| {
                (
                    format!(
                        "/job:localhost/replica:0/task:0/device:{}:{}",
                        d.device_type, d.id
                    ),
                    d.device_type,
                )
            })
            .collect()
    } else {
        let deadline = Deadline::new(timeout, timeout, 1);
        let task = TaskId::new(task_type.unwrap_or("master"), task_id.unwrap_or(0));
        // TensorFlow's function has no TLS settings: its master is dialled in plaintext.
        status_of_address(&deadline, &Transport::default(), &address)
            .await
            .map_err(|error| Error::Tasks {
                stage: Stage::Discovery,
                total: 1,
                failures: vec![TaskFailure {
                    task,
                    address: address.clone(),
                    error,
                }],
            })?
            .into_iter()
            .map(|a| (a.name, a.device_type))
            .collect()
    };
    Ok(count(&devices, task_type, task_id))
}

/// TensorFlow's counting rule over `(name, device_type)` pairs.
fn count(
    devices: &[(String, String)],
    task_type: Option<&str>,
    task_id: Option<u32>,
) -> BTreeMap<String, u32> {
    let mut counts = BTreeMap::new();
    for (name, device_type) in devices {
        if device_type == "CPU" || device_type == "XLA_CPU" {
            continue;
        }
        if let (Some(job), Some(task)) = (task_type, task_id)
            && (!name.contains(&format!("/job:{job}")) || !name.contains(&format!("/task:{task}")))
        {
            continue;
        }
        *counts.entry(device_type.clone()).or_insert(0) += 1;
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substring_rule_and_cpu_excluded() {
        let d = |n: &str, t: &str| (n.to_owned(), t.to_owned());
        let devices = [
            d("/job:worker/replica:0/task:1/device:CPU:0", "CPU"),
            d("/job:worker/replica:0/task:1/device:GPU:0", "GPU"),
            d("/job:worker/replica:0/task:10/device:GPU:0", "GPU"),
            d("/job:worker1/replica:0/task:1/device:TPU:0", "TPU"),
            d("/job:ps/replica:0/task:1/device:GPU:0", "GPU"),
        ];
        let all = count(&devices, None, None);
        assert_eq!(all, [("GPU".to_owned(), 3), ("TPU".to_owned(), 1)].into());
        let worker1 = count(&devices, Some("worker"), Some(1));
        assert_eq!(
            worker1,
            [("GPU".to_owned(), 2), ("TPU".to_owned(), 1)].into()
        );
        assert!(count(&devices, Some("chief"), Some(0)).is_empty());
    }
}
