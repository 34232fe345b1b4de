//! # cluster-proto — TensorFlow 2.21's cluster and connect messages, for prost and tonic
//!
//! The bottom layer of the tfcluster workspace. It holds the protobuf messages TensorFlow 2.21
//! puts on the wire for cluster descriptions ([`ClusterDef`], [`ServerDef`]), device filters
//! ([`ClusterDeviceFilters`]), device discovery ([`GetStatusResponse`], [`DeviceAttributes`]),
//! tensor transfer from a worker ([`RecvTensorRequest`], [`RecvTensorResponse`]),
//! remote eager contexts and the operations and functions run in them ([`eager`],
//! [`FunctionDef`]), and the values those operations carry ([`TensorProto`], [`TensorShapeProto`], [`DataType`], [`AttrValue`]), with
//! TensorFlow's packages, message names and field numbers. Depend on it directly only if you speak TensorFlow's protocol yourself; most users
//! want `cluster-spec` (the validated model) or `remote-connect` (the gRPC layer), which build on
//! it.
//!
//! The Rust code is generated from the `.proto` files in `proto/` by `cargo xtask codegen`
//! (protox, no system `protoc`) and committed under `src/generated/`, so depending on this crate
//! runs no build script.
//!
//! ## Features
//!
//! - `grpc` (off by default): tonic client and server stubs, [`worker_service_client`],
//!   [`worker_service_server`], [`eager::eager_service_client`] and
//!   [`eager::eager_service_server`]. Without it the crate pulls only prost.
//!
//! ## Example
//!
//! ```
//! use cluster_proto::{ClusterDef, JobDef};
//! use prost::Message;
//!
//! // TensorFlow 2.21: ClusterSpec({"w": ["a:1"], "ps": {2: "b:2"}}).as_cluster_def()
//! let tf_bytes = [
//!     0x0a, 0x0d, 0x0a, 0x02, b'p', b's', 0x12, 0x07, 0x08, 0x02, 0x12, 0x03, b'b', b':', b'2',
//!     0x0a, 0x0c, 0x0a, 0x01, b'w', 0x12, 0x07, 0x08, 0x00, 0x12, 0x03, b'a', b':', b'1',
//! ];
//! let def = ClusterDef::decode(&tf_bytes[..])?;
//! assert_eq!(def.job[0].name, "ps");
//! assert_eq!(def.job[0].tasks[&2], "b:2");
//! assert_eq!(def.job[1], JobDef { name: "w".into(), tasks: [(0, "a:1".into())].into() });
//! # Ok::<(), prost::DecodeError>(())
//! ```
//!
//! ## Wire notes
//!
//! - **Unknown fields are dropped.** prost keeps no unknown fields: decoding a message that
//!   carries fields these `.proto` files do not declare (TensorFlow's full `ConfigProto` has
//!   dozens) and encoding it again loses them. A message that must pass through unchanged must
//!   be forwarded as bytes, never decoded and re-encoded.
//! - **Map fields are [`BTreeMap`](std::collections::BTreeMap)s**, so encoding is deterministic:
//!   the same message always gives the same bytes, ordered by key as TensorFlow writes them.
//! - **`WorkerService` is in package `tensorflow`.** TensorFlow's `worker_service.proto` declares
//!   `package tensorflow.grpc`, yet the runtime registers and calls
//!   `/tensorflow.WorkerService/GetStatus`; the stubs here use the path TensorFlow really uses.
//! - **Functions are typed.** [`FunctionDef`] and [`FunctionDefLibrary`] (with [`OpDef`],
//!   [`NodeDef`] and [`FullTypeDef`] below them) decode what Python writes with
//!   `concrete_function.function_def.SerializeToString()`, and the queue items that register,
//!   remove or clean up functions ([`eager::RegisterFunctionOp`], …) carry them. A tensor's
//!   `resource_handle_val` and `variant_val` elements stay opaque bytes.
//!
//! ## Differences from TensorFlow
//!
//! - Only the messages and fields the cluster layer uses are declared (see `proto/`); in
//!   particular `ConfigProto` and `ConfigProto.Experimental` are partial, and a tensor's
//!   resource and variant elements are opaque bytes (above).
//! - proto3 lets an encoder omit a field that holds its default value; prost omits a map entry's
//!   key `0` where TensorFlow's C++ encoder writes it. Both decode to the same message.

#![cfg_attr(docsrs, feature(doc_cfg))]

mod generated {
    #![allow(missing_docs, unreachable_pub, clippy::all)]
    #[rustfmt::skip]
    pub(crate) mod protos {
        include!("generated/mod.rs");
    }
}

pub use generated::protos::tensorflow::*;

/// The `FileDescriptorSet` of every `.proto` file of this crate, encoded: what the code was
/// generated from, for reflection and for checking field numbers against TensorFlow's own
/// descriptors.
pub const FILE_DESCRIPTOR_SET: &[u8] = include_bytes!("generated/file_descriptor_set.bin");
