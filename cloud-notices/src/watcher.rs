//! [`NoticeWatcher`]: watches one cloud's notices in the background and publishes the
//! current one.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::board::Board;
use crate::endpoint::{self, EndpointError};
use crate::http::Http;
use crate::{Cloud, DMI_DIR, Notice, NoticeSource, aws, azure, detect, gce};

/// How often and how long the watchers ask.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timing {
    /// Between polls (EC2, Azure, a GCE key without an ETag): AWS advises 5 s.
    pub(crate) poll: Duration,
    /// After a failed request.
    pub(crate) retry: Duration,
    /// How long a GCE long poll waits for a change (`timeout_sec`).
    pub(crate) long_poll: Duration,
    /// One request's deadline (a long poll's on top of its wait).
    pub(crate) request: Duration,
    /// The TTL asked for each IMDSv2 token.
    pub(crate) aws_token_ttl: Duration,
}

/// How a [`NoticeWatcher`] finds its cloud and asks it.
#[derive(Debug, Clone)]
pub struct WatchOptions {
    dmi: PathBuf,
    vars: BTreeMap<String, String>,
    timing: Timing,
}

impl Default for WatchOptions {
    /// The firmware's strings from [`DMI_DIR`], the endpoint variables
    /// ([`endpoint::VARIABLES`]) from the process's environment, a poll every 5 s, GCE long
    /// polls of 60 s, 5 s per request, IMDSv2 tokens of 6 hours.
    fn default() -> Self {
        let vars = endpoint::VARIABLES
            .iter()
            .filter_map(|name| Some((name.to_string(), std::env::var(name).ok()?)))
            .collect();
        Self {
            dmi: PathBuf::from(DMI_DIR),
            vars,
            timing: Timing {
                poll: Duration::from_secs(5),
                retry: Duration::from_secs(5),
                long_poll: Duration::from_secs(60),
                request: Duration::from_secs(5),
                aws_token_ttl: Duration::from_secs(6 * 3600),
            },
        }
    }
}

impl WatchOptions {
    /// Reads the firmware's DMI strings from `dir` instead of [`DMI_DIR`] (for `auto`).
    pub fn with_dmi_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.dmi = dir.into();
        self
    }

    /// Endpoint variable `name` ([`endpoint::VARIABLES`]) set to `value`, whatever the
    /// environment says.
    pub fn with_var(mut self, name: &str, value: &str) -> Self {
        self.vars.insert(name.to_owned(), value.to_owned());
        self
    }

    /// Polls every `poll`, and retries a failed request after it.
    pub fn with_poll(mut self, poll: Duration) -> Self {
        self.timing.poll = poll;
        self.timing.retry = poll;
        self
    }

    /// GCE long polls wait at most `wait` for a change (whole seconds, at least 1).
    pub fn with_long_poll(mut self, wait: Duration) -> Self {
        self.timing.long_poll = wait.max(Duration::from_secs(1));
        self
    }

    /// Asks IMDSv2 for tokens of `ttl` (whole seconds, 1 to 21,600 as EC2 allows).
    pub fn with_aws_token_ttl(mut self, ttl: Duration) -> Self {
        self.timing.aws_token_ttl = ttl.clamp(Duration::from_secs(1), Duration::from_secs(21_600));
        self
    }

    /// The cloud `source` means on this host: the one named, the firmware's under `auto`,
    /// none when `off` or when `auto` finds no cloud.
    pub fn cloud(&self, source: NoticeSource) -> Option<Cloud> {
        match source {
            NoticeSource::Cloud(cloud) => Some(cloud),
            NoticeSource::Auto => detect(&self.dmi),
            NoticeSource::Off => None,
        }
    }
}

/// One cloud's notices, watched by background tasks (stopped when it is dropped); the
/// current notice on [`notices`](Self::notices).
pub struct NoticeWatcher {
    cloud: Cloud,
    notices: watch::Receiver<Option<Notice>>,
    http: Http,
    base: String,
    timing: Timing,
    _tasks: JoinSet<()>,
}

impl NoticeWatcher {
    /// Starts watching the notices of the cloud `source` means ([`WatchOptions::cloud`]);
    /// `Ok(None)` when there is none, and then nothing is sent anywhere. A service that
    /// cannot be reached is logged (once) and asked again; the watcher never ends on its
    /// own. Needs a tokio runtime.
    ///
    /// # Errors
    ///
    /// The cloud's endpoint variable is set to no usable address.
    pub fn start(
        source: NoticeSource,
        options: &WatchOptions,
    ) -> Result<Option<Self>, EndpointError> {
        let Some(cloud) = options.cloud(source) else {
            return Ok(None);
        };
        let base = endpoint::base(cloud, &options.vars)?;
        let (board, notices) = Board::new(cloud);
        let (board, http, timing) = (Arc::new(board), Http::new(), options.timing);
        let mut tasks = JoinSet::new();
        let (h, b) = (http.clone(), base.clone());
        match cloud {
            Cloud::Gce => tasks.spawn(gce::watch(h, b, board, timing)),
            Cloud::Aws => tasks.spawn(aws::watch(h, b, board, timing)),
            Cloud::Azure => tasks.spawn(azure::watch(h, b, board, timing)),
        };
        tracing::info!(%cloud, endpoint = %base, "watching the cloud's preemption and maintenance notices");
        Ok(Some(Self {
            cloud,
            notices,
            http,
            base,
            timing,
            _tasks: tasks,
        }))
    }

    /// The cloud watched.
    pub fn cloud(&self) -> Cloud {
        self.cloud
    }

    /// The current notice (`None`: none, or withdrawn), changed as the cloud says.
    pub fn notices(&self) -> watch::Receiver<Option<Notice>> {
        self.notices.clone()
    }

    /// Tells the cloud the VM is ready for `notice`'s event, where the cloud takes that:
    /// Azure approves the event (`StartRequests`) and goes ahead before its `NotBefore`.
    /// `Ok(true)` when the cloud was told; `Ok(false)` where it takes no approval (GCE,
    /// EC2) or the notice names no event.
    ///
    /// # Errors
    ///
    /// The approval was not accepted: the error says what the service answered.
    pub async fn acknowledge(&self, notice: &Notice) -> Result<bool, AcknowledgeError> {
        match (self.cloud, &notice.event_id) {
            (Cloud::Azure, Some(id)) => {
                azure::acknowledge(&self.http, &self.base, id, self.timing.request)
                    .await
                    .map_err(|problem| AcknowledgeError {
                        event_id: id.clone(),
                        problem,
                    })?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}

/// An approval of a cloud's event that did not go through.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot approve scheduled event {event_id}: {problem}")]
pub struct AcknowledgeError {
    /// The event's id.
    pub event_id: String,
    /// What the service answered, or why it could not be asked.
    pub problem: String,
}
