//! Where a host's GPUs are read from: [`GpuSource`], with NVML, `nvidia-smi` and a fixed
//! list behind it, and the process's own host ([`host`]: NVML, else `nvidia-smi`).

use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use super::gpu::Gpu;
use super::nvml::Nvml;
use super::{Error, NvidiaSmi};

/// How many GPUs a source counted, and which source it was, for messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Count {
    /// The number of GPUs.
    pub gpus: u32,
    /// Who counted: `NVML`, `nvidia-smi --list-gpus`, …
    pub origin: &'static str,
}

impl Count {
    /// `gpus` as `nvidia-smi --list-gpus` counted them.
    pub fn nvidia_smi(gpus: u32) -> Self {
        Self {
            gpus,
            origin: NVIDIA_SMI_ORIGIN,
        }
    }
}

/// [`Count::origin`] of `nvidia-smi`.
const NVIDIA_SMI_ORIGIN: &str = "nvidia-smi --list-gpus";
/// [`Count::origin`] of NVML.
const NVML_ORIGIN: &str = "NVML";

/// Something that reports a host's GPUs: NVML, `nvidia-smi`, or a fixed list (tests, or a
/// host described by hand). Its methods block (a driver can hang); async code asks through
/// [`count`](super::count) and [`gpus`](super::gpus), which run them on a thread of their
/// own under [`timeout`](Self::timeout).
pub trait GpuSource: fmt::Debug + Send + Sync {
    /// How many GPUs the host has (no driver at all is zero).
    fn count(&self) -> Result<Count, Error>;
    /// Every GPU of the host, in the driver's index order (no driver at all is none).
    fn gpus(&self) -> Result<Vec<Gpu>, Error>;
    /// How long one question may take.
    fn timeout(&self) -> Duration;
    /// What this source is called in a deadline's message.
    fn name(&self) -> String;
    /// The count, when it is known without asking (a cached answer).
    fn known_count(&self) -> Option<Count> {
        None
    }
    /// The GPUs, when they are known without asking (a cached answer).
    fn known_gpus(&self) -> Option<Vec<Gpu>> {
        None
    }
}

impl GpuSource for NvidiaSmi {
    fn count(&self) -> Result<Count, Error> {
        self.count_gpus().map(Count::nvidia_smi)
    }

    fn gpus(&self) -> Result<Vec<Gpu>, Error> {
        NvidiaSmi::gpus(self)
    }

    fn timeout(&self) -> Duration {
        NvidiaSmi::timeout(self)
    }

    fn name(&self) -> String {
        self.program()
    }
}

/// A fixed list of GPUs: a fake driver for tests, or a host described by hand.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FixedGpus(pub Vec<Gpu>);

impl GpuSource for FixedGpus {
    fn count(&self) -> Result<Count, Error> {
        Ok(Count {
            gpus: u32::try_from(self.0.len()).unwrap_or(u32::MAX),
            origin: "the given GPUs",
        })
    }

    fn gpus(&self) -> Result<Vec<Gpu>, Error> {
        Ok(self.0.clone())
    }

    fn timeout(&self) -> Duration {
        Duration::from_secs(1)
    }

    fn name(&self) -> String {
        "the given GPUs".to_owned()
    }

    fn known_count(&self) -> Option<Count> {
        self.count().ok()
    }

    fn known_gpus(&self) -> Option<Vec<Gpu>> {
        Some(self.0.clone())
    }
}

/// This host's GPUs: NVML when `libnvidia-ml.so.1` loads (and a driver runs), else
/// `nvidia-smi` from `PATH` (which finds none where NVML is missing, unless it is a fake or
/// an unusual install), else none. Where NVML loads but a call it needs fails, `nvidia-smi`
/// is asked too before NVML's error is returned. Each answer is asked once per process and kept: a
/// process's GPUs do not change while it runs. A failure is not kept, so a later question
/// asks again. Get it with [`host`].
#[derive(Debug)]
pub struct HostGpus {
    nvidia_smi: NvidiaSmi,
    /// NVML, loaded once (its initialization is most of a question's time: about 23 ms on an
    /// H100 host), or `None` when the host has none.
    nvml: OnceLock<Option<Nvml>>,
    count: OnceLock<Count>,
    gpus: OnceLock<Vec<Gpu>>,
}

/// This process's host's GPUs (see [`HostGpus`]), shared by everything in the process.
pub fn host() -> Arc<HostGpus> {
    static HOST: OnceLock<Arc<HostGpus>> = OnceLock::new();
    HOST.get_or_init(|| {
        Arc::new(HostGpus {
            nvidia_smi: NvidiaSmi::default(),
            nvml: OnceLock::new(),
            count: OnceLock::new(),
            gpus: OnceLock::new(),
        })
    })
    .clone()
}

impl HostGpus {
    /// NVML, loaded on the first question; a failed load is not kept.
    fn nvml(&self) -> Result<Option<&Nvml>, Error> {
        if let Some(loaded) = self.nvml.get() {
            return Ok(loaded.as_ref());
        }
        let loaded = Nvml::load()?;
        Ok(self.nvml.get_or_init(|| loaded).as_ref())
    }
}

impl GpuSource for HostGpus {
    fn count(&self) -> Result<Count, Error> {
        if let Some(&count) = self.count.get() {
            return Ok(count);
        }
        let count = match self.nvml()? {
            Some(nvml) => Count {
                gpus: nvml.count()?,
                origin: NVML_ORIGIN,
            },
            None => Count::nvidia_smi(self.nvidia_smi.count_gpus()?),
        };
        Ok(*self.count.get_or_init(|| count))
    }

    fn gpus(&self) -> Result<Vec<Gpu>, Error> {
        if let Some(gpus) = self.gpus.get() {
            return Ok(gpus.clone());
        }
        let gpus = match self.nvml()? {
            // An NVML call this driver lacks (an old one without `nvmlDeviceGetMemoryInfo_v2`,
            // say) need not hide the GPUs `nvidia-smi` can still list; if it lists none,
            // NVML's error is the story.
            Some(nvml) => match nvml.gpus() {
                Ok(gpus) => gpus,
                Err(nvml_error) => match self.nvidia_smi.gpus() {
                    Ok(gpus) if !gpus.is_empty() => gpus,
                    _ => return Err(nvml_error),
                },
            },
            None => self.nvidia_smi.gpus()?,
        };
        Ok(self.gpus.get_or_init(|| gpus).clone())
    }

    fn timeout(&self) -> Duration {
        self.nvidia_smi.timeout()
    }

    fn name(&self) -> String {
        "NVML (or nvidia-smi)".to_owned()
    }

    fn known_count(&self) -> Option<Count> {
        self.count.get().copied()
    }

    fn known_gpus(&self) -> Option<Vec<Gpu>> {
        self.gpus.get().cloned()
    }
}
