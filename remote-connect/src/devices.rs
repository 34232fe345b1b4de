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
    discover_with(&crate::gpu::NvidiaSmi::new(timeout), visible.as_deref()).await
}

/// Discovery with a given `nvidia-smi` and `CUDA_VISIBLE_DEVICES` value.
async fn discover_with(
    nvidia_smi: &crate::gpu::NvidiaSmi,
    cuda_visible_devices: Option<&str>,
) -> Result<Vec<LocalDevice>, ServerError> {
    let gpus = nvidia_smi
        .query()
        .await?
        .map(|gpus| crate::gpu::visible(&gpus, cuda_visible_devices))
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

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;
    use std::time::Duration;

    use super::*;
    use crate::gpu::NvidiaSmi;

    /// A fake `nvidia-smi`: a shell script with `body`, in a fresh temporary directory.
    fn fake(name: &str, body: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "remote-connect-{name}-{}-{}",
            std::process::id(),
            crate::ids::random_nonzero_u64()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("nvidia-smi");
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn gpus_from_nvidia_smi_after_cuda_visible_devices() {
        let smi = fake(
            "two",
            "echo '0, GPU-aaaa, NVIDIA H100 80GB HBM3, 00000000:00:05.0, 81000, 9.0'\n\
             echo '1, GPU-bbbb, NVIDIA H100 80GB HBM3, 00000000:00:06.0, 81000, 9.0'",
        );
        let nvidia_smi = NvidiaSmi::with_program(smi.to_str().unwrap(), Duration::from_secs(10));
        let devices = runtime()
            .block_on(discover_with(&nvidia_smi, None))
            .unwrap();
        let names: Vec<String> = devices
            .iter()
            .map(|d| format!("{}:{}", d.device_type, d.id))
            .collect();
        assert_eq!(names, ["CPU:0", "GPU:0", "GPU:1"]);
        let devices = runtime()
            .block_on(discover_with(&nvidia_smi, Some("1")))
            .unwrap();
        assert_eq!(devices.len(), 2);
        assert!(devices[1].physical_device_desc.contains("00:06.0"));
        assert!(devices[1].physical_device_desc.starts_with("device: 0,"));
    }

    #[test]
    fn no_nvidia_smi_or_no_gpu_is_cpu_only() {
        let missing = NvidiaSmi::with_program("/nonexistent/nvidia-smi", Duration::from_secs(1));
        let devices = runtime().block_on(discover_with(&missing, None)).unwrap();
        assert_eq!(devices, [LocalDevice::cpu()]);
        let none = fake("none", "echo 'No devices were found'; exit 6");
        let none = NvidiaSmi::with_program(none.to_str().unwrap(), Duration::from_secs(10));
        assert_eq!(
            runtime().block_on(discover_with(&none, None)).unwrap(),
            [LocalDevice::cpu()]
        );
    }

    #[test]
    fn a_hung_nvidia_smi_is_killed_at_the_deadline() {
        let hung = fake("hung", "sleep 30");
        let hung = NvidiaSmi::with_program(hung.to_str().unwrap(), Duration::from_millis(300));
        let started = std::time::Instant::now();
        let err = runtime().block_on(discover_with(&hung, None)).unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(err.to_string().contains("no answer within"), "{err}");
        let broken = fake("broken", "echo 'driver mismatch' >&2; exit 9");
        let broken = NvidiaSmi::with_program(broken.to_str().unwrap(), Duration::from_secs(10));
        let err = runtime()
            .block_on(discover_with(&broken, None))
            .unwrap_err();
        assert!(err.to_string().contains("driver mismatch"), "{err}");
    }
}
