//! `cargo xtask codegen [--check]`: compile `cluster-proto/proto/` with protox (no system protoc)
//! and tonic-prost-build into `cluster-proto/src/generated/`, the code downstream users compile.
//!
//! With `--check`, generate into a temporary directory and fail if any file differs from the
//! committed one, so CI catches a `.proto` edit without regenerated code.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use prost::Message;

use crate::workspace;

/// Every `.proto` file compiled, relative to `cluster-proto/proto/`.
const PROTOS: &[&str] = &[
    "tensorflow/cluster.proto",
    "tensorflow/device_filters.proto",
    "tensorflow/device_attributes.proto",
    "tensorflow/versions.proto",
    "tensorflow/types.proto",
    "tensorflow/tensor_shape.proto",
    "tensorflow/tensor.proto",
    "tensorflow/attr_value.proto",
    "tensorflow/remote_tensor_handle.proto",
    "tensorflow/config.proto",
    "tensorflow/tensorflow_server.proto",
    "tensorflow/worker.proto",
    "tensorflow/eager_service.proto",
];

/// Service stubs are compiled only with the crate's `grpc` feature, so users of the messages
/// alone compile no tonic.
const GRPC_GATE: &str = "#[cfg(feature = \"grpc\")]";

/// On docs.rs (`--cfg docsrs`), the stubs are shown with the feature that enables them.
const GRPC_DOC_GATE: &str = "#[cfg_attr(docsrs, doc(cfg(feature = \"grpc\")))]";

pub(crate) fn run(check: bool) -> Result<(), String> {
    let crate_dir = workspace::root().join("cluster-proto");
    let committed = crate_dir.join("src/generated");
    let fresh = scratch_dir()?;
    generate(&crate_dir.join("proto"), &fresh)?;
    let result = if check {
        compare(&fresh, &committed)
    } else {
        install(&fresh, &committed)
    };
    let _ = fs::remove_dir_all(&fresh);
    result
}

fn scratch_dir() -> Result<PathBuf, String> {
    let dir = std::env::temp_dir().join(format!("tfcluster-codegen-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    Ok(dir)
}

fn generate(proto_dir: &Path, out: &Path) -> Result<(), String> {
    let fds = protox::compile(PROTOS, [proto_dir]).map_err(|e| format!("protox: {e:?}"))?;
    fs::write(out.join("file_descriptor_set.bin"), fds.encode_to_vec())
        .map_err(|e| format!("cannot write descriptor set: {e}"))?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .build_transport(false)
        .btree_map(".")
        // A large tensor's bytes stay in the buffer they arrived in (no copy on decode).
        .bytes(".tensorflow.TensorProto.tensor_content")
        .client_mod_attribute(".", GRPC_GATE)
        .client_mod_attribute(".", GRPC_DOC_GATE)
        .server_mod_attribute(".", GRPC_GATE)
        .server_mod_attribute(".", GRPC_DOC_GATE)
        .include_file("mod.rs")
        .emit_rerun_if_changed(false)
        .out_dir(out)
        .compile_fds(fds)
        .map_err(|e| format!("tonic-prost-build: {e}"))
}

/// Every file in `dir`, name -> contents.
fn read_all(dir: &Path) -> Result<BTreeMap<String, Vec<u8>>, String> {
    let mut files = BTreeMap::new();
    let Ok(entries) = fs::read_dir(dir) else {
        return Ok(files);
    };
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let bytes = fs::read(entry.path()).map_err(|e| format!("cannot read {name}: {e}"))?;
        files.insert(name, bytes);
    }
    Ok(files)
}

fn compare(fresh: &Path, committed: &Path) -> Result<(), String> {
    let (fresh, committed_files) = (read_all(fresh)?, read_all(committed)?);
    let mut stale: Vec<&str> = fresh
        .iter()
        .filter(|(name, bytes)| committed_files.get(*name) != Some(*bytes))
        .map(|(name, _)| name.as_str())
        .collect();
    stale.extend(
        committed_files
            .keys()
            .filter(|name| !fresh.contains_key(*name))
            .map(String::as_str),
    );
    if stale.is_empty() {
        eprintln!("xtask: codegen is up to date");
        Ok(())
    } else {
        Err(format!(
            "{} is stale ({}): run `cargo xtask codegen` and commit the result",
            committed.display(),
            stale.join(", ")
        ))
    }
}

fn install(fresh: &Path, committed: &Path) -> Result<(), String> {
    let _ = fs::remove_dir_all(committed);
    fs::create_dir_all(committed)
        .map_err(|e| format!("cannot create {}: {e}", committed.display()))?;
    for (name, bytes) in read_all(fresh)? {
        fs::write(committed.join(&name), bytes).map_err(|e| format!("cannot write {name}: {e}"))?;
    }
    eprintln!("xtask: wrote {}", committed.display());
    Ok(())
}
