//! `--from rendezvous`: the running round of an elastic job (`run --rdzv`), seen from outside
//! the job through its rendezvous, which it neither joins nor changes.

use std::time::Duration;

use anyhow::anyhow;
use elastic::{ClientOptions, RendezvousClient, RendezvousWatcher};

use crate::args::Failure;
use crate::rdzv_args::Endpoint;

/// How long an unreachable rendezvous is retried before a call fails: a watch reports it then
/// and retries by itself, with back-off.
const RETRY_FOR: Duration = Duration::from_secs(5);

/// The flags of `--from rendezvous`.
#[derive(clap::Args, Clone, Default)]
pub(crate) struct RdzvSourceArgs {
    /// With --from rendezvous: the rendezvous of the elastic job (`tfcluster run --rdzv`),
    /// `HOST[:PORT]` (port 29400 by default). Plaintext gRPC, as the rendezvous serves it.
    #[arg(long = "rdzv", value_name = "HOST[:PORT]")]
    pub(crate) rdzv: Option<Endpoint>,
    /// With --from rendezvous: the job's id at the rendezvous (run's --rdzv-id).
    #[arg(long = "rdzv-id", value_name = "JOB", default_value = "default")]
    pub(crate) rdzv_id: String,
}

impl RdzvSourceArgs {
    /// An observer of the job's rounds (`rendezvous` is `None` for a command without these
    /// flags: `run`, which joins a rendezvous as a node instead).
    pub(crate) fn watcher(rendezvous: Option<&Self>) -> Result<RendezvousWatcher, Failure> {
        let args = rendezvous.ok_or_else(|| {
            anyhow!(
                "--from rendezvous is for connect, serve and resolve; run joins an elastic job \
                 with --rdzv"
            )
        })?;
        let endpoint = args
            .rdzv
            .as_ref()
            .ok_or_else(|| anyhow!("--from rendezvous needs --rdzv HOST[:PORT]"))?;
        let options = ClientOptions::default().retry_for(RETRY_FOR);
        let client = RendezvousClient::new(endpoint.to_string(), options)?;
        Ok(RendezvousWatcher::new(client, args.rdzv_id.clone()))
    }

    /// How `resolve` names this source.
    pub(crate) fn describe(&self) -> String {
        match &self.rdzv {
            Some(endpoint) => format!("rendezvous {endpoint} job {:?}", self.rdzv_id),
            None => "rendezvous".to_owned(),
        }
    }
}
