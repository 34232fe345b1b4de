//! # device-filter — TensorFlow device names and per-task device filters
//!
//! This layer decides which task of a TensorFlow cluster may see which devices. It holds
//!
//! - [`DeviceName`]: TensorFlow's device names (`/job:worker/replica:0/task:1/device:GPU:0`),
//!   full or partial, parsed with the grammar of the C++ runtime's
//!   `DeviceNameUtils::ParseFullName` (legacy `/cpu:0` forms and `*` wildcards included), with
//!   TensorFlow's matching predicates and merges;
//! - [`ClusterDeviceFilters`]: `tf.config.experimental.ClusterDeviceFilters`, the per-task
//!   filters a client sends in `ServerDef.cluster_device_filters`, with its proto
//!   ([`to_proto`](ClusterDeviceFilters::to_proto), `TryFrom`) and JSON forms;
//! - the visibility rule of TensorFlow's `EagerContext::FilterDevicesForRemoteWorkers`
//!   ([`ClusterDeviceFilters::is_visible`], [`ClusterDeviceFilters::visible_devices`], and
//!   [`VisibilityIndex`] for every task of a large cluster at once);
//! - the filters `ParameterServerStrategy` sets ([`ClusterDeviceFilters::parameter_server`]).
//!
//! **Who depends on it:** `remote-connect` uses it when it connects to a cluster: in TensorFlow
//! the *client* enforces the filters, sending each task only the devices it may see in
//! `CreateContextRequest.cluster_device_attributes`. Depend on it directly to build or check
//! filters, or to parse and compare device names, without pulling in any gRPC. It builds on
//! `cluster-proto` (the messages) and `cluster-spec` (for the parameter-server preset).
//!
//! ## Features
//!
//! None.
//!
//! ## Example
//!
//! ```
//! use device_filter::{ClusterDeviceFilters, DeviceName};
//!
//! // Workers see the parameter servers; ps 0 sees worker 1's GPUs.
//! let mut filters = ClusterDeviceFilters::default();
//! filters.set_device_filters("worker", 0, ["/job:ps"])?;
//! filters.set_device_filters("worker", 1, ["/job:ps"])?;
//! filters.set_device_filters("ps", 0, ["/job:worker/task:1/device:GPU:*"])?;
//!
//! let devices: Vec<DeviceName> = [
//!     "/job:worker/replica:0/task:0/device:CPU:0",
//!     "/job:worker/replica:0/task:1/device:CPU:0",
//!     "/job:worker/replica:0/task:1/device:GPU:0",
//!     "/job:ps/replica:0/task:0/device:CPU:0",
//! ]
//! .iter()
//! .map(|s| s.parse())
//! .collect::<Result<_, _>>()?;
//!
//! // A task always sees its own devices; otherwise a device needs a compatible filter.
//! let seen = filters.visible_devices("ps", 0, &devices);
//! assert_eq!(seen, [&devices[2], &devices[3]]);
//! // A task without filters sees everything.
//! assert_eq!(filters.visible_devices("chief", 0, &devices).len(), 4);
//!
//! // What goes into ServerDef.cluster_device_filters, and the JSON form for files.
//! let proto = filters.to_proto();
//! assert_eq!(proto.jobs[0].name, "ps");
//! assert_eq!(ClusterDeviceFilters::try_from(proto)?, filters);
//! let json = serde_json::to_string(&filters).unwrap();
//! assert_eq!(
//!     json,
//!     r#"{"ps":{"0":["/job:worker/task:1/device:GPU:*"]},"worker":{"0":["/job:ps"],"1":["/job:ps"]}}"#
//! );
//!
//! // Bad input is rejected when it is set, not when connecting.
//! let err = filters.set_device_filters("worker", 2, ["/job:ps/"]).unwrap_err();
//! assert_eq!(
//!     err.to_string(),
//!     "Invalid filter: \"/job:ps/\" for /job:worker/task:2: trailing '/' after the last component (offset 7)"
//! );
//! # Ok::<(), device_filter::Error>(())
//! ```
//!
//! ## Performance
//!
//! [`VisibilityIndex`] groups the devices by job and task once; a filter that names only a job
//! takes that job's devices as a precomputed bit set, other filters are compared only with the
//! devices of the job they name. For 1,024 tasks with 8 devices each and the parameter-server
//! filters, computing every task's visible list (index construction included) takes about
//! 2 ms with 16 parameter servers and about 7 ms with 512 (4.2 million visible pairs), against
//! about 100 ms for the direct per-task rule (`benches/visibility.rs`, one core; see the
//! workspace notes for measured figures). Parsing a full device name takes about 100 ns.
//!
//! ## Differences from TensorFlow
//!
//! - **Validation when filters are set.** TensorFlow's Python `set_device_filters` stores
//!   anything; its C++ runtime rejects a bad filter (`Invalid filter: …`) or job name (`Remote
//!   worker task name is invalid …`) only when connecting. Here
//!   [`set_device_filters`](ClusterDeviceFilters::set_device_filters), `TryFrom<proto>` and
//!   deserialisation reject them at once, naming the job, task, filter and offset. Job names
//!   must be `[A-Za-z][A-Za-z0-9_]*` (TensorFlow would accept a "job name" such as
//!   `a/replica:3`, which its runtime then reads as a job and a replica).
//! - **Numbers stop at 2^31 − 1.** TensorFlow parses replica, task and id as `uint64` and stores
//!   them in an `int`, so `/task:4294967296` silently means task 0 and `/task:2147483648` prints
//!   as `/task:-2147483648`. We reject numbers above 2^31 − 1 (the proto's `int32` for task
//!   indices) with [`Error::InvalidDeviceName`].
//! - **An id without a type is displayed.** TensorFlow's `ParsedNameToString` drops the id of
//!   `/device:*:3`, so reparsing its output gives the all-unset name, which as a filter matches
//!   everything. [`DeviceName`]'s `Display` writes `/device:*:3`, which TensorFlow's parser also
//!   accepts and which parses back to the same name.
//! - **The proto is checked.** A job listed twice in a `ClusterDeviceFilters` proto is an error
//!   ([`Error::DuplicateJob`]); TensorFlow keeps the first filters of each task. Negative task
//!   indices are errors too; TensorFlow fails on them at connect time.
//! - **JSON form.** TensorFlow has no file form for device filters; ours is
//!   `{"worker": {"0": ["/job:ps"]}}` (job → task index → filters).
//! - **Parameter-server preset uses the real task indices.** TensorFlow's
//!   `ParameterServerStrategy` sets filters for tasks `0..len(job)`, which misses tasks of a
//!   sparse job (`{"ps": {"3": …}}`); [`ClusterDeviceFilters::parameter_server`] uses the
//!   indices the spec defines. For a dense spec the filters are the same.
//!
//! Kept as TensorFlow does: a later `set_device_filters` for the same task replaces the earlier
//! list; an empty list means "no filters" and leaves the task out of the proto while the job
//! stays listed; filters keep their text (`/cpu:0` is sent as `/cpu:0`); device types compare
//! case-sensitively after the legacy forms are normalised (`/device:cpu:0` is not `/cpu:0`);
//! components may come in any order and repeat, the later one winning. Filters given at the
//! first connect are the only ones TensorFlow installs (a later connect's filters are ignored);
//! that is `remote-connect`'s concern.

mod device_name;
mod error;
mod filters;
mod grammar;
mod predicates;
mod presets;
mod tokens;
mod visibility;

pub use device_name::DeviceName;
pub use error::{Error, ParseErrorKind};
pub use filters::{ClusterDeviceFilters, DeviceFilter};
pub use visibility::VisibilityIndex;
