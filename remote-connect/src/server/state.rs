//! What every service of one server shares: its name, its devices and its contexts.

use cluster_proto::DeviceAttributes;
use device_filter::DeviceName;
use tonic::Status;

use super::contexts::{Contexts, Install};
use super::identity::{self, Identity};
use crate::devices::LocalDevice;

pub(crate) struct TaskState {
    /// The name the server was started with (what GetStatus reports).
    pub(crate) own: Identity,
    pub(crate) devices: Vec<LocalDevice>,
    /// One per device, drawn when the server starts.
    pub(crate) incarnations: Vec<u64>,
    pub(crate) contexts: Contexts,
}

impl TaskState {
    /// This server's devices named for `identity`.
    pub(crate) fn named(
        &self,
        identity: &Identity,
    ) -> Result<Vec<(DeviceName, DeviceAttributes)>, Status> {
        self.devices
            .iter()
            .zip(&self.incarnations)
            .map(|(device, &incarnation)| {
                let name = device
                    .name(&identity.job, identity.replica, identity.task)
                    .map_err(|e| Status::invalid_argument(e.to_string()))?;
                let attributes = device.attributes(&name, incarnation);
                Ok((name, attributes))
            })
            .collect()
    }

    /// The devices of this server under its own name, for GetStatus.
    pub(crate) fn own_attributes(&self) -> Vec<DeviceAttributes> {
        // Validated when the server started, so naming cannot fail here.
        self.named(&self.own)
            .map(|list| list.into_iter().map(|(_, a)| a).collect())
            .unwrap_or_default()
    }

    /// What a create or full update request installs.
    pub(crate) fn install(
        &self,
        server_def: Option<cluster_proto::ServerDef>,
        cluster_devices: Vec<DeviceAttributes>,
    ) -> Result<Install, Status> {
        let identity = identity::adopt(server_def, &self.own)?;
        let own = self.named(&identity)?;
        let cluster = cluster_devices.into_iter().map(|d| d.name).collect();
        Ok(Install {
            identity,
            own,
            cluster,
        })
    }
}
