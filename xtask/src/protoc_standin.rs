//! The `protoc` that etcd-client's build script runs (`.cargo/config.toml` sets `PROTOC` to
//! `xtask/protoc-standin/protoc`). This machine has no protoc, and etcd-client compiles
//! etcd's `.proto` files when it builds; the stand-in answers that one invocation with a
//! `FileDescriptorSet` compiled by protox ahead of time and committed
//! (`xtask/protoc-standin/etcd-client.fds.bin`), from which prost-build generates the client
//! as it would from protoc's. `cargo xtask codegen` writes it from the etcd-client sources
//! cargo downloaded, `--check` fails when it is stale (an etcd-client upgrade).

use std::path::PathBuf;
use std::process::Command;

use prost::Message;

use crate::{codegen, workspace};

/// The files etcd-client's build script compiles, relative to its `proto/` (its build.rs).
/// The stand-in refuses any other invocation, naming what it was asked.
pub(crate) const ETCD_PROTOS: &[&str] = &[
    "etcd/api/authpb/auth.proto",
    "etcd/api/etcdserverpb/rpc.proto",
    "etcd/api/mvccpb/kv.proto",
    "etcd/server/etcdserver/api/v3election/v3electionpb/v3election.proto",
    "etcd/server/etcdserver/api/v3lock/v3lockpb/v3lock.proto",
];

/// The committed descriptor set.
fn committed() -> PathBuf {
    workspace::root().join("xtask/protoc-standin/etcd-client.fds.bin")
}

/// etcd-client's `proto/` directory, where cargo unpacked the version the lock file names.
fn etcd_proto_dir() -> Result<PathBuf, String> {
    let metadata = workspace::json(Command::new("cargo").args([
        "metadata",
        "--format-version",
        "1",
        "--locked",
    ]))?;
    let manifest = metadata["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["name"] == "etcd-client")
        .and_then(|p| p["manifest_path"].as_str())
        .ok_or("etcd-client is not in the workspace's dependencies")?;
    let dir = PathBuf::from(manifest)
        .parent()
        .map(|d| d.join("proto"))
        .ok_or("etcd-client's manifest has no directory")?;
    Ok(dir)
}

/// Compiles etcd's protos as protoc would for etcd-client (imports and source info included).
fn compile() -> Result<Vec<u8>, String> {
    let dir = etcd_proto_dir()?;
    let mut compiler =
        protox::Compiler::new([&dir]).map_err(|e| format!("protox (etcd-client): {e:?}"))?;
    compiler.include_imports(true).include_source_info(true);
    for proto in ETCD_PROTOS {
        compiler
            .open_file(dir.join(proto))
            .map_err(|e| format!("protox (etcd-client {proto}): {e:?}"))?;
    }
    Ok(compiler.file_descriptor_set().encode_to_vec())
}

/// Writes the descriptor set, or with `check`, fails if the committed one differs.
pub(crate) fn run(check: bool) -> Result<(), String> {
    codegen::write_or_check(&committed(), &compile()?, check, "an etcd-client upgrade")
}
