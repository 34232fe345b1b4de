//! [`DeviceHandle`]: how a caller names a device of the connected cluster, tied to the remote
//! context it was found in and to the device's incarnation.

/// A device of the connected cluster, valid until the next full reconnect, or until an update
/// removes or replaces the device's task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceHandle {
    name: String,
    context_id: u64,
    /// The device's incarnation when the handle was made: a task that restarted at the same
    /// address has new ones.
    incarnation: u64,
}

impl DeviceHandle {
    pub(super) fn new(name: String, context_id: u64, incarnation: u64) -> Self {
        Self {
            name,
            context_id,
            incarnation,
        }
    }

    /// The device's full name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The remote context the handle belongs to.
    pub fn context_id(&self) -> u64 {
        self.context_id
    }

    pub(super) fn incarnation(&self) -> u64 {
        self.incarnation
    }
}
