//! `run --rdzv`'s `--preemption-notices` and `--preemption-lead`: whose notices the agent
//! follows, and how long before a notice's deadline it leaves the job.

use std::time::Duration;

use elastic::Notices;
use elastic::cloud_notices::{NoticeSource, NoticeWatcher, WatchOptions};

/// The cloud-notice flags.
#[derive(clap::Args, Debug, Clone, Copy)]
pub(crate) struct PreemptionArgs {
    /// With --rdzv: whose preemption and maintenance notices to follow: `auto` (the cloud
    /// this host's firmware names; on other hosts none, and nothing is sent), `gce`, `aws`,
    /// `azure` or `off`. On a notice, the agent stops its tasks with SIGTERM (TensorFlow's
    /// PreemptionCheckpointHandler saves at one step on every worker) and leaves the job
    /// --preemption-lead before the deadline, so the next round forms without this host;
    /// its tasks can read the notice (tfcluster.preemption_deadline()). See the guide's
    /// Preemption section.
    #[arg(long, value_name = "CLOUD", default_value = "auto", requires = "rdzv")]
    preemption_notices: NoticeSource,
    /// With --rdzv: how long before a notice's deadline the agent leaves (at once when less
    /// is left): the time a checkpoint and the job's next round need. A notice far ahead
    /// (Azure's Terminate, 15 minutes; EC2's scheduled maintenance, days) is acted on then,
    /// not when it comes.
    #[arg(long, value_name = "DUR", default_value = "60s", value_parser = humantime::parse_duration, requires = "rdzv")]
    preemption_lead: Duration,
}

impl PreemptionArgs {
    /// Starts watching the notices the flags ask for: `None` when there is nothing to watch,
    /// or when the cloud's endpoint variable does not parse (said, and the job runs without
    /// them). Needs the runtime.
    pub(crate) fn watch(&self) -> Option<(NoticeWatcher, Notices)> {
        match NoticeWatcher::start(self.preemption_notices, &WatchOptions::default()) {
            Ok(Some(watcher)) => {
                let notices = Notices::new(watcher.notices(), self.preemption_lead);
                Some((watcher, notices))
            }
            Ok(None) => None,
            Err(e) => {
                tracing::warn!(error = %e, "not following the cloud's notices");
                None
            }
        }
    }
}
