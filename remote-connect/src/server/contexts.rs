//! The remote contexts a server holds, with TensorFlow's `EagerServiceImpl` rules for creating,
//! updating, touching, closing and collecting them.

use std::collections::{BTreeSet, HashMap};

use bytes::{Bytes, BytesMut};
use rustc_hash::FxHashSet;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use cluster_proto::DeviceAttributes;
use device_filter::DeviceName;
use tonic::Status;

use super::ServerError;
use super::identity::Identity;
use super::metrics::{ContextLimit, TaskServerMetrics};

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
    /// Everything but the devices, which are kept as bytes (a context of a large cluster is
    /// given thousands) and turned into text only when asked for.
    info: ContextInfo,
    devices: Devices,
    last_access: Instant,
}

/// A context's device names, all in one buffer.
struct Devices {
    names: Vec<Bytes>,
    /// What they hold, counted against [`Limits::context_memory`](crate::Limits::context_memory).
    bytes: usize,
}

/// What a context holds besides its device names: its entry, its map slot, its info.
const CONTEXT_OVERHEAD: usize = 256;

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
    /// in the canonical form, so a context of a large cluster costs no parsing. They are
    /// copied into one buffer, so the context does not keep the request it came in alive.
    fn devices(self) -> Devices {
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
        let mut buffer = BytesMut::with_capacity(names.iter().map(Bytes::len).sum());
        names.iter().for_each(|name| buffer.extend_from_slice(name));
        let mut buffer = buffer.freeze();
        let names: Vec<Bytes> = names
            .iter()
            .map(|name| buffer.split_to(name.len()))
            .collect();
        let bytes = names.iter().map(Bytes::len).sum::<usize>()
            + names.capacity() * std::mem::size_of::<Bytes>()
            + CONTEXT_OVERHEAD;
        Devices { names, bytes }
    }
}

/// The contexts of one server, within its limits.
pub(crate) struct Contexts {
    map: Mutex<Map>,
    /// [`Limits::max_contexts`](crate::Limits::max_contexts).
    max_count: usize,
    /// [`Limits::context_memory`](crate::Limits::context_memory).
    max_bytes: usize,
    /// [`Limits::context_idle_limit`](crate::Limits::context_idle_limit).
    idle_limit: Option<Duration>,
    /// Counts the contexts held and the refusals by the limits above.
    metrics: TaskServerMetrics,
}

#[derive(Default)]
struct Map {
    entries: HashMap<u64, Entry>,
    /// The contexts without keep-alive, least recently used first: the ones that make room.
    unkept: BTreeSet<(Instant, u64)>,
    /// What every entry's devices hold together.
    bytes: usize,
}

impl Map {
    /// Puts `entry` in place of what `id` had (its bytes are counted by `make_room`).
    fn insert(&mut self, id: u64, entry: Entry) {
        if let Some(old) = self.entries.remove(&id) {
            self.unkept.remove(&(old.last_access, id));
        }
        if entry.info.keep_alive_secs <= 0 {
            self.unkept.insert((entry.last_access, id));
        }
        self.entries.insert(id, entry);
    }

    /// The context `id`, marked as used now.
    fn touch(&mut self, id: u64) -> Option<&mut Entry> {
        let entry = self.entries.get_mut(&id)?;
        let now = Instant::now();
        if self.unkept.remove(&(entry.last_access, id)) {
            self.unkept.insert((now, id));
        }
        entry.last_access = now;
        Some(entry)
    }

    /// Counts a context of `devices` bytes in place of what `id` had, if it fits the limits
    /// with that replaced; the caller then puts the context in place. To make it fit, the
    /// contexts without keep-alive that were used least recently are dropped first: they are
    /// the ones TensorFlow would keep forever, and what a client that floods the server with
    /// contexts creates. Contexts with a keep-alive are never dropped to make room (they
    /// expire on their own), so a full table of them refuses with `RESOURCE_EXHAUSTED`.
    fn make_room(&mut self, id: u64, devices: usize, limits: &Contexts) -> Result<(), Status> {
        if devices > limits.max_bytes {
            return Err(limits.refuse(
                ContextLimit::ContextMemory,
                over_memory(devices, limits.max_bytes),
            ));
        }
        let mut dropped = 0;
        loop {
            let replaced = self.entries.get(&id).map(|e| e.devices.bytes);
            let count = self.entries.len() + usize::from(replaced.is_none());
            let bytes = self.bytes - replaced.unwrap_or(0) + devices;
            if count <= limits.max_count && bytes <= limits.max_bytes {
                self.bytes = bytes;
                if dropped > 0 {
                    tracing::info!(
                        dropped,
                        "dropped the least recently used contexts without keep-alive to make \
                         room for a new one (max_contexts, context_memory)"
                    );
                }
                return Ok(());
            }
            let oldest = self
                .unkept
                .iter()
                .map(|&(_, other)| other)
                .find(|&other| other != id);
            match oldest {
                Some(other) => {
                    self.remove(other);
                    dropped += 1;
                }
                None if count > limits.max_count => {
                    return Err(limits.refuse(
                        ContextLimit::MaxContexts,
                        Status::resource_exhausted(format!(
                            "this server holds {} contexts with a keep-alive, its limit \
                             (max_contexts): close contexts or wait for idle ones to expire",
                            limits.max_count
                        )),
                    ));
                }
                None => {
                    return Err(limits.refuse(
                        ContextLimit::ContextMemory,
                        over_memory(bytes, limits.max_bytes),
                    ));
                }
            }
        }
    }

    fn remove(&mut self, id: u64) {
        if let Some(entry) = self.entries.remove(&id) {
            self.unkept.remove(&(entry.last_access, id));
            self.bytes -= entry.devices.bytes;
        }
    }
}

fn over_memory(bytes: usize, limit: usize) -> Status {
    Status::resource_exhausted(format!(
        "this server's contexts would hold {bytes} bytes of device names, past its limit of \
         {limit} (context_memory): close contexts or connect with device filters"
    ))
}

fn unknown(id: u64) -> Status {
    Status::aborted(ServerError::UnknownContext(id).to_string())
}

impl Contexts {
    pub(crate) fn new(limits: &crate::Limits, metrics: TaskServerMetrics) -> Self {
        Self {
            map: Mutex::default(),
            max_count: limits.max_contexts,
            max_bytes: limits.context_memory,
            idle_limit: limits.context_idle_limit,
            metrics,
        }
    }

    fn lock(&self) -> Locked<'_> {
        // A panic while holding the lock cannot leave the map inconsistent (every update is
        // one insert or remove, its bytes counted after it fits), so a poisoned lock is still
        // usable.
        Locked {
            map: self.map.lock().unwrap_or_else(|e| e.into_inner()),
            metrics: &self.metrics,
        }
    }

    /// `status`, a refusal by `limit`, counted.
    fn refuse(&self, limit: ContextLimit, status: Status) -> Status {
        self.metrics.refused(limit);
        status
    }

    /// The view-id check of `CreateContext` on an existing id: a lower view is refused; an
    /// equal or higher one replaces the old context (a worker that missed updates).
    pub(crate) fn check_create(&self, id: u64, view_id: u64) -> Result<(), Status> {
        if id == 0 {
            return Err(Status::invalid_argument(
                "Failed to initialize remote for worker context due to invalid context id",
            ));
        }
        match self.lock().entries.get(&id) {
            Some(entry) if view_id < entry.info.view_id => Err(Status::invalid_argument(format!(
                "EagerService:CreateContext failed. Context id: <{id}> already exists."
            ))),
            _ => Ok(()),
        }
    }

    /// Installs a new context, or refuses with `RESOURCE_EXHAUSTED` past the limits.
    pub(crate) fn create(
        &self,
        id: u64,
        view_id: u64,
        keep_alive_secs: i64,
        install: Install,
    ) -> Result<(), Status> {
        let job = install.identity.job.clone();
        let task = install.identity.task;
        let devices = install.devices();
        let mut map = self.lock();
        map.make_room(id, devices.bytes, self)?;
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
        map.insert(id, entry);
        Ok(())
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
        let entry = map.touch(id).ok_or_else(|| unknown(id))?;
        let current = entry.info.view_id;
        if view_id != current.wrapping_add(1) {
            return Err(Status::invalid_argument(format!(
                "EagerService:UpdateContext failed. Context id: <{id}> currently at view #{current} but received update request at view #{view_id}. View id should only be continuously incremented."
            )));
        }
        let Some(install) = install else {
            entry.info.view_id = view_id;
            return Ok(());
        };
        let identity = install.identity.clone();
        let devices = install.devices();
        map.make_room(id, devices.bytes, self)?;
        let entry = map.entries.get_mut(&id).expect("checked above");
        entry.info.view_id = view_id;
        entry.info.job = identity.job;
        entry.info.task = identity.task;
        entry.devices = devices;
        Ok(())
    }

    /// Touches a context and returns its view id.
    pub(crate) fn touch(&self, id: u64) -> Result<u64, Status> {
        let mut map = self.lock();
        let entry = map.touch(id).ok_or_else(|| unknown(id))?;
        Ok(entry.info.view_id)
    }

    /// `CloseContext`: an unknown id or a view older than the context's is ignored.
    pub(crate) fn close(&self, id: u64, view_id: u64) {
        let mut map = self.lock();
        if map
            .entries
            .get(&id)
            .is_some_and(|e| view_id >= e.info.view_id)
        {
            map.remove(id);
        }
    }

    /// Drops every context (`CreateContext` with `clear_existing_contexts`).
    pub(crate) fn clear(&self) {
        *self.lock() = Map::default();
    }

    /// Drops contexts idle for longer than their `keep_alive_secs`, and those without one idle
    /// past the server's `context_idle_limit`; returns how many.
    pub(crate) fn collect_idle(&self, now: Instant) -> usize {
        let mut map = self.lock();
        let idle: Vec<u64> = map
            .entries
            .iter()
            .filter(|(_, e)| {
                let limit = match e.info.keep_alive_secs {
                    secs if secs > 0 => Duration::from_secs(secs.unsigned_abs()),
                    _ => match self.idle_limit {
                        Some(limit) => limit,
                        None => return false,
                    },
                };
                now.saturating_duration_since(e.last_access) > limit
            })
            .map(|(&id, _)| id)
            .collect();
        idle.iter().for_each(|&id| map.remove(id));
        idle.len()
    }

    pub(crate) fn snapshot(&self) -> Vec<ContextInfo> {
        let mut list: Vec<ContextInfo> = self
            .lock()
            .entries
            .values()
            .map(|e| ContextInfo {
                devices: e.devices.names.iter().map(|d| text(d).to_owned()).collect(),
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
        let entry = map
            .entries
            .get(&id)
            .ok_or(ServerError::UnknownContext(id))?;
        let parsed: DeviceName = name.parse().map_err(|_| {
            ServerError::UnknownDevice(cluster_spec::__private::quote::excerpt(name, 0))
        })?;
        entry
            .devices
            .names
            .iter()
            .map(text)
            .find(|known| known.parse::<DeviceName>().is_ok_and(|n| n == parsed))
            .map(str::to_owned)
            .ok_or_else(|| {
                ServerError::UnknownDevice(cluster_spec::__private::quote::excerpt(name, 0))
            })
    }
}

/// The locked map; when unlocked, the contexts gauge is set to what it holds, so every
/// change (create, close, collection, making room) is counted without each saying so.
struct Locked<'a> {
    map: std::sync::MutexGuard<'a, Map>,
    metrics: &'a TaskServerMetrics,
}

impl std::ops::Deref for Locked<'_> {
    type Target = Map;
    fn deref(&self) -> &Map {
        &self.map
    }
}

impl std::ops::DerefMut for Locked<'_> {
    fn deref_mut(&mut self) -> &mut Map {
        &mut self.map
    }
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        self.metrics.set_contexts(self.map.entries.len());
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
