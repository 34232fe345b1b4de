//! # cloud-notices — what the cloud says is about to happen to this VM
//!
//! Clouds announce most of the hosts a long job loses: a spot or preemptible VM taken back,
//! a host drained for maintenance. Each says so ahead of time, on its metadata service:
//!
//! | cloud | where | warning | read as |
//! |---|---|---|---|
//! | GCE | `instance/preempted` = `TRUE` | 30 s | [`NoticeKind::Preemption`] |
//! | GCE | `instance/maintenance-event` = `TERMINATE_ON_HOST_MAINTENANCE` | 60 s | [`NoticeKind::Maintenance`] |
//! | EC2 | `spot/instance-action` (IMDSv2) | 2 min, its `time` | [`NoticeKind::Preemption`] |
//! | EC2 | `events/maintenance/scheduled` | days, its `NotBefore` | [`NoticeKind::Maintenance`] |
//! | EC2 | `events/recommendations/rebalance` | none | [`NoticeKind::Rebalance`] |
//! | Azure | Scheduled Events `Preempt` / `Terminate` / `Reboot`, `Redeploy` | 30 s to 15 min, `NotBefore` | preemption / termination / maintenance |
//!
//! A [`NoticeWatcher`] watches one cloud's in the background (GCE's keys long-polled with
//! ETags, EC2's polled every 5 s as AWS advises, Azure's every second) and publishes the most urgent notice on a
//! `tokio::sync::watch` channel, withdrawn when the cloud withdraws it. Which cloud:
//! [`NoticeSource`] (`--preemption-notices auto|gce|aws|azure|off`); `auto` decides from the
//! firmware's DMI strings only ([`detect`], as cloud-init's `ds-identify`), so a host that is
//! no cloud VM sends no packet to any metadata address. Each service's address can be moved
//! by the variable its cloud's SDKs read ([`endpoint`]), which is how the tests point the
//! watchers at stand-ins.
//!
//! Nothing here stops the job: a service that cannot be reached, or that answers garbage,
//! is logged once (and again only when that changes) and asked again; an answer is read
//! with a deadline and at most 64 KiB.
//!
//! **Who depends on it:** `tfcluster-elastic`'s agent (a notice is a planned departure of
//! its host) and any Rust program that wants to act before its VM goes. It builds on
//! `cluster-spec` (error wording) and pulls hyper's HTTP/1.1 client (no TLS: metadata
//! services speak plain HTTP on a link-local address), tokio and serde_json.
//!
//! ## Features
//!
//! None.
//!
//! ## Example
//!
//! ```
//! use std::time::{Duration, SystemTime};
//!
//! use cloud_notices::{Cloud, NoticeSource, NoticeWatcher, WatchOptions};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let source: NoticeSource = "auto".parse()?;
//! // This machine's firmware names no cloud (here, a directory without DMI strings).
//! let options = WatchOptions::default().with_dmi_dir("/nonexistent");
//! assert!(NoticeWatcher::start(source, &options)?.is_none());
//!
//! // Named explicitly, a cloud is watched wherever its variable points (a stand-in here).
//! let options = options.with_var("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:9");
//! let watcher = NoticeWatcher::start("aws".parse()?, &options)?.expect("aws is watched");
//! assert_eq!(watcher.cloud(), Cloud::Aws);
//! // Nothing answers there: the watcher says so in the log and the notice stays `None`.
//! assert!(watcher.notices().borrow().is_none());
//! # Ok(()) }
//! ```
//!
//! A notice's deadline, and when to act to finish a checkpoint before it:
//! [`Notice::act_at`]`(lead, now)`.
//!
//! ## Differences from TensorFlow
//!
//! TensorFlow's `PreemptionCheckpointHandler` learns of a preemption on its own only on GCE
//! GPU VMs, and there only of maintenance events: it polls `instance/maintenance-event`
//! every second and never reads `instance/preempted`, and with that watcher set it installs
//! no SIGTERM handler, so a GCE spot preemption is missed. On GCE CPU and TPU VMs it only
//! warns; on EC2, Azure and bare hosts it waits for a SIGTERM that comes at the OS shutdown,
//! if at all. And it finds out whether it runs on GCP by asking `metadata.google.internal`
//! over the network, on every host. Here every cloud's notices are read, GCE's preemption
//! included, and the cloud is found without a packet.
//!
//! ## Performance
//!
//! An idle watcher is one tokio task per source, asleep between polls or waiting on a GCE
//! long poll; each poll is one small HTTP request on a kept-alive connection.
//! `benches/cloud_notices.rs` measures the cost of reading the answers.

mod aws;
mod azure;
mod board;
mod detect;
pub mod endpoint;
mod gce;
mod http;
mod notice;
mod source;
mod time;
mod watcher;

pub use azure::SCHEDULED_EVENTS_API;
pub use detect::{DMI_DIR, detect};
pub use endpoint::EndpointError;
pub use gce::{MAINTENANCE_WARNING, PREEMPTION_WARNING};
pub use notice::{Cloud, Notice, NoticeKind};
pub use source::{InvalidNoticeSource, NoticeSource};
pub use watcher::{AcknowledgeError, NoticeWatcher, WatchOptions};
