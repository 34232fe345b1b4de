//! The devices a task serves: what [`LocalDevice`] holds and how it becomes TensorFlow's
//! `DeviceAttributes`.

use std::sync::Arc;
use std::time::Duration;

use cluster_proto::{DeviceAttributes, DeviceLocality};
use cluster_resolver::gpus::{self, GpuSource};
use device_filter::DeviceName;

use crate::server::ServerError;

/// TensorFlow's memory limit for a CPU device (`ThreadPoolDevice`): 256 MiB, the value a
/// `tf.distribute.Server` reports for `/device:CPU:0`.
pub const CPU_MEMORY_LIMIT: i64 = 256 << 20;

/// One device of this process, before it is named for a task.
///
/// A [`TaskServer`](crate::TaskServer) serves `CPU:0` always, plus the NVIDIA GPUs the host
/// shows ([`discover`], through [`cluster_resolver::gpus`]); set your own list with
/// [`TaskServerBuilder::with_devices`](crate::TaskServerBuilder::with_devices).
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
/// GPU the driver reports and `CUDA_VISIBLE_DEVICES` (read from the process environment)
/// lets this process use ([`cluster_resolver::gpus::visible`]). The GPUs come from
/// [`cluster_resolver::gpus::host`]: NVML, else `nvidia-smi`, asked on a thread of their own
/// (never a runtime worker) under `timeout`, once per process (the answer is kept); no driver
/// means no GPU.
///
/// # Errors
///
/// [`ServerError::Gpus`] when the driver or `nvidia-smi` exists but fails, hangs past
/// `timeout`, or answers what cannot be read.
pub async fn discover(timeout: Duration) -> Result<Vec<LocalDevice>, ServerError> {
    let visible =
        std::env::var_os("CUDA_VISIBLE_DEVICES").map(|v| v.to_string_lossy().into_owned());
    discover_with(gpus::host(), timeout, visible.as_deref()).await
}

/// Discovery from a given GPU source and `CUDA_VISIBLE_DEVICES` value.
async fn discover_with(
    source: Arc<dyn GpuSource>,
    timeout: Duration,
    cuda_visible_devices: Option<&str>,
) -> Result<Vec<LocalDevice>, ServerError> {
    let what = source.name();
    let found = match tokio::time::timeout(timeout, gpus::gpus(source)).await {
        Ok(found) => found.map_err(ServerError::Gpus)?,
        Err(_) => return Err(ServerError::Gpus(gpus::Error::Timeout { what, timeout })),
    };
    let gpus = gpus::visible(&found, cuda_visible_devices)
        .into_iter()
        .map(|gpu| LocalDevice {
            device_type: "GPU".to_owned(),
            id: gpu.id,
            memory_limit: gpu.memory_limit,
            physical_device_desc: gpu.physical_device_desc,
            bus_id: gpu.bus_id,
        });
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

    use cluster_resolver::gpus::{FixedGpus, Gpu, NvidiaSmi};
    use cluster_spec::__private::error_chain::Chain;

    use super::*;

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

    const LONG: Duration = Duration::from_secs(30);

    fn smi(program: &str, timeout: Duration) -> Arc<dyn GpuSource> {
        Arc::new(NvidiaSmi::new(program, timeout))
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn gpus_from_nvidia_smi_after_cuda_visible_devices() {
        let script = fake(
            "two",
            "echo '0, GPU-aaaa, NVIDIA H100 80GB HBM3, 00000000:00:05.0, 81000, 9.0'\n\
             echo '1, GPU-bbbb, NVIDIA H100 80GB HBM3, 00000000:00:06.0, 81000, 9.0'",
        );
        let nvidia_smi = smi(script.to_str().unwrap(), Duration::from_secs(10));
        let devices = runtime()
            .block_on(discover_with(nvidia_smi.clone(), LONG, None))
            .unwrap();
        let names: Vec<String> = devices
            .iter()
            .map(|d| format!("{}:{}", d.device_type, d.id))
            .collect();
        assert_eq!(names, ["CPU:0", "GPU:0", "GPU:1"]);
        let devices = runtime()
            .block_on(discover_with(nvidia_smi.clone(), LONG, Some("1")))
            .unwrap();
        assert_eq!(devices.len(), 2);
        assert!(devices[1].physical_device_desc.contains("00:06.0"));
        assert!(devices[1].physical_device_desc.starts_with("device: 0,"));
    }

    #[test]
    fn no_nvidia_smi_or_no_gpu_is_cpu_only() {
        let missing = smi("/nonexistent/nvidia-smi", Duration::from_secs(1));
        let devices = runtime()
            .block_on(discover_with(missing, LONG, None))
            .unwrap();
        assert_eq!(devices, [LocalDevice::cpu()]);
        let none = fake("none", "echo 'No devices were found'; exit 6");
        let none = smi(none.to_str().unwrap(), Duration::from_secs(10));
        assert_eq!(
            runtime().block_on(discover_with(none, LONG, None)).unwrap(),
            [LocalDevice::cpu()]
        );
    }

    #[test]
    fn a_hung_nvidia_smi_is_killed_at_the_deadline() {
        let hung = fake("hung", "sleep 30");
        let hung = smi(hung.to_str().unwrap(), Duration::from_millis(300));
        let started = std::time::Instant::now();
        let err = runtime()
            .block_on(discover_with(hung, LONG, None))
            .unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(
            Chain(&err)
                .to_string()
                .contains("did not answer within 300ms"),
            "{err}"
        );
        let broken = fake("broken", "echo 'driver mismatch' >&2; exit 9");
        let broken = smi(broken.to_str().unwrap(), Duration::from_secs(10));
        let err = runtime()
            .block_on(discover_with(broken, LONG, None))
            .unwrap_err();
        assert!(Chain(&err).to_string().contains("driver mismatch"), "{err}");
    }

    #[test]
    fn a_fake_driver_is_listed_as_tensorflow_lists_it() {
        let h100 = Gpu {
            index: 0,
            uuid: "GPU-1a2b".to_owned(),
            name: "NVIDIA H100 80GB HBM3".to_owned(),
            pci_bus_id: "00000000:00:05.0".to_owned(),
            memory_free: 81004 << 20,
            compute_capability: (9, 0),
            numa_node: Some(0),
        };
        let devices = runtime()
            .block_on(discover_with(Arc::new(FixedGpus(vec![h100])), LONG, None))
            .unwrap();
        assert_eq!(
            devices[1],
            LocalDevice {
                device_type: "GPU".to_owned(),
                id: 0,
                memory_limit: (81004 - 1536) << 20,
                physical_device_desc: "device: 0, name: NVIDIA H100 80GB HBM3, pci bus id: \
                                       0000:00:05.0, compute capability: 9.0"
                    .to_owned(),
                bus_id: 1,
            }
        );
    }

    #[test]
    fn a_hung_driver_does_not_block_the_runtime() {
        /// A driver that never answers within the deadline.
        #[derive(Debug)]
        struct Hung;
        impl GpuSource for Hung {
            fn count(&self) -> Result<gpus::Count, gpus::Error> {
                std::thread::sleep(Duration::from_secs(5));
                Ok(gpus::Count::nvidia_smi(0))
            }
            fn gpus(&self) -> Result<Vec<Gpu>, gpus::Error> {
                std::thread::sleep(Duration::from_secs(5));
                Ok(Vec::new())
            }
            fn timeout(&self) -> Duration {
                Duration::from_secs(30)
            }
            fn name(&self) -> String {
                "NVML".to_owned()
            }
        }
        // One runtime thread: a blocking driver call would stop the ticker too.
        let started = std::time::Instant::now();
        let (err, ticks) = runtime().block_on(async {
            let ticker = tokio::spawn(async {
                let mut ticks = 0;
                for _ in 0..5 {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    ticks += 1;
                }
                ticks
            });
            let err = discover_with(Arc::new(Hung), Duration::from_millis(300), None)
                .await
                .unwrap_err();
            (err, ticker.await.unwrap())
        });
        assert_eq!(ticks, 5);
        assert!(started.elapsed() < Duration::from_secs(3));
        assert!(
            Chain(&err)
                .to_string()
                .contains("NVML did not answer within 300ms"),
            "{err}"
        );
    }
}
