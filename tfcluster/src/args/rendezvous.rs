//! The rendezvous flags: `--rdzv`, `--rdzv-backend`, the `--rdzv-tls-*` flags and
//! `--rdzv-id`, declared once ([`RdzvTargetArgs`]) and flattened where a command reaches an
//! elastic job's rendezvous: `run --rdzv`, whose agent joins the job ([`JoinRole`]), and the
//! `--from rendezvous` source of `connect`, `serve` and `resolve`, which observes its running
//! round, neither joining nor changing it ([`ObserveRole`]), and `status`, which reads the
//! job's state or lists the jobs ([`StatusRole`]). The role gives each flag's help
//! and says whether `--rdzv-id` needs `--rdzv`. What the flags name, checked, is
//! [`target::Rendezvous`]; the job's token, from `--rdzv-token-file` or
//! `TFCLUSTER_RDZV_TOKEN`, is [`token`]'s; the rendezvous's timings, which `run --rdzv` and
//! `rendezvous serve` both set, are [`timing`]'s.

pub(crate) mod target;
pub(crate) mod timing;
pub(crate) mod token;

use std::marker::PhantomData;
use std::time::Duration;

use anyhow::anyhow;
use clap::Id;
use clap::builder::Resettable;
use elastic::{ClientOptions, RendezvousWatcher};

use crate::args::tls::RdzvTlsArgs;
use crate::failure::Failure;
use target::{Backend, RdzvValue, Rendezvous};

/// How long an unreachable rendezvous is retried before a call fails: a watch reports it then
/// and retries by itself, with back-off.
const RETRY_FOR: Duration = Duration::from_secs(5);

/// What a command does at the rendezvous, as its flags' help says it. The texts are the
/// help lines clap shows (a doc comment's, without its final period).
pub(crate) trait RdzvRole {
    /// `--rdzv`'s help.
    const RDZV: &'static str;
    /// `--rdzv-backend`'s help.
    const BACKEND: &'static str;
    /// `--rdzv-id`'s help.
    const ID: &'static str;
    /// The flag `--rdzv-id` needs, if any.
    const ID_REQUIRES: Option<&'static str>;
    /// `--rdzv-token-file`'s help.
    const TOKEN_FILE: &'static str;
}

/// `run --rdzv`: this host's agent joins the job (`--rdzv-id` only with `--rdzv`, where it
/// means something).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct JoinRole;

impl RdzvRole for JoinRole {
    const RDZV: &'static str = "Run this host's share of an elastic job, meeting the other hosts \
        at the rendezvous: `HOST[:PORT]`, the built-in one (port 29400 by default), which the \
        agent on HOST serves when nothing answers there; or \
        `etcd://HOST[:PORT][,HOST[:PORT]...]`, an etcd cluster's members (port 2379 by \
        default), where every agent is equal and nothing is served";
    const BACKEND: &'static str = "With --rdzv: which rendezvous --rdzv names; by default etcd \
        for `etcd://…`, else the built-in one. With etcd, --rdzv may be a bare list, \
        `h1:2379,h2:2379`, or etcdctl's `http://h1:2379,http://h2:2379`";
    const ID: &'static str = "With --rdzv: the job's id at the rendezvous, the same on every \
        host [default: default]";
    const ID_REQUIRES: Option<&'static str> = Some("rdzv");
    const TOKEN_FILE: &'static str = "With --rdzv: a file holding the job's token (16 to 1024 \
        printable ASCII characters; one trailing newline is dropped), the same on every host, \
        or TFCLUSTER_RDZV_TOKEN (not both). The job's first host sets it; the rendezvous \
        refuses every later call on the job without it (the agent that serves the built-in \
        rendezvous refuses every call without it, on any job). No task sees it. E.g. `TFCLUSTER_RDZV_TOKEN=$(tfcluster \
        rendezvous token)` in the script that starts every host. Without it (or \
        TFCLUSTER_RDZV_TOKEN) the job is open, with a warning: anyone who reaches the \
        rendezvous can join it as a new host, see its cluster, or take its id first (each \
        host's own calls stay protected by its secret). Hosts are often started by one script \
        with nothing else shared, and torchrun's store and etcd make the same choice";
}

/// `--from rendezvous`: the command observes the job's running round (`--rdzv-id` alone is
/// no usage error: without `--from rendezvous` it is unused, with it the missing `--rdzv` is
/// named by [`RdzvTargetArgs::watcher`]).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ObserveRole;

impl RdzvRole for ObserveRole {
    const RDZV: &'static str = "With --from rendezvous: the rendezvous of the elastic job, as \
        `tfcluster run --rdzv` gives it: `HOST[:PORT]`, the built-in one (port 29400 by \
        default; plaintext gRPC, or mTLS with all three --rdzv-tls-* flags), or \
        `etcd://HOST[:PORT][,HOST[:PORT]...]`, an etcd cluster's members (port 2379 by \
        default)";
    const BACKEND: &'static str = "With --from rendezvous: which rendezvous --rdzv names (run's \
        --rdzv-backend); by default etcd for `etcd://…`, else the built-in one";
    const ID: &'static str = "With --from rendezvous: the job's id at the rendezvous (run's \
        --rdzv-id) [default: default]";
    const ID_REQUIRES: Option<&'static str> = None;
    const TOKEN_FILE: &'static str = "With --from rendezvous: a file holding the job's token \
        (run's --rdzv-token-file), or TFCLUSTER_RDZV_TOKEN (not both): a job started with one \
        shows its rounds only to callers with it";
}

/// `status`: the command reads a job's state, or without `--rdzv-id` lists the jobs.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct StatusRole;

impl RdzvRole for StatusRole {
    const RDZV: &'static str = "The rendezvous, as `tfcluster run --rdzv` gives it: \
        `HOST[:PORT]`, the built-in one (port 29400 by default; plaintext gRPC, or mTLS with \
        all three --rdzv-tls-* flags), or `etcd://HOST[:PORT][,HOST[:PORT]...]`, an etcd \
        cluster's members (port 2379 by default)";
    const BACKEND: &'static str = "Which rendezvous --rdzv names (run's --rdzv-backend); by \
        default etcd for `etcd://…`, else the built-in one";
    const ID: &'static str = "The job to show (run's --rdzv-id). Without it: the jobs the \
        rendezvous holds that the token opens (the open ones, and the token's own)";
    const ID_REQUIRES: Option<&'static str> = None;
    const TOKEN_FILE: &'static str = "A file holding the job's token (run's \
        --rdzv-token-file), or TFCLUSTER_RDZV_TOKEN (not both): a job started with one shows \
        itself only to callers with it";
}

/// The flags of `--from rendezvous`.
pub(crate) type RdzvSourceArgs = RdzvTargetArgs<ObserveRole>;

/// Where an elastic job's rendezvous is and which job. The fields have no doc comments:
/// their help is `R`'s (a doc comment would be clap's help too).
#[derive(clap::Args, Clone, Debug, Default)]
pub(crate) struct RdzvTargetArgs<R: RdzvRole> {
    #[arg(long, value_name = "HOST[:PORT]|etcd://HOST[:PORT],...", help = R::RDZV)]
    pub(crate) rdzv: Option<RdzvValue>,
    #[arg(long, value_enum, value_name = "BACKEND", requires = "rdzv", help = R::BACKEND)]
    pub(crate) rdzv_backend: Option<Backend>,
    #[command(flatten)]
    pub(crate) rdzv_tls: RdzvTlsArgs,
    #[arg(
        long,
        value_name = "JOB",
        help = R::ID,
        requires = Resettable::from(R::ID_REQUIRES.map(Id::from)),
    )]
    rdzv_id: Option<String>,
    #[arg(long, value_name = "PATH", help = R::TOKEN_FILE)]
    pub(crate) rdzv_token_file: Option<std::path::PathBuf>,
    /// The token, once read: the agent needs it as a client and as the server it may be,
    /// and the file is read (and its mode warned about) once.
    #[arg(skip)]
    read_token: std::sync::OnceLock<Option<elastic::Token>>,
    #[arg(skip)]
    role: PhantomData<R>,
}

/// The job id when `--rdzv-id` names none.
pub(crate) const DEFAULT_ID: &str = "default";

impl<R: RdzvRole> RdzvTargetArgs<R> {
    /// The job's id: `--rdzv-id`'s, else [`DEFAULT_ID`].
    pub(crate) fn rdzv_id(&self) -> &str {
        self.rdzv_id.as_deref().unwrap_or(DEFAULT_ID)
    }

    /// `--rdzv-id`'s value, when it was given.
    pub(crate) fn given_id(&self) -> Option<&str> {
        self.rdzv_id.as_deref()
    }

    /// The rendezvous the flags name ([`Rendezvous::from_flags`]: contradicting flags are a
    /// usage error, the TLS files are read now); `None` without --rdzv.
    pub(crate) fn rendezvous(&self) -> Result<Option<Rendezvous>, Failure> {
        self.rdzv
            .as_ref()
            .map(|value| Rendezvous::from_flags(value, self.rdzv_backend, &self.rdzv_tls))
            .transpose()
    }

    /// The job's token: `--rdzv-token-file`'s, else `TFCLUSTER_RDZV_TOKEN`'s, else none.
    pub(crate) fn token(&self) -> Result<Option<elastic::Token>, Failure> {
        if let Some(token) = self.read_token.get() {
            return Ok(token.clone());
        }
        let token = token::token(self.rdzv_token_file.as_deref(), "--rdzv-token-file")?;
        Ok(self.read_token.get_or_init(|| token).clone())
    }

    /// The client options of these flags: `options` with the job's token, if any. Without
    /// one, an agent joining the job at `warn_at` warns that the job is open (an observer
    /// changes nothing, and is refused by a job that has a token).
    pub(crate) fn client_options(
        &self,
        options: ClientOptions,
        warn_at: Option<&Rendezvous>,
    ) -> Result<ClientOptions, Failure> {
        Ok(match (self.token()?, warn_at) {
            (Some(token), _) => options.with_token(token),
            (None, Some(rendezvous)) => {
                token::warn_open(
                    &rendezvous.to_string(),
                    Some(self.rdzv_id()),
                    "--rdzv-token-file",
                );
                options
            }
            (None, None) => options,
        })
    }
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
        let rendezvous = args.rendezvous()?.ok_or_else(|| {
            anyhow!("--from rendezvous needs --rdzv HOST[:PORT] or --rdzv etcd://HOST[:PORT],...")
        })?;
        let options = ClientOptions::default().with_retry_for(RETRY_FOR);
        let options = args.client_options(options, None)?;
        let client = rendezvous.client(options).await?;
        Ok(RendezvousWatcher::new(client, args.rdzv_id().to_owned()))
    }

    /// How `resolve` names this source.
    pub(crate) fn describe(&self) -> String {
        match &self.rdzv {
            Some(value) => format!("rendezvous {value} job {:?}", self.rdzv_id()),
            None => "rendezvous".to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::*;

    /// The flags as `run` has them.
    #[derive(Parser)]
    struct Joins {
        #[command(flatten)]
        target: RdzvTargetArgs<JoinRole>,
    }

    /// The flags as `--from rendezvous` has them.
    #[derive(Parser)]
    struct Observes {
        #[command(flatten)]
        target: RdzvSourceArgs,
    }

    #[test]
    fn the_id_needs_rdzv_only_where_the_job_is_joined() {
        assert!(Joins::try_parse_from(["t", "--rdzv-id", "j"]).is_err());
        let observed = Observes::try_parse_from(["t", "--rdzv-id", "j"]).unwrap();
        assert_eq!(observed.target.rdzv_id(), "j");
        assert!(observed.target.rendezvous().unwrap().is_none());
        let joined = Joins::try_parse_from(["t", "--rdzv", "node0", "--rdzv-id", "j"]).unwrap();
        assert_eq!(joined.target.rdzv_id(), "j");
        let rendezvous = joined.target.rendezvous().unwrap().expect("--rdzv given");
        assert_eq!(rendezvous.to_string(), "node0:29400");
    }

    #[test]
    fn each_role_has_its_own_help() {
        let join = Joins::command().render_help().to_string();
        assert!(
            join.contains("Run this host's share of an elastic job"),
            "{join}"
        );
        assert!(join.contains("the same on every host"), "{join}");
        let observe = Observes::command().render_help().to_string();
        assert!(
            observe.contains("With --from rendezvous: the rendezvous"),
            "{observe}"
        );
        assert!(observe.contains("(run's --rdzv-id)"), "{observe}");
    }
}
