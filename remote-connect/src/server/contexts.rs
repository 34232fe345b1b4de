//! The remote contexts a server holds, with TensorFlow's `EagerServiceImpl` rules for creating,
//! updating, touching, closing and collecting them.

use std::collections::HashMap;

use bytes::Bytes;
use rustc_hash::FxHashSet;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use cluster_proto::DeviceAttributes;
use device_filter::DeviceName;
use tonic::Status;

use super::ServerError;
use super::identity::Identity;

/// One live context as the server sees it ([`RunningServer::contexts`](crate::RunningServer::contexts)).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ContextInfo {
    /// The context id the client chose.
    pub id: u64,
    /// The context's view id (0 at creation, +1 per cluster update).
    pub view_id: u64,
    /// The job this server is in that context.
    pub job: String,
    /// The task index this server is in that context.
    pub task: u32,
    /// Every device the context may use, by full name: this server's own devices, renamed
    /// for the context, then the devices the client sent in `cluster_device_attributes`
    /// (after its device filters).
    pub devices: Vec<String>,
    /// Seconds without any request after which the context is collected; 0 = never.
    pub keep_alive_secs: i64,
}

struct Entry {
    /// Everything but the devices, which are kept as the bytes received (a context of a large
    /// cluster is given thousands) and turned into text only when asked for.
    info: ContextInfo,
    devices: Vec<Bytes>,
    last_access: Instant,
}

/// What a create or full update installs.
pub(crate) struct Install {
    pub(crate) identity: Identity,
    /// This server's devices under `identity`.
    pub(crate) own: Vec<(DeviceName, DeviceAttributes)>,
    /// The names of the devices the client sent, as sent (checked to be UTF-8).
    pub(crate) cluster: Vec<Bytes>,
}

impl Install {
    /// This server's devices, then the client's others, each name once (the client's list
    /// includes this task's own devices). Names are compared as text, as clients write them
    /// in the canonical form, so a context of a large cluster costs no parsing.
    fn devices(self) -> Vec<Bytes> {
        let mut names: Vec<Bytes> = Vec::with_capacity(self.own.len() + self.cluster.len());
        names.extend(
            self.own
                .into_iter()
                .map(|(_, attributes)| Bytes::from(attributes.name)),
        );
        let keep: Vec<bool> = {
            let mut seen: FxHashSet<&[u8]> = FxHashSet::default();
            seen.reserve(names.len() + self.cluster.len());
            seen.extend(names.iter().map(|n| &n[..]));
            self.cluster
                .iter()
                .map(|name| seen.insert(&name[..]))
                .collect()
        };
        names.extend(
            self.cluster
                .into_iter()
                .zip(keep)
                .filter_map(|(name, keep)| keep.then_some(name)),
        );
        names
    }
}

/// The contexts of one server.
#[derive(Default)]
pub(crate) struct Contexts {
    map: Mutex<HashMap<u64, Entry>>,
}

fn unknown(id: u64) -> Status {
    Status::aborted(ServerError::UnknownContext(id).to_string())
}

impl Contexts {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Entry>> {
        // A panic while holding the lock cannot leave the map inconsistent (every update is
        // one insert or remove), so a poisoned lock is still usable.
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The view-id check of `CreateContext` on an existing id: a lower view is refused; an
    /// equal or higher one replaces the old context (a worker that missed updates).
    pub(crate) fn check_create(&self, id: u64, view_id: u64) -> Result<(), Status> {
        if id == 0 {
            return Err(Status::invalid_argument(
                "Failed to initialize remote for worker context due to invalid context id",
            ));
        }
        match self.lock().get(&id) {
            Some(entry) if view_id < entry.info.view_id => Err(Status::invalid_argument(format!(
                "EagerService:CreateContext failed. Context id: <{id}> already exists."
            ))),
            _ => Ok(()),
        }
    }

    pub(crate) fn create(&self, id: u64, view_id: u64, keep_alive_secs: i64, install: Install) {
        let job = install.identity.job.clone();
        let task = install.identity.task;
        let devices = install.devices();
        let entry = Entry {
            info: ContextInfo {
                id,
                view_id,
                job,
                task,
                devices: Vec::new(),
                keep_alive_secs,
            },
            devices,
            last_access: Instant::now(),
        };
        self.lock().insert(id, entry);
    }

    /// `UpdateContext`: the view must advance by exactly one; `install` is `None` for a
    /// simplified update (only the view changes).
    pub(crate) fn update(
        &self,
        id: u64,
        view_id: u64,
        install: Option<Install>,
    ) -> Result<(), Status> {
        let mut map = self.lock();
        let entry = map.get_mut(&id).ok_or_else(|| unknown(id))?;
        entry.last_access = Instant::now();
        let current = entry.info.view_id;
        if view_id != current.wrapping_add(1) {
            return Err(Status::invalid_argument(format!(
                "EagerService:UpdateContext failed. Context id: <{id}> currently at view #{current} but received update request at view #{view_id}. View id should only be continuously incremented."
            )));
        }
        entry.info.view_id = view_id;
        if let Some(install) = install {
            entry.info.job = install.identity.job.clone();
            entry.info.task = install.identity.task;
            entry.devices = install.devices();
        }
        Ok(())
    }

    /// Touches a context and returns its view id.
    pub(crate) fn touch(&self, id: u64) -> Result<u64, Status> {
        let mut map = self.lock();
        let entry = map.get_mut(&id).ok_or_else(|| unknown(id))?;
        entry.last_access = Instant::now();
        Ok(entry.info.view_id)
    }

    /// `CloseContext`: an unknown id or a view older than the context's is ignored.
    pub(crate) fn close(&self, id: u64, view_id: u64) {
        let mut map = self.lock();
        if map.get(&id).is_some_and(|e| view_id >= e.info.view_id) {
            map.remove(&id);
        }
    }

    /// Drops every context (`CreateContext` with `clear_existing_contexts`).
    pub(crate) fn clear(&self) {
        self.lock().clear();
    }

    /// Drops contexts idle for longer than their `keep_alive_secs`; returns how many.
    pub(crate) fn collect_idle(&self, now: Instant) -> usize {
        let mut map = self.lock();
        let before = map.len();
        map.retain(|_, e| {
            let limit = e.info.keep_alive_secs;
            limit <= 0
                || now.saturating_duration_since(e.last_access)
                    <= Duration::from_secs(limit.unsigned_abs())
        });
        before - map.len()
    }

    pub(crate) fn snapshot(&self) -> Vec<ContextInfo> {
        let mut list: Vec<ContextInfo> = self
            .lock()
            .values()
            .map(|e| ContextInfo {
                devices: e.devices.iter().map(|d| text(d).to_owned()).collect(),
                ..e.info.clone()
            })
            .collect();
        list.sort_by_key(|c| c.id);
        list
    }

    /// The full name of the device `name` resolves to in context `id`: the device whose name
    /// parses to the same device (names are parsed here, at lookup, not when a context is
    /// created).
    pub(crate) fn lookup_device(&self, id: u64, name: &str) -> Result<String, ServerError> {
        let map = self.lock();
        let entry = map.get(&id).ok_or(ServerError::UnknownContext(id))?;
        let parsed: DeviceName = name
            .parse()
            .map_err(|_| ServerError::UnknownDevice(cluster_spec::quote::excerpt(name, 0)))?;
        entry
            .devices
            .iter()
            .map(text)
            .find(|known| known.parse::<DeviceName>().is_ok_and(|n| n == parsed))
            .map(str::to_owned)
            .ok_or_else(|| ServerError::UnknownDevice(cluster_spec::quote::excerpt(name, 0)))
    }
}

/// A device name kept as bytes, as text (names are checked to be UTF-8 when received).
fn text(name: &Bytes) -> &str {
    std::str::from_utf8(name).unwrap_or("")
}

/// A device name received from a client, refused unless it is UTF-8 (as protobuf requires of
/// a string field; checked here because the lean decoding reads it as bytes).
pub(crate) fn utf8_name(name: Bytes) -> Result<Bytes, Status> {
    if name.is_ascii() || std::str::from_utf8(&name).is_ok() {
        Ok(name)
    } else {
        Err(Status::invalid_argument(
            "cluster_device_attributes: a device name is not valid UTF-8",
        ))
    }
}
