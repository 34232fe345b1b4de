//! Counting a node's GPUs with `nvidia-smi --list-gpus`, under a deadline.

use std::io::{ErrorKind, Read};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use super::Error;

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

    /// The number of lines starting `GPU ` that `nvidia-smi --list-gpus` prints (TensorFlow's
    /// count; MIG devices are indented lines and do not count).
    ///
    /// No `nvidia-smi` at all is a node without GPUs, `Ok(0)`; so is the "No devices were
    /// found" answer of a driver with no GPU. Any other failure, or running past the deadline
    /// (the process is then killed), is an error.
    ///
    /// Blocks the calling thread while it runs (at most the deadline); call it from
    /// `spawn_blocking` in async code.
    pub fn count_gpus(&self) -> Result<u32, Error> {
        let mut child = match Command::new(&self.program)
            .arg("--list-gpus")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
        {
            Ok(child) => child,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(0),
            Err(source) => {
                return Err(Error::NvidiaSmiStart {
                    program: self.program.display().to_string(),
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
                    return Err(Error::NvidiaSmiTimeout {
                        program: self.program.display().to_string(),
                        timeout: self.timeout,
                    });
                }
                Ok(None) => thread::sleep(Duration::from_millis(5)),
                Err(source) => {
                    let _ = child.kill();
                    return Err(Error::NvidiaSmiStart {
                        program: self.program.display().to_string(),
                        source,
                    });
                }
            }
        };
        let stdout = stdout.join().unwrap_or_default();
        let stderr = stderr.join().unwrap_or_default();
        if status.success() {
            let gpus = stdout.lines().filter(|l| l.starts_with("GPU ")).count();
            return Ok(u32::try_from(gpus).unwrap_or(u32::MAX));
        }
        if stdout.contains("No devices were found") || stderr.contains("No devices were found") {
            return Ok(0);
        }
        Err(Error::NvidiaSmiFailed {
            status: status.to_string(),
            output: format!("{}{}", stdout.trim_end(), stderr.trim_end()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn smi(script: &str, timeout: Duration) -> Result<u32, Error> {
        // `sh -c SCRIPT --list-gpus`: the script sees `--list-gpus` as $0.
        let dir = std::env::temp_dir().join(format!(
            "tfcluster-nvidia-smi-{}-{}",
            std::process::id(),
            script.len()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("smi-{:x}", fxhash(script)));
        std::fs::write(&path, format!("#!/bin/sh\n{script}\n")).unwrap();
        let mut perms = std::fs::metadata(&path).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(&path, perms).unwrap();
        NvidiaSmi {
            program: path,
            timeout,
        }
        .count_gpus()
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
}
