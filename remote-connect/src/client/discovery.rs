//! Device discovery: `GetStatus` to a task, then its devices named as TensorFlow's
//! `NewRemoteDevices` names them.

use std::collections::HashSet;

use cluster_proto::{DeviceAttributes, GetStatusRequest};
use device_filter::DeviceName;

use super::{Deadline, TaskChannel, Transport};
use crate::TaskId;
use crate::error::TaskError;

/// A remote task whose devices are known.
#[derive(Clone, Debug)]
pub(crate) struct Remote {
    pub(crate) channel: TaskChannel,
    /// Its devices, renamed to the task, in the order it reported them.
    pub(crate) devices: Vec<(DeviceName, DeviceAttributes)>,
}

/// Dials `address` and asks the task at it for its devices.
pub(crate) async fn discover(
    deadline: Deadline,
    transport: Transport,
    task: TaskId,
    address: String,
) -> Result<Remote, TaskError> {
    let mut channel = deadline.dial(&transport, &address).await?;
    let mut answer = status(&deadline, &channel, &task).await;
    if let Err(TaskError::Rpc { status: s, .. }) = &answer
        && s.code() == tonic::Code::Cancelled
    {
        // The request never left: the connection closed before it was written (a refusing
        // server's GOAWAY read first, whose reason is then lost). One transparent retry, as
        // gRPC makes for requests that were never sent, usually hears the reason.
        channel = deadline.dial(&transport, &address).await?;
        answer = status(&deadline, &channel, &task).await;
    }
    let devices = match answer {
        Err(TaskError::Rpc { method, status })
            if transport.is_tls() && closed_by_transport(&status) =>
        {
            return Err(TaskError::TlsRefused { method, status });
        }
        Err(TaskError::Rpc { method, status }) if closed_by_transport(&status) => {
            use std::error::Error as _;
            let reason = status.source().map_or_else(
                || status.message().to_owned(),
                |cause| cluster_spec::__private::error_chain::Chain(cause).to_string(),
            );
            return Err(TaskError::Closed {
                method,
                reason,
                status,
            });
        }
        other => other?,
    };
    tracing::debug!(devices = devices.len(), "devices discovered");
    Ok(Remote { channel, devices })
}

/// Whether the RPC failed because the connection went away rather than with a status the
/// task sent: tonic reports a dropped connection as `Cancelled`, or as `Unknown` or
/// `Unavailable` caused by a transport error.
fn closed_by_transport(status: &tonic::Status) -> bool {
    use std::error::Error as _;
    match status.code() {
        tonic::Code::Cancelled => true,
        tonic::Code::Unknown | tonic::Code::Unavailable => status
            .source()
            .is_some_and(|s| s.is::<tonic::transport::Error>()),
        _ => false,
    }
}

/// `GetStatus` on an open channel, renamed.
pub(crate) async fn status(
    deadline: &Deadline,
    channel: &TaskChannel,
    task: &TaskId,
) -> Result<Vec<(DeviceName, DeviceAttributes)>, TaskError> {
    let mut worker = channel.worker.clone();
    let response = deadline
        .run("GetStatus", worker.get_status(GetStatusRequest {}))
        .await?;
    rename(task, response.device_attributes)
}

/// TensorFlow's rule: a reported name is parsed (a name TensorFlow cannot parse is an error
/// here, where TensorFlow's client aborts), and put under `/job:J/replica:0/task:T` of the
/// task that was asked, whatever job and task it named. Names must be unique per task.
pub(crate) fn rename(
    task: &TaskId,
    reported: Vec<DeviceAttributes>,
) -> Result<Vec<(DeviceName, DeviceAttributes)>, TaskError> {
    let mut seen = HashSet::with_capacity(reported.len());
    reported
        .into_iter()
        .map(|mut attributes| {
            let parsed: DeviceName = attributes
                .name
                .parse()
                .map_err(|source| TaskError::InvalidDevice { source })?;
            let (Some(device_type), Some(id)) = (parsed.device_type(), parsed.id()) else {
                return Err(TaskError::IncompleteDevice {
                    name: attributes.name,
                });
            };
            let name = DeviceName::full(&task.job, 0, task.task, device_type, id)
                .map_err(|source| TaskError::InvalidDevice { source })?;
            let full = name.to_string();
            if !seen.insert(full.clone()) {
                return Err(TaskError::DuplicateDevice { name: full });
            }
            attributes.name = full;
            Ok((name, attributes))
        })
        .collect()
}

/// `GetStatus` to `address`, devices as reported (not renamed).
pub(crate) async fn status_of_address(
    deadline: &Deadline,
    transport: &Transport,
    address: &str,
) -> Result<Vec<DeviceAttributes>, TaskError> {
    let channel = deadline.dial(transport, address).await?;
    let mut worker = channel.worker;
    Ok(deadline
        .run("GetStatus", worker.get_status(GetStatusRequest {}))
        .await?
        .device_attributes)
}
