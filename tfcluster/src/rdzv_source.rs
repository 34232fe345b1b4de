//! `--from rendezvous`: the running round of an elastic job (`run --rdzv`), seen from outside
//! the job through its rendezvous (built-in or etcd), which it neither joins nor changes.

use std::time::Duration;

use anyhow::anyhow;
use elastic::{ClientOptions, RendezvousWatcher};

use crate::args::Failure;
use crate::rdzv_target::{Backend, RdzvValue, Rendezvous};
use crate::rdzv_tls_args::RdzvTlsArgs;

/// How long an unreachable rendezvous is retried before a call fails: a watch reports it then
/// and retries by itself, with back-off.
const RETRY_FOR: Duration = Duration::from_secs(5);

/// The flags of `--from rendezvous`.
#[derive(clap::Args, Clone, Default)]
pub(crate) struct RdzvSourceArgs {
    /// With --from rendezvous: the rendezvous of the elastic job, as `tfcluster run --rdzv`
    /// gives it: `HOST[:PORT]`, the built-in one (port 29400 by default, plaintext gRPC), or
    /// `etcd://HOST[:PORT][,HOST[:PORT]...]`, an etcd cluster's members (port 2379 by
    /// default).
    #[arg(long = "rdzv", value_name = "HOST[:PORT]|etcd://HOST[:PORT],...")]
    pub(crate) rdzv: Option<RdzvValue>,
    /// With --from rendezvous: which rendezvous --rdzv names (run's --rdzv-backend); by
    /// default etcd for `etcd://…`, else the built-in one.
    #[arg(long, value_enum, value_name = "BACKEND", requires = "rdzv")]
    pub(crate) rdzv_backend: Option<Backend>,
    #[command(flatten)]
    pub(crate) rdzv_tls: RdzvTlsArgs,
    /// With --from rendezvous: the job's id at the rendezvous (run's --rdzv-id).
    #[arg(long = "rdzv-id", value_name = "JOB", default_value = "default")]
    pub(crate) rdzv_id: String,
}

impl RdzvSourceArgs {
    /// An observer of the job's rounds (`rendezvous` is `None` for a command without these
    /// flags: `run`, which joins a rendezvous as a node instead).
    pub(crate) async fn watcher(rendezvous: Option<&Self>) -> Result<RendezvousWatcher, Failure> {
        let args = rendezvous.ok_or_else(|| {
            anyhow!(
                "--from rendezvous is for connect, serve and resolve; run joins an elastic job \
                 with --rdzv"
            )
        })?;
        let value = args.rdzv.as_ref().ok_or_else(|| {
            anyhow!("--from rendezvous needs --rdzv HOST[:PORT] or --rdzv etcd://HOST[:PORT],...")
        })?;
        let rendezvous = Rendezvous::from_flags(value, args.rdzv_backend, &args.rdzv_tls)?;
        let options = ClientOptions::default().retry_for(RETRY_FOR);
        let client = rendezvous.client(options).await?;
        Ok(RendezvousWatcher::new(client, args.rdzv_id.clone()))
    }

    /// How `resolve` names this source.
    pub(crate) fn describe(&self) -> String {
        match &self.rdzv {
            Some(value) => format!("rendezvous {value} job {:?}", self.rdzv_id),
            None => "rendezvous".to_owned(),
        }
    }
}
