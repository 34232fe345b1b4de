//! What the driver reports, as TensorFlow shows it: the GPUs `CUDA_VISIBLE_DEVICES` lets a
//! process use, renumbered `GPU:0..n`, with TensorFlow's `memory_limit`,
//! `physical_device_desc` and locality bus id.

use super::Gpu;

/// One GPU as TensorFlow lists it for this process (`tf.config.list_logical_devices` /
/// `DeviceAttributes`), from [`visible`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VisibleGpu {
    /// TensorFlow's id, `GPU:<id>`: the GPU's place in `CUDA_VISIBLE_DEVICES`' order.
    pub id: u32,
    /// Bytes TensorFlow would let the device allocate: its free memory less TensorFlow's
    /// reserve ([`min_system_memory`]).
    pub memory_limit: i64,
    /// `device: <id>, name: <name>, pci bus id: <0000:3b:00.0>, compute capability: <9.0>`.
    pub physical_device_desc: String,
    /// `DeviceLocality.bus_id`: 1 + the GPU's NUMA node, 1 when unknown (TensorFlow's rule).
    pub bus_id: i32,
}

/// The GPUs this process may use, in CUDA's order, as TensorFlow's devices `GPU:0..n`.
///
/// `CUDA_VISIBLE_DEVICES` unset means every GPU; otherwise its comma-separated entries are GPU
/// indices or (unambiguous prefixes of) `GPU-…` UUIDs, and, as in the CUDA driver, the list
/// ends at the first entry that names no GPU or names one a second time (`""` and `-1` hide
/// every GPU).
pub fn visible(gpus: &[Gpu], cuda_visible_devices: Option<&str>) -> Vec<VisibleGpu> {
    let chosen: Vec<&Gpu> = match cuda_visible_devices {
        None => gpus.iter().collect(),
        Some(list) => {
            let mut chosen: Vec<&Gpu> = Vec::new();
            for entry in list.split(',').map(str::trim) {
                let found = match entry.parse::<u32>() {
                    Ok(index) => gpus.iter().find(|g| g.index == index),
                    Err(_) if entry.starts_with("GPU-") => {
                        let mut matches = gpus.iter().filter(|g| g.uuid.starts_with(entry));
                        match (matches.next(), matches.next()) {
                            (Some(gpu), None) => Some(gpu),
                            _ => None,
                        }
                    }
                    Err(_) => None,
                };
                match found {
                    Some(gpu) if !chosen.iter().any(|c| c.index == gpu.index) => chosen.push(gpu),
                    _ => break,
                }
            }
            chosen
        }
    };
    chosen
        .into_iter()
        .zip(0u32..)
        .map(|(gpu, id)| tensorflow_gpu(gpu, id))
        .collect()
}

/// TensorFlow's reserve for the driver and other processes (`MinSystemMemory` in
/// `gpu_device.cc`): 225 MiB below 2 GiB free, else 500 MiB up to compute capability 6.x,
/// 1050 MiB for 7.x and 1536 MiB from 8.0.
pub fn min_system_memory(available: i64, cc_major: u32) -> i64 {
    const MIB: i64 = 1 << 20;
    if available < (1 << 31) {
        225 * MIB
    } else if cc_major <= 6 {
        500 * MIB
    } else if cc_major <= 7 {
        1050 * MIB
    } else {
        1536 * MIB
    }
}

fn tensorflow_gpu(gpu: &Gpu, id: u32) -> VisibleGpu {
    let free = i64::try_from(gpu.memory_free).unwrap_or(i64::MAX);
    let (major, minor) = gpu.compute_capability;
    VisibleGpu {
        id,
        memory_limit: (free - min_system_memory(free, major)).max(0),
        physical_device_desc: format!(
            "device: {id}, name: {}, pci bus id: {}, compute capability: {major}.{minor}",
            gpu.name,
            cuda_bus_id(&gpu.pci_bus_id)
        ),
        bus_id: gpu
            .numa_node
            .and_then(|n| i32::try_from(n).ok())
            .map_or(1, |n| n.saturating_add(1)),
    }
}

/// CUDA's form of a PCI bus id (`0000:3b:00.0`) from the driver's (`00000000:3B:00.0`).
fn cuda_bus_id(driver: &str) -> String {
    let lower = driver.to_ascii_lowercase();
    match lower.split_once(':') {
        Some((domain, rest)) if domain.len() > 4 => {
            format!("{}:{rest}", &domain[domain.len() - 4..])
        }
        _ => lower,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h100(index: u32, uuid: &str, bus: &str, free_mib: u64) -> Gpu {
        Gpu {
            index,
            uuid: uuid.to_owned(),
            name: "NVIDIA H100 80GB HBM3".to_owned(),
            pci_bus_id: bus.to_owned(),
            memory_free: free_mib << 20,
            compute_capability: (9, 0),
            numa_node: None,
        }
    }

    fn two() -> Vec<Gpu> {
        vec![
            h100(
                0,
                "GPU-1a2b3c4d-0000-1111-2222-333344445555",
                "00000000:00:05.0",
                81004,
            ),
            h100(
                1,
                "GPU-9f8e7d6c-0000-1111-2222-333344445555",
                "00000000:00:06.0",
                1500,
            ),
        ]
    }

    #[test]
    fn described_as_tensorflow_does() {
        let devices = visible(&two(), None);
        assert_eq!(
            devices[0].physical_device_desc,
            "device: 0, name: NVIDIA H100 80GB HBM3, pci bus id: 0000:00:05.0, compute capability: 9.0"
        );
        assert_eq!(devices[0].memory_limit, (81004 - 1536) << 20);
        // Under 2 GiB free: the small reserve.
        assert_eq!(devices[1].memory_limit, (1500 - 225) << 20);
        assert_eq!(devices[0].bus_id, 1);
        let mut on_node_1 = two();
        on_node_1[0].numa_node = Some(1);
        assert_eq!(visible(&on_node_1, None)[0].bus_id, 2);
    }

    #[test]
    fn cuda_visible_devices_orders_and_truncates() {
        let gpus = two();
        let ids = |v: &str| -> Vec<String> {
            visible(&gpus, Some(v))
                .iter()
                .map(|d| d.physical_device_desc.clone())
                .collect()
        };
        let d = ids("1,0");
        assert_eq!(d.len(), 2);
        assert!(d[0].starts_with("device: 0,") && d[0].contains("00:06.0"));
        assert!(ids("").is_empty());
        assert!(ids("-1").is_empty());
        assert_eq!(
            ids("0,7,1").len(),
            1,
            "the list ends at the first unknown GPU"
        );
        assert_eq!(ids("0,0").len(), 1);
        assert_eq!(ids("GPU-9f8e").len(), 1);
        assert!(ids("GPU-").is_empty(), "an ambiguous prefix names no GPU");
    }

    #[test]
    fn reserve_follows_compute_capability() {
        let gib = 1i64 << 30;
        assert_eq!(min_system_memory(gib, 9), 225 << 20);
        assert_eq!(min_system_memory(4 * gib, 6), 500 << 20);
        assert_eq!(min_system_memory(4 * gib, 7), 1050 << 20);
        assert_eq!(min_system_memory(4 * gib, 8), 1536 << 20);
    }
}
