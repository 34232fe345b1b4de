//! The devices a task serves: what [`LocalDevice`] holds and how it becomes TensorFlow's
//! `DeviceAttributes`.

use cluster_proto::{DeviceAttributes, DeviceLocality};
use device_filter::DeviceName;

use crate::server::ServerError;

/// TensorFlow's memory limit for a CPU device (`ThreadPoolDevice`): 256 MiB, the value a
/// `tf.distribute.Server` reports for `/device:CPU:0`.
pub const CPU_MEMORY_LIMIT: i64 = 256 << 20;

/// One device of this process, before it is named for a task.
///
/// A [`TaskServer`](crate::TaskServer) serves `CPU:0` always, plus the NVIDIA GPUs the host
/// shows ([`discover`]); set your own list with
/// [`TaskServerBuilder::devices`](crate::TaskServerBuilder::devices).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalDevice {
    /// The device type as TensorFlow writes it: `CPU`, `GPU`, … (`[A-Za-z][A-Za-z0-9_]*`).
    pub device_type: String,
    /// The device's index among the devices of its type, from 0.
    pub id: u32,
    /// Bytes TensorFlow would let this device allocate.
    pub memory_limit: i64,
    /// TensorFlow's free-form description (`device: 0, name: …, pci bus id: …, compute
    /// capability: …` for a GPU; empty for a CPU).
    pub physical_device_desc: String,
    /// `DeviceLocality.bus_id`: TensorFlow writes 1 + the NUMA node for a GPU, 0 for a CPU.
    pub bus_id: i32,
}

impl LocalDevice {
    /// `CPU:0` as TensorFlow reports it.
    pub fn cpu() -> Self {
        Self {
            device_type: "CPU".to_owned(),
            id: 0,
            memory_limit: CPU_MEMORY_LIMIT,
            physical_device_desc: String::new(),
            bus_id: 0,
        }
    }

    /// The device's full name on task `task` of `job` (replica `replica`).
    ///
    /// # Errors
    ///
    /// When the job or device type is not a valid device-name component.
    pub fn name(&self, job: &str, replica: u32, task: u32) -> Result<DeviceName, ServerError> {
        DeviceName::full(job, replica, task, &self.device_type, self.id).map_err(|source| {
            ServerError::InvalidDevice {
                device: format!("{}:{}", self.device_type, self.id),
                source,
            }
        })
    }

    /// TensorFlow's `DeviceAttributes` for this device on task `task` of `job`.
    pub(crate) fn attributes(&self, name: &DeviceName, incarnation: u64) -> DeviceAttributes {
        DeviceAttributes {
            name: name.to_string(),
            device_type: self.device_type.clone(),
            memory_limit: self.memory_limit,
            locality: Some(DeviceLocality {
                bus_id: self.bus_id,
                ..DeviceLocality::default()
            }),
            incarnation,
            physical_device_desc: self.physical_device_desc.clone(),
            // TensorFlow sends -1: no XLA global id assigned.
            xla_global_id: -1,
        }
    }
}

/// The devices of this host as TensorFlow would see them: `CPU:0`, then one `GPU:i` per NVIDIA
/// GPU that `nvidia-smi` lists and `CUDA_VISIBLE_DEVICES` (read from the process environment)
/// lets this process use. `nvidia-smi` runs under `timeout`, once per process (the answer is
/// kept); no `nvidia-smi` means no GPU.
///
/// # Errors
///
/// When `nvidia-smi` exists but fails, hangs past `timeout`, or prints what cannot be read.
pub async fn discover(timeout: std::time::Duration) -> Result<Vec<LocalDevice>, ServerError> {
    // A process's GPUs do not change while it runs: one `nvidia-smi` per process, however many
    // servers it starts (a failure is not kept, so a later start tries again).
    static DISCOVERED: tokio::sync::OnceCell<Vec<LocalDevice>> = tokio::sync::OnceCell::const_new();
    DISCOVERED
        .get_or_try_init(|| discover_now(timeout))
        .await
        .cloned()
}

async fn discover_now(timeout: std::time::Duration) -> Result<Vec<LocalDevice>, ServerError> {
    let visible =
        std::env::var_os("CUDA_VISIBLE_DEVICES").map(|v| v.to_string_lossy().into_owned());
    let gpus = crate::gpu::NvidiaSmi::new(timeout)
        .query()
        .await?
        .map(|gpus| crate::gpu::visible(&gpus, visible.as_deref()))
        .unwrap_or_default();
    Ok(std::iter::once(LocalDevice::cpu()).chain(gpus).collect())
}

/// Checks that every device name is valid for `job`/`task` and appears once.
pub(crate) fn check_unique(devices: &[LocalDevice]) -> Result<(), ServerError> {
    let mut seen = std::collections::HashSet::new();
    for device in devices {
        // Validates the type's grammar with a placeholder job.
        device.name("localhost", 0, 0)?;
        if !seen.insert((device.device_type.as_str(), device.id)) {
            return Err(ServerError::DuplicateDevice {
                device: format!("{}:{}", device.device_type, device.id),
            });
        }
    }
    Ok(())
}
