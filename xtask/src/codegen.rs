//! `cargo xtask codegen [--check]`: compile each proto crate's `proto/` with protox (no system
//! protoc) and tonic-prost-build into its `src/generated/`, the code downstream users compile:
//! `cluster-proto` (TensorFlow's messages and services) and `elastic` (our rendezvous service).
//!
//! With `--check`, generate into a temporary directory and fail if any file differs from the
//! committed one, so CI catches a `.proto` edit without regenerated code.
//!
//! The same command writes (and checks) etcd-client's protoc stand-in
//! (`protoc_standin.rs`), the crate made of the Rust guide page (`guide_rust.rs`) and the
//! manifest of every dependency's features (`feature_superset.rs`).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use prost::Message;

use crate::workspace;

/// A crate whose `proto/` is compiled into its `src/generated/`, and how.
struct ProtoCrate {
    /// The crate's directory, relative to the workspace root.
    dir: &'static str,
    /// Every `.proto` file compiled, relative to the crate's `proto/`.
    protos: &'static [&'static str],
    /// Compile the service stubs only with the crate's `grpc` feature, so users of the
    /// messages alone compile no tonic.
    grpc_behind_feature: bool,
    /// Fields decoded as `bytes::Bytes` (kept in the buffer they arrived in, no copy).
    bytes_fields: &'static [&'static str],
}

const CRATES: &[ProtoCrate] = &[
    ProtoCrate {
        dir: "cluster-proto",
        protos: TENSORFLOW_PROTOS,
        grpc_behind_feature: true,
        // A large tensor's bytes stay in the buffer they arrived in (no copy on decode).
        bytes_fields: &[".tensorflow.TensorProto.tensor_content"],
    },
    ProtoCrate {
        dir: "elastic",
        protos: &["tfcluster/rendezvous.proto"],
        // The rendezvous crate is its service: the stubs are always compiled.
        grpc_behind_feature: false,
        bytes_fields: &[],
    },
];

/// cluster-proto's `.proto` files: TensorFlow 2.21's, with its packages and field numbers.
const TENSORFLOW_PROTOS: &[&str] = &[
    "tensorflow/cluster.proto",
    "tensorflow/device_filters.proto",
    "tensorflow/device_attributes.proto",
    "tensorflow/versions.proto",
    "tensorflow/types.proto",
    "tensorflow/tensor_shape.proto",
    "tensorflow/tensor.proto",
    "tensorflow/attr_value.proto",
    "tensorflow/full_type.proto",
    "tensorflow/resource_handle.proto",
    "tensorflow/op_def.proto",
    "tensorflow/node_def.proto",
    "tensorflow/function.proto",
    "tensorflow/remote_tensor_handle.proto",
    "tensorflow/config.proto",
    "tensorflow/tensorflow_server.proto",
    "tensorflow/worker.proto",
    "tensorflow/eager_service.proto",
];

/// What gates the service stubs of a crate with `grpc_behind_feature`.
const GRPC_GATE: &str = "#[cfg(feature = \"grpc\")]";

/// On docs.rs (`--cfg docsrs`), the stubs are shown with the feature that enables them.
const GRPC_DOC_GATE: &str = "#[cfg_attr(docsrs, doc(cfg(feature = \"grpc\")))]";

pub(crate) fn run(check: bool) -> Result<(), String> {
    // Every crate is checked even when an earlier one is stale, so one run names them all.
    let failures: Vec<String> = CRATES
        .iter()
        .map(|krate| run_one(krate, check))
        .chain([
            crate::protoc_standin::run(check),
            crate::guide_rust::run(check),
            crate::feature_superset::run(check),
        ])
        .filter_map(Result::err)
        .collect();
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("\n"))
    }
}

/// Writes `fresh` to the committed file at `path`, or with `check` fails if that file differs
/// (`why`: what makes it stale), for the generated files made outside [`CRATES`].
pub(crate) fn write_or_check(
    path: &Path,
    fresh: &[u8],
    check: bool,
    why: &str,
) -> Result<(), String> {
    if check {
        if fs::read(path).ok().as_deref() != Some(fresh) {
            return Err(format!(
                "{} is stale ({why}): run `cargo xtask codegen` and commit the result",
                path.display()
            ));
        }
        return Ok(());
    }
    fs::write(path, fresh).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    eprintln!("xtask: wrote {}", path.display());
    Ok(())
}

fn run_one(krate: &ProtoCrate, check: bool) -> Result<(), String> {
    let crate_dir = workspace::root().join(krate.dir);
    let committed = crate_dir.join("src/generated");
    let fresh = scratch_dir(krate.dir)?;
    let result = generate(krate, &crate_dir.join("proto"), &fresh).and_then(|()| {
        if check {
            compare(&fresh, &committed)
        } else {
            install(&fresh, &committed)
        }
    });
    let _ = fs::remove_dir_all(&fresh);
    result
}

fn scratch_dir(name: &str) -> Result<PathBuf, String> {
    let dir = std::env::temp_dir().join(format!("tfcluster-codegen-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    Ok(dir)
}

fn generate(krate: &ProtoCrate, proto_dir: &Path, out: &Path) -> Result<(), String> {
    let fds = protox::compile(krate.protos, [proto_dir])
        .map_err(|e| format!("protox ({}): {e:?}", krate.dir))?;
    fs::write(out.join("file_descriptor_set.bin"), fds.encode_to_vec())
        .map_err(|e| format!("cannot write descriptor set: {e}"))?;
    let mut builder = tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .build_transport(false)
        .btree_map(".");
    for field in krate.bytes_fields {
        builder = builder.bytes(field);
    }
    if krate.grpc_behind_feature {
        builder = builder
            .client_mod_attribute(".", GRPC_GATE)
            .client_mod_attribute(".", GRPC_DOC_GATE)
            .server_mod_attribute(".", GRPC_GATE)
            .server_mod_attribute(".", GRPC_DOC_GATE);
    }
    builder
        .include_file("mod.rs")
        .emit_rerun_if_changed(false)
        .out_dir(out)
        .compile_fds(fds)
        .map_err(|e| format!("tonic-prost-build ({}): {e}", krate.dir))
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
