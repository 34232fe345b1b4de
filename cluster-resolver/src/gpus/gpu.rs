//! [`Gpu`]: one GPU as every source reports it.

/// One GPU as the driver reports it (NVML, or `nvidia-smi`'s CSV query).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gpu {
    /// The driver's index (NVML's, which `nvidia-smi` and `CUDA_VISIBLE_DEVICES` ordinals
    /// use).
    pub index: u32,
    /// `GPU-8f1c2d3e-…`.
    pub uuid: String,
    /// `NVIDIA H100 80GB HBM3`.
    pub name: String,
    /// The PCI bus id as the driver writes it, `00000000:3B:00.0`.
    pub pci_bus_id: String,
    /// Free memory, in bytes.
    pub memory_free: u64,
    /// CUDA compute capability, `(9, 0)`.
    pub compute_capability: (u32, u32),
    /// The NUMA node the GPU is attached to, when the driver says.
    pub numa_node: Option<u32>,
}
