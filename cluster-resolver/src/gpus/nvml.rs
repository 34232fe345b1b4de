//! The GPUs NVML (the NVIDIA Management Library, `libnvidia-ml.so.1`, what `nvidia-smi`
//! itself reads) reports, through the `nvml-wrapper` crate. The library is loaded when asked,
//! not linked: a host without it has no NVML, and [`Nvml::load`] says so with `None`.

use nvml_wrapper::error::NvmlError;

use super::Error;
use super::gpu::Gpu;

/// NVML, loaded from `libnvidia-ml.so.1`.
pub(crate) struct Nvml(nvml_wrapper::Nvml);

impl std::fmt::Debug for Nvml {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Nvml")
    }
}

/// Errors that mean there is no usable NVML on this host (no library, no symbols, no driver),
/// as opposed to an NVML that failed.
fn absent(e: &NvmlError) -> bool {
    matches!(
        e,
        NvmlError::LibloadingError(_)
            | NvmlError::FailedToLoadSymbol(_)
            | NvmlError::DriverNotLoaded
            | NvmlError::LibraryNotFound
            | NvmlError::FunctionNotFound
    )
}

fn failed(call: &'static str) -> impl FnOnce(NvmlError) -> Error {
    move |source| Error::Nvml {
        call,
        source: super::NvmlError(source),
    }
}

impl Nvml {
    /// Loads and initializes NVML; `None` when the host has no NVML (no library, or no
    /// NVIDIA driver loaded).
    pub(crate) fn load() -> Result<Option<Self>, Error> {
        match nvml_wrapper::Nvml::init() {
            Ok(nvml) => Ok(Some(Self(nvml))),
            Err(e) if absent(&e) => Ok(None),
            Err(e) => Err(failed("nvmlInit")(e)),
        }
    }

    /// How many GPUs the driver has (MIG instances do not count: `nvidia-smi --list-gpus`'s
    /// `GPU` lines).
    pub(crate) fn count(&self) -> Result<u32, Error> {
        self.0.device_count().map_err(failed("nvmlDeviceGetCount"))
    }

    /// Every GPU, in NVML's index order.
    pub(crate) fn gpus(&self) -> Result<Vec<Gpu>, Error> {
        (0..self.count()?)
            .map(|index| {
                let device = self
                    .0
                    .device_by_index(index)
                    .map_err(failed("nvmlDeviceGetHandleByIndex"))?;
                let cc = device
                    .cuda_compute_capability()
                    .map_err(failed("nvmlDeviceGetCudaComputeCapability"))?;
                Ok(Gpu {
                    index,
                    uuid: device.uuid().map_err(failed("nvmlDeviceGetUUID"))?,
                    name: device.name().map_err(failed("nvmlDeviceGetName"))?,
                    pci_bus_id: device
                        .pci_info()
                        .map_err(failed("nvmlDeviceGetPciInfo"))?
                        .bus_id,
                    memory_free: device
                        .memory_info()
                        .map_err(failed("nvmlDeviceGetMemoryInfo"))?
                        .free,
                    compute_capability: (
                        u32::try_from(cc.major).unwrap_or(0),
                        u32::try_from(cc.minor).unwrap_or(0),
                    ),
                    // Not every driver answers (NotSupported, or no such symbol): unknown.
                    numa_node: device.numa_node_id().ok(),
                })
            })
            .collect()
    }
}
