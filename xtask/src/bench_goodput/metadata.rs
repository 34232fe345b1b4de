//! Each host's GCE metadata server, as each VM has its own: a stand-in
//! (`http_standin::GceMetadata`) listening on the host's own loopback, started inside its
//! network namespace, where the host's agent reaches it through `GCE_METADATA_HOST`. A
//! notice is `instance/preempted: TRUE`; withdrawn, `FALSE` again.

use http_standin::GceMetadata;

use super::job::{HOSTS, Job};

/// The key a GCE preemption notice is.
const PREEMPTED: &str = "instance/preempted";

/// The stand-ins of a job's hosts, and the runtime that serves them; dropped, they stop.
pub(super) struct Metadata {
    servers: Vec<GceMetadata>,
    // Dropped after the servers: the runtime their connections run on.
    runtime: tokio::runtime::Runtime,
}

impl Metadata {
    /// Starts one in each of `job`'s hosts and points the host's agents at it.
    pub(super) fn start(job: &mut Job) -> Result<Self, String> {
        let runtime = tokio::runtime::Runtime::new()
            .map_err(|e| format!("cannot start a runtime for the metadata stand-ins: {e}"))?;
        let servers: Vec<GceMetadata> = (0..HOSTS)
            .map(|h| {
                job.hosts()
                    .in_host(h, || runtime.block_on(GceMetadata::start()))
            })
            .collect();
        for (h, server) in servers.iter().enumerate() {
            job.set_env(h, "GCE_METADATA_HOST", server.host());
        }
        Ok(Self { servers, runtime })
    }

    /// Gives host `h` a spot notice (`noticed`) or withdraws it.
    pub(super) fn preempted(&self, h: usize, noticed: bool) {
        self.servers[h].set(PREEMPTED, if noticed { "TRUE" } else { "FALSE" });
    }
}

impl Drop for Metadata {
    fn drop(&mut self) {
        for server in self.servers.drain(..) {
            self.runtime.block_on(server.stop());
        }
    }
}
