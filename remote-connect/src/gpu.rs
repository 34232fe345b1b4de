//! NVIDIA GPUs through `nvidia-smi`, under a deadline, described the way TensorFlow describes
//! them, and filtered by `CUDA_VISIBLE_DEVICES` as the CUDA driver filters them.
//!
//! `nvidia-smi` rather than NVML: it needs no `unsafe` library loading in this crate (which
//! forbids `unsafe`), and a hung driver is contained in a child process that is killed at the
//! deadline.

use std::io::ErrorKind;
use std::process::Stdio;
use std::time::Duration;

use crate::devices::LocalDevice;
use crate::server::ServerError;

/// The query: one CSV line per GPU.
const QUERY: &str = "index,uuid,name,pci.bus_id,memory.free,compute_cap";

/// One GPU as `nvidia-smi` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Gpu {
    pub(crate) index: u32,
    pub(crate) uuid: String,
    pub(crate) name: String,
    /// `00000000:3B:00.0` as nvidia-smi prints it.
    pub(crate) pci_bus_id: String,
    pub(crate) memory_free_mib: u64,
    pub(crate) compute_capability: (u32, u32),
}

/// How `nvidia-smi` is run.
pub(crate) struct NvidiaSmi {
    program: String,
    timeout: Duration,
}

impl NvidiaSmi {
    /// The `nvidia-smi` on `PATH`.
    pub(crate) fn new(timeout: Duration) -> Self {
        Self::with_program("nvidia-smi", timeout)
    }

    pub(crate) fn with_program(program: &str, timeout: Duration) -> Self {
        Self {
            program: program.to_owned(),
            timeout,
        }
    }

    /// Every GPU of the host; `None` when `nvidia-smi` is not installed.
    pub(crate) async fn query(&self) -> Result<Option<Vec<Gpu>>, ServerError> {
        let child = tokio::process::Command::new(&self.program)
            .arg(format!("--query-gpu={QUERY}"))
            .arg("--format=csv,noheader,nounits")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn();
        let child = match child {
            Ok(child) => child,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(ServerError::NvidiaSmi {
                    program: self.program.clone(),
                    reason: source.to_string(),
                });
            }
        };
        let output = match tokio::time::timeout(self.timeout, child.wait_with_output()).await {
            Ok(Ok(output)) => output,
            Ok(Err(source)) => {
                return Err(ServerError::NvidiaSmi {
                    program: self.program.clone(),
                    reason: source.to_string(),
                });
            }
            Err(_) => {
                return Err(ServerError::NvidiaSmi {
                    program: self.program.clone(),
                    reason: format!("no answer within {:?} (killed)", self.timeout),
                });
            }
        };
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        if !output.status.success() {
            // A driver without GPUs answers so; that host simply has none.
            if stdout.contains("No devices were found") || stderr.contains("No devices were found")
            {
                return Ok(Some(Vec::new()));
            }
            return Err(ServerError::NvidiaSmi {
                program: self.program.clone(),
                reason: format!("{}: {}", output.status, tail(&format!("{stdout}{stderr}"))),
            });
        }
        parse(&stdout)
            .map(Some)
            .map_err(|reason| ServerError::NvidiaSmi {
                program: self.program.clone(),
                reason,
            })
    }
}

/// The last few hundred bytes of a tool's output, for an error message.
fn tail(s: &str) -> &str {
    let s = s.trim();
    let mut start = s.len().saturating_sub(300);
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

/// Parses the CSV lines of [`QUERY`].
pub(crate) fn parse(csv: &str) -> Result<Vec<Gpu>, String> {
    csv.lines()
        .filter(|line| !line.trim().is_empty())
        .enumerate()
        .map(|(n, line)| {
            parse_line(line).ok_or_else(|| format!("line {}: cannot read {:?}", n + 1, tail(line)))
        })
        .collect()
}

fn parse_line(line: &str) -> Option<Gpu> {
    let fields: Vec<&str> = line.split(',').map(str::trim).collect();
    let [index, uuid, name, bus, free, cc] = fields.as_slice() else {
        return None;
    };
    let (major, minor) = cc.split_once('.')?;
    Some(Gpu {
        index: index.parse().ok()?,
        uuid: (*uuid).to_owned(),
        name: (*name).to_owned(),
        pci_bus_id: (*bus).to_owned(),
        memory_free_mib: free.parse().ok()?,
        compute_capability: (major.parse().ok()?, minor.parse().ok()?),
    })
}

/// The GPUs this process may use, in CUDA's order, as TensorFlow's devices `GPU:0..n`.
///
/// `CUDA_VISIBLE_DEVICES` unset means every GPU; otherwise its comma-separated entries are GPU
/// indices or (prefixes of) UUIDs, and, as in the CUDA driver, the list ends at the first
/// entry that names no GPU or names one a second time (`""` and `-1` hide every GPU).
pub(crate) fn visible(gpus: &[Gpu], cuda_visible_devices: Option<&str>) -> Vec<LocalDevice> {
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
pub(crate) fn min_system_memory(available: i64, cc_major: u32) -> i64 {
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

fn tensorflow_gpu(gpu: &Gpu, id: u32) -> LocalDevice {
    let free = i64::try_from(gpu.memory_free_mib.saturating_mul(1 << 20)).unwrap_or(i64::MAX);
    let (major, minor) = gpu.compute_capability;
    LocalDevice {
        device_type: "GPU".to_owned(),
        id,
        memory_limit: (free - min_system_memory(free, major)).max(0),
        physical_device_desc: format!(
            "device: {id}, name: {}, pci bus id: {}, compute capability: {major}.{minor}",
            gpu.name,
            cuda_bus_id(&gpu.pci_bus_id)
        ),
        // NUMA node unknown to nvidia-smi's CSV: TensorFlow then uses bus 1.
        bus_id: 1,
    }
}

/// CUDA's form of a PCI bus id (`0000:3b:00.0`) from nvidia-smi's (`00000000:3B:00.0`).
fn cuda_bus_id(nvidia_smi: &str) -> String {
    let lower = nvidia_smi.to_ascii_lowercase();
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

    const H100: &str = "0, GPU-1a2b3c4d-0000-1111-2222-333344445555, NVIDIA H100 80GB HBM3, 00000000:00:05.0, 81004, 9.0\n\
                        1, GPU-9f8e7d6c-0000-1111-2222-333344445555, NVIDIA H100 80GB HBM3, 00000000:00:06.0, 1500, 9.0\n";

    #[test]
    fn parses_nvidia_smi_csv() {
        let gpus = parse(H100).unwrap();
        assert_eq!(gpus.len(), 2);
        assert_eq!(gpus[0].name, "NVIDIA H100 80GB HBM3");
        assert_eq!(gpus[1].memory_free_mib, 1500);
        assert_eq!(gpus[0].compute_capability, (9, 0));
        assert!(parse("0, x, y\n").unwrap_err().contains("line 1"));
        assert!(parse("").unwrap().is_empty());
    }

    #[test]
    fn described_as_tensorflow_does() {
        let gpus = parse(H100).unwrap();
        let devices = visible(&gpus, None);
        assert_eq!(devices[0].device_type, "GPU");
        assert_eq!(
            devices[0].physical_device_desc,
            "device: 0, name: NVIDIA H100 80GB HBM3, pci bus id: 0000:00:05.0, compute capability: 9.0"
        );
        assert_eq!(devices[0].memory_limit, (81004 - 1536) << 20);
        // Under 2 GiB free: the small reserve.
        assert_eq!(devices[1].memory_limit, (1500 - 225) << 20);
    }

    #[test]
    fn cuda_visible_devices_orders_and_truncates() {
        let gpus = parse(H100).unwrap();
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
