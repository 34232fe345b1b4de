//! `cargo xtask op-signatures`: regenerate `remote-connect/src/op/signatures.txt` (every op's
//! input and output types, from TensorFlow 2.21's op registry) with `signatures.py` in the
//! TensorFlow venv. A remote-connect test checks the committed file against TensorFlow.

use std::fs;
use std::process::Command;

use crate::{tf_venv, workspace};

pub(crate) fn run() -> Result<(), String> {
    let python = tf_venv::ensure()?;
    let dir = workspace::root().join("remote-connect/src/op");
    let output = Command::new(&python)
        .arg(dir.join("signatures.py"))
        .env("TF_CPP_MIN_LOG_LEVEL", "3")
        .env("CUDA_VISIBLE_DEVICES", "")
        .output()
        .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    if !output.status.success() {
        return Err(format!(
            "signatures.py failed ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let target = dir.join("signatures.txt");
    fs::write(&target, &output.stdout)
        .map_err(|e| format!("cannot write {}: {e}", target.display()))?;
    println!("xtask: wrote {}", target.display());
    Ok(())
}
