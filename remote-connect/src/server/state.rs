//! What every service of one server shares: its name, its devices and its contexts.

use cluster_proto::DeviceAttributes;
use device_filter::DeviceName;
use tonic::Status;

use super::contexts::{Contexts, Install};
use super::identity::{self, Claim, Identity};
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

    /// What a create or full update request installs: the identity `claim` gives this server,
    /// and the names of the devices the client sent.
    pub(crate) fn install(
        &self,
        claim: Option<Claim>,
        cluster: Vec<bytes::Bytes>,
    ) -> Result<Install, Status> {
        let identity = identity::adopt(claim, &self.own)?;
        let own = self.named(&identity)?;
        Ok(Install {
            identity,
            own,
            cluster,
        })
    }

    /// `CreateContext`, whichever way the request was decoded: TensorFlow's rules for the id
    /// and view, then the context installed. Returns this server's devices under the adopted
    /// name.
    pub(crate) fn create_context(
        &self,
        id: u64,
        view_id: u64,
        keep_alive_secs: i64,
        claim: Option<Claim>,
        cluster: Vec<bytes::Bytes>,
        clear_existing: bool,
    ) -> Result<Vec<DeviceAttributes>, Status> {
        self.contexts.check_create(id, view_id)?;
        if clear_existing {
            // `clear_existing_contexts`: the client starts over on this worker.
            self.contexts.clear();
        }
        let install = self.install(claim, cluster)?;
        let devices = install.own.iter().map(|(_, a)| a.clone()).collect();
        self.contexts
            .create(id, view_id, keep_alive_secs, install)?;
        Ok(devices)
    }
}
