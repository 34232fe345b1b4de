//! A connected context's state: the cluster, the remote tasks with their devices, the lists
//! each was sent and the links to call them; the connection a context holds live, and what
//! readers see of it.

use std::collections::BTreeMap;
use std::time::Duration;

use cluster_proto::DeviceAttributes;
use cluster_spec::ClusterSpec;
use device_filter::{ClusterDeviceFilters, DeviceName};
use tokio::task::JoinHandle;

use super::discovery::Remote;
use super::local::Local;
use super::requests::Blueprint;
use super::visible::Sent;
use super::{ConnectOptions, DeviceHandle, TaskChannel};
use crate::error::Staleness;
use crate::{Error, TaskId};

/// One remote task of a connection.
#[derive(Clone, Debug)]
pub(crate) struct Member {
    pub(crate) address: String,
    pub(crate) remote: Remote,
    /// The devices this task was sent (its view of the cluster).
    pub(crate) sent: Sent,
}

impl Member {
    /// What calling this member, task `task`, takes.
    pub(crate) fn link(&self, task: &TaskId) -> TaskLink {
        TaskLink {
            task: task.clone(),
            address: self.address.clone(),
            channel: self.remote.channel.clone(),
        }
    }
}

/// A remote task to call: what keep-alives, closing and ops need of a member (the address
/// names it in failures).
#[derive(Clone, Debug)]
pub(crate) struct TaskLink {
    pub(crate) task: TaskId,
    pub(crate) address: String,
    pub(crate) channel: TaskChannel,
}

impl TaskLink {
    /// The link as [`fan_out`](super::fan_out::fan_out) takes a task, the channel its input.
    pub(crate) fn into_item(self) -> (TaskId, String, TaskChannel) {
        (self.task, self.address, self.channel)
    }
}

/// The state of a connected context; an update builds the next one aside and swaps it in.
#[derive(Clone, Debug)]
pub(crate) struct Connection {
    pub(crate) context_id: u64,
    pub(crate) view_id: u64,
    /// The cluster as given (without an added local job).
    pub(crate) spec: ClusterSpec,
    /// The cluster with the local job.
    pub(crate) full_spec: ClusterSpec,
    pub(crate) local: Local,
    pub(crate) blueprint: Blueprint,
    /// The filters in force (installed at full connects only, as TensorFlow).
    pub(crate) filters: ClusterDeviceFilters,
    pub(crate) members: BTreeMap<TaskId, Member>,
    pub(crate) default_device: Option<String>,
    pub(crate) options: ConnectOptions,
}

impl Connection {
    /// Every remote task with its address.
    pub(crate) fn addresses(&self) -> BTreeMap<TaskId, String> {
        self.members
            .iter()
            .map(|(task, m)| (task.clone(), m.address.clone()))
            .collect()
    }

    /// Every member, to call.
    pub(crate) fn links(&self) -> Vec<TaskLink> {
        self.members.iter().map(|(t, m)| m.link(t)).collect()
    }

    /// Every device of the cluster: the remote tasks' in task order, then the local task's
    /// (TensorFlow's `base_request.cluster_device_attributes`).
    pub(crate) fn base_devices(
        members: &BTreeMap<TaskId, Member>,
        local: &Local,
    ) -> (Vec<DeviceName>, Vec<DeviceAttributes>) {
        let mut names = Vec::new();
        let mut attributes = Vec::new();
        for member in members.values() {
            for (name, attrs) in &member.remote.devices {
                names.push(name.clone());
                attributes.push(attrs.clone());
            }
        }
        for attrs in local.server.device_attributes() {
            // The local server validated its names when it started.
            if let Ok(name) = attrs.name.parse() {
                names.push(name);
                attributes.push(attrs);
            }
        }
        (names, attributes)
    }
}

/// The connection a context holds, with its keep-alive task, which stops with it.
#[derive(Debug)]
pub(super) struct Live {
    pub(super) connection: Connection,
    pub(super) keep_alive: Option<JoinHandle<()>>,
}

impl Drop for Live {
    fn drop(&mut self) {
        if let Some(handle) = self.keep_alive.take() {
            handle.abort();
        }
    }
}

/// What readers see of a connection, replaced whole after every connect or update.
#[derive(Clone, Debug, Default)]
pub(crate) struct Snapshot {
    pub(crate) context_id: u64,
    pub(crate) view_id: u64,
    /// The cluster as given (without an added local job).
    pub(crate) spec: Option<ClusterSpec>,
    pub(crate) full_spec: Option<ClusterSpec>,
    pub(crate) local_address: Option<String>,
    pub(crate) local_task: Option<TaskId>,
    /// How many of `devices` (the first ones) are this process's.
    pub(crate) local_devices: usize,
    /// The master's view: local devices first, then every remote task's, unfiltered.
    pub(crate) devices: Vec<(DeviceName, DeviceAttributes)>,
    /// Every remote task as connected: its address and channel, for running ops; its devices
    /// with their incarnations, for `check_alive`; what it was sent.
    pub(crate) members: BTreeMap<TaskId, Member>,
    pub(crate) rpc_timeout: Duration,
    pub(crate) default_device: Option<String>,
}

impl Snapshot {
    pub(crate) fn of(connection: &Connection) -> Self {
        let mut devices: Vec<(DeviceName, DeviceAttributes)> = connection
            .local
            .server
            .device_attributes()
            .into_iter()
            .filter_map(|a| a.name.parse().ok().map(|n| (n, a)))
            .collect();
        let local_devices = devices.len();
        for member in connection.members.values() {
            devices.extend(member.remote.devices.iter().cloned());
        }
        Self {
            context_id: connection.context_id,
            view_id: connection.view_id,
            spec: Some(connection.spec.clone()),
            full_spec: Some(connection.full_spec.clone()),
            local_address: Some(connection.local.address.clone()),
            local_task: Some(connection.local.task.clone()),
            local_devices,
            devices,
            members: connection.members.clone(),
            rpc_timeout: connection.options.rpc_timeout,
            default_device: connection.default_device.clone(),
        }
    }

    /// Fails for a handle from another context than this snapshot's.
    pub(crate) fn check_current(&self, handle: &DeviceHandle) -> Result<(), Error> {
        if self.context_id != handle.context_id() {
            return Err(self.stale(handle, Staleness::Reset));
        }
        Ok(())
    }

    /// The device `handle` names, if the handle is from this snapshot's context and an update
    /// did not remove its task. (A task replaced by a new process keeps its device names, as
    /// in TensorFlow; what it held is gone, which its tensors report.)
    pub(crate) fn attributes(&self, handle: &DeviceHandle) -> Result<&DeviceAttributes, Error> {
        self.check_current(handle)?;
        self.devices
            .iter()
            .find(|(_, a)| a.name == handle.name())
            .map(|(_, a)| a)
            .ok_or_else(|| self.stale(handle, Staleness::TaskRemoved))
    }

    fn stale(&self, handle: &DeviceHandle, cause: Staleness) -> Error {
        Error::StaleDevice {
            name: handle.name().to_owned(),
            handle_context: handle.context_id(),
            current_context: self.context_id,
            cause,
        }
    }
}
