//! A node's GPUs as `nvidia-smi` lists them, under a deadline: the fallback source where NVML
//! cannot be loaded, and the one a test (or [`with_nvidia_smi`](crate::SlurmClusterResolver::with_nvidia_smi))
//! points at a fake.

use std::io::{ErrorKind, Read};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use cluster_spec::__private::quote::quote;

use super::Error;
use super::gpu::Gpu;

/// How long `nvidia-smi` may run by default. It answers in well under a second on a healthy
/// node; a wedged driver can make it hang for minutes, and a resolver must not.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// How `nvidia-smi` is run to count a node's GPUs: the program (looked up in `PATH` when it
/// has no `/`) and its deadline. [`Default`] is `nvidia-smi` with [`DEFAULT_TIMEOUT`].
#[derive(Debug, Clone)]
pub struct NvidiaSmi {
    program: PathBuf,
    timeout: Duration,
}

impl Default for NvidiaSmi {
    fn default() -> Self {
        Self::new("nvidia-smi", DEFAULT_TIMEOUT)
    }
}

impl NvidiaSmi {
    /// Runs `program` (a path, or a name looked up in `PATH`), killing it after `timeout`.
    pub fn new(program: impl Into<PathBuf>, timeout: Duration) -> Self {
        Self {
            program: program.into(),
            timeout,
        }
    }

    /// The program, as given.
    pub(crate) fn program(&self) -> String {
        self.program.display().to_string()
    }

    /// The deadline.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The number of lines starting `GPU ` that `nvidia-smi --list-gpus` prints (TensorFlow's
    /// count; MIG devices are indented lines and do not count).
    ///
    /// No `nvidia-smi` at all is a node without GPUs, `Ok(0)`; so is the "No devices were
    /// found" answer of a driver with no GPU. Any other failure, or running past the deadline
    /// (the process is then killed), is an error.
    ///
    /// Blocks the calling thread while it runs (at most the deadline); async code asks
    /// through [`count`](super::count), which runs it on a thread of its own.
    pub fn count_gpus(&self) -> Result<u32, Error> {
        let Some(stdout) = self.run("--list-gpus")? else {
            return Ok(0);
        };
        let gpus = stdout.lines().filter(|l| l.starts_with("GPU ")).count();
        Ok(u32::try_from(gpus).unwrap_or(u32::MAX))
    }

    /// Every GPU `nvidia-smi --query-gpu=`[`QUERY`] lists, in its index order; none when
    /// `nvidia-smi` is not installed or finds no device. Blocks as
    /// [`count_gpus`](Self::count_gpus) does.
    pub fn gpus(&self) -> Result<Vec<Gpu>, Error> {
        let Some(stdout) = self.run(&format!("--query-gpu={QUERY}"))? else {
            return Ok(Vec::new());
        };
        parse(&stdout).map_err(|reason| Error::NvidiaSmiOutput {
            program: self.program(),
            reason,
        })
    }

    /// The program's path: as given when it has a `/`, else the first executable file of that
    /// name in `PATH`; `None` when there is none.
    fn locate(&self) -> Option<PathBuf> {
        if self.program.components().count() > 1 || self.program.is_absolute() {
            return Some(self.program.clone());
        }
        let path = std::env::var_os("PATH")?;
        std::env::split_paths(&path)
            .map(|dir| dir.join(&self.program))
            .find(|candidate| std::fs::metadata(candidate).is_ok_and(|m| executable(&m)))
    }

    /// Runs `nvidia-smi ARG` (plus `--format=csv,noheader,nounits` for a query) under the
    /// deadline: its standard output, or `None` when it is not installed or says there is no
    /// device.
    fn run(&self, arg: &str) -> Result<Option<String>, Error> {
        let query = arg.starts_with("--query-gpu");
        // Looked up here rather than by a failing exec in a forked child: on a host without
        // it (every host without NVML, where this runs) that costs a few `stat`s, no process.
        let Some(program) = self.locate() else {
            return Ok(None);
        };
        let mut command = Command::new(program);
        command.arg(arg);
        if query {
            command.arg("--format=csv,noheader,nounits");
        }
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = match spawn(&mut command) {
            Ok(child) => child,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(Error::NvidiaSmiStart {
                    program: self.program(),
                    source,
                });
            }
        };
        // Drain both pipes from threads so a chatty child cannot block on a full pipe while we
        // wait for it to exit.
        let drain = |pipe: Option<Box<dyn Read + Send>>| {
            thread::spawn(move || {
                let mut bytes = Vec::new();
                if let Some(mut pipe) = pipe {
                    let _ = pipe.read_to_end(&mut bytes);
                }
                String::from_utf8_lossy(&bytes).into_owned()
            })
        };
        let stdout = drain(
            child
                .stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        );
        let stderr = drain(
            child
                .stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        );
        let started = Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if started.elapsed() >= self.timeout => {
                    let _ = child.kill();
                    let _ = child.wait();
                    // The readers are not joined: a grandchild may still hold the pipes open.
                    if query {
                        return Err(Error::Timeout {
                            what: format!("{} --query-gpu", self.program()),
                            timeout: self.timeout,
                        });
                    }
                    return Err(Error::NvidiaSmiTimeout {
                        program: self.program(),
                        timeout: self.timeout,
                    });
                }
                // This runs on a thread of its own (see `off_thread`), never a runtime's.
                Ok(None) => thread::sleep(Duration::from_millis(5)),
                Err(source) => {
                    let _ = child.kill();
                    return Err(Error::NvidiaSmiStart {
                        program: self.program(),
                        source,
                    });
                }
            }
        };
        let stdout = stdout.join().unwrap_or_default();
        let stderr = stderr.join().unwrap_or_default();
        if status.success() {
            return Ok(Some(stdout));
        }
        if stdout.contains("No devices were found") || stderr.contains("No devices were found") {
            return Ok(None);
        }
        Err(Error::NvidiaSmiFailed {
            status: status.to_string(),
            output: format!("{}{}", stdout.trim_end(), stderr.trim_end()),
        })
    }
}

/// Whether a file may be run.
#[cfg(unix)]
fn executable(metadata: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    metadata.is_file() && metadata.permissions().mode() & 0o111 != 0
}

/// Whether a file may be run.
#[cfg(not(unix))]
fn executable(metadata: &std::fs::Metadata) -> bool {
    metadata.is_file()
}

/// What `nvidia-smi` is asked for each GPU, one CSV line per GPU.
pub const QUERY: &str = "index,uuid,name,pci.bus_id,memory.free,compute_cap";

/// Parses the CSV lines of [`QUERY`]; the error names the line that cannot be read.
fn parse(csv: &str) -> Result<Vec<Gpu>, String> {
    csv.lines()
        .filter(|line| !line.trim().is_empty())
        .enumerate()
        .map(|(n, line)| {
            parse_line(line)
                .ok_or_else(|| format!("line {}: cannot read {}", n + 1, quote(line, 0)))
        })
        .collect()
}

/// Spawns `command`, trying again a few times, 10 ms apart, while its program is busy
/// (ETXTBSY: being written, as while a driver update replaces `nvidia-smi`, or open for
/// writing in a child another thread forked and that has not exec'd yet).
fn spawn(command: &mut Command) -> std::io::Result<std::process::Child> {
    const TRIES: u32 = 20;
    let mut tries = 1;
    loop {
        match command.spawn() {
            Err(e) if e.kind() == ErrorKind::ExecutableFileBusy && tries < TRIES => {
                tries += 1;
                thread::sleep(Duration::from_millis(10));
            }
            spawned => return spawned,
        }
    }
}

fn parse_line(line: &str) -> Option<Gpu> {
    let fields: Vec<&str> = line.split(',').map(str::trim).collect();
    let [index, uuid, name, bus, free_mib, cc] = fields.as_slice() else {
        return None;
    };
    let (major, minor) = cc.split_once('.')?;
    Some(Gpu {
        index: index.parse().ok()?,
        uuid: (*uuid).to_owned(),
        name: (*name).to_owned(),
        pci_bus_id: (*bus).to_owned(),
        memory_free: free_mib.parse::<u64>().ok()?.saturating_mul(1 << 20),
        compute_capability: (major.parse().ok()?, minor.parse().ok()?),
        numa_node: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Held while a test writes its fake `nvidia-smi` and runs it: a sibling test forking
    /// while the script is still open for writing makes the exec fail with ETXTBSY.
    static SCRIPTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn one_script_at_a_time() -> std::sync::MutexGuard<'static, ()> {
        SCRIPTS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// An executable `#!/bin/sh` script of `script`, in a directory of this process (its
    /// arguments, `--list-gpus` or the query, are `$1`...).
    fn fake(script: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("tfcluster-nvidia-smi-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("smi-{:x}", fxhash(script)));
        std::fs::write(&path, format!("#!/bin/sh\n{script}\n")).unwrap();
        let mut perms = std::fs::metadata(&path).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(&path, perms).unwrap();
        path
    }

    fn smi(script: &str, timeout: Duration) -> Result<u32, Error> {
        let _turn = one_script_at_a_time();
        NvidiaSmi::new(fake(script), timeout).count_gpus()
    }

    fn query(script: &str) -> Result<Vec<Gpu>, Error> {
        let _turn = one_script_at_a_time();
        NvidiaSmi::new(fake(script), Duration::from_millis(500)).gpus()
    }

    fn fxhash(s: &str) -> u64 {
        s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
            (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
        })
    }

    #[test]
    fn counts_gpu_lines_only() {
        let list = "printf 'GPU 0: A100 (UUID: GPU-1)\\n  MIG 1g.5gb Device 0: (UUID: MIG-1)\\nGPU 1: A100 (UUID: GPU-2)\\n'";
        assert_eq!(smi(list, DEFAULT_TIMEOUT).unwrap(), 2);
    }

    #[test]
    fn missing_binary_is_zero_gpus() {
        let none = NvidiaSmi {
            program: PathBuf::from("/nonexistent/tfcluster/nvidia-smi"),
            timeout: DEFAULT_TIMEOUT,
        };
        assert_eq!(none.count_gpus().unwrap(), 0);
    }

    #[test]
    fn no_devices_is_zero_gpus() {
        assert_eq!(
            smi("echo 'No devices were found'; exit 6", DEFAULT_TIMEOUT).unwrap(),
            0
        );
    }

    #[test]
    fn failure_uses_tensorflow_wording() {
        let e = smi("echo 'NVIDIA-SMI has failed'; exit 9", DEFAULT_TIMEOUT)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("Could not get number of GPUs from nvidia-smi. Maybe it is missing?\nOutput: NVIDIA-SMI has failed"),
            "{e}"
        );
    }

    #[test]
    fn a_hanging_nvidia_smi_is_killed_at_the_deadline() {
        let started = Instant::now();
        let e = smi("exec sleep 30", Duration::from_millis(200)).unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(e.to_string().contains("did not answer within 200ms"), "{e}");
    }

    const H100: &str = "0, GPU-1a2b3c4d-0000-1111-2222-333344445555, NVIDIA H100 80GB HBM3, 00000000:00:05.0, 81004, 9.0\n\
                        1, GPU-9f8e7d6c-0000-1111-2222-333344445555, NVIDIA H100 80GB HBM3, 00000000:00:06.0, 1500, 9.0\n";

    #[test]
    fn parses_the_query_csv() {
        let gpus = parse(H100).unwrap();
        assert_eq!(gpus.len(), 2);
        assert_eq!(gpus[0].name, "NVIDIA H100 80GB HBM3");
        assert_eq!(gpus[0].pci_bus_id, "00000000:00:05.0");
        assert_eq!(gpus[1].memory_free, 1500 << 20);
        assert_eq!(gpus[0].compute_capability, (9, 0));
        assert!(parse("0, x, y\n").unwrap_err().contains("line 1"));
        assert!(parse("").unwrap().is_empty());
    }

    #[test]
    fn the_query_runs_with_its_arguments_and_deadline() {
        let gpus = query(
            "[ \"$1\" = --query-gpu=index,uuid,name,pci.bus_id,memory.free,compute_cap ] || exit 2\n\
             [ \"$2\" = --format=csv,noheader,nounits ] || exit 3\n\
             echo '0, GPU-aaaa, NVIDIA H100 80GB HBM3, 00000000:00:05.0, 81000, 9.0'",
        )
        .unwrap();
        assert_eq!(gpus.len(), 1);
        assert!(
            query("echo 'No devices were found'; exit 6")
                .unwrap()
                .is_empty()
        );
        let e = query("echo 'driver mismatch' >&2; exit 9").unwrap_err();
        assert!(e.to_string().contains("driver mismatch"), "{e}");
        let e = query("echo 'garbage'").unwrap_err();
        assert!(
            e.to_string().contains("line 1: cannot read \"garbage\""),
            "{e}"
        );
        let started = Instant::now();
        let e = query("exec sleep 30").unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(
            e.to_string()
                .contains("--query-gpu did not answer within 500ms"),
            "{e}"
        );
    }
}
