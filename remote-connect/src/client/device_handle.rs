//! [`DeviceHandle`]: how a caller names a device of the connected cluster, tied to the remote
//! context it was found in.

/// A device of the connected cluster, valid until the next full reconnect, or until an update
/// removes the device's task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceHandle {
    name: String,
    context_id: u64,
}

impl DeviceHandle {
    pub(super) fn new(name: String, context_id: u64) -> Self {
        Self { name, context_id }
    }

    /// The device's full name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The remote context the handle belongs to.
    pub fn context_id(&self) -> u64 {
        self.context_id
    }
}
