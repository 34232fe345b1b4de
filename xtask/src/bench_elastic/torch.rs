//! torch's side of `bench-elastic`: a venv of its own at `target/torch-venv` (not the
//! TensorFlow one) with torch, for its `torchrun`. The CPU build from PyTorch's own index is
//! tried first (about 200 MB); where that index cannot be reached, PyPI's build, which pulls
//! CUDA libraries of several GB, when the disk has room for it.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::venv::Venv;

const VENV: Venv<'static> = Venv {
    name: "torch-venv",
    check: "import torch.distributed.run",
};

/// The free space PyPI's torch needs, with room to spare: its CUDA wheels unpack to ~5 GB.
const PYPI_BUILD_GB: f64 = 12.0;

/// torchrun and torch's version.
pub(super) struct Torch {
    pub(super) torchrun: PathBuf,
    pub(super) version: String,
}

/// torch in its venv, installed when missing; or why it cannot be had.
pub(super) fn ensure() -> Result<Torch, String> {
    let python = VENV.python();
    let python = if VENV.ready(&python) {
        python
    } else {
        let cpu: &[&str] = &[
            "--retries",
            "0",
            "--timeout",
            "15",
            "torch",
            "--index-url",
            "https://download.pytorch.org/whl/cpu",
        ];
        let root = python
            .ancestors()
            .nth(3)
            .expect("target/torch-venv/bin/python has a target/");
        let free = free_gb(root);
        let pypi: &[&str] = &["torch"];
        let installs: Vec<&[&str]> = if free.is_some_and(|gb| gb >= PYPI_BUILD_GB) {
            vec![cpu, pypi]
        } else {
            eprintln!(
                "xtask: {} has {} GB free, under the {PYPI_BUILD_GB} GB PyPI's torch needs: \
                 trying only the CPU build",
                root.display(),
                free.map_or("unknown".into(), |gb| format!("{gb:.0}"))
            );
            vec![cpu]
        };
        VENV.ensure(&installs)?
    };
    let version = Command::new(&python)
        .args(["-c", "import torch; print(torch.__version__)"])
        .output()
        .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    Ok(Torch {
        torchrun: python.with_file_name("torchrun"),
        version: String::from_utf8_lossy(&version.stdout).trim().to_owned(),
    })
}

/// The free space of the file system holding `path`, in GB.
fn free_gb(path: &Path) -> Option<f64> {
    let out = Command::new("df")
        .args(["--output=avail", "-B1"])
        .arg(path)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let bytes: f64 = text.lines().nth(1)?.trim().parse().ok()?;
    Some(bytes / 1e9)
}
