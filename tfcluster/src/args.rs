//! Flag groups more than one command or launcher uses, each a `clap::Args` struct that a
//! command flattens, with the checks that turn its flags into values: where the cluster comes
//! from ([`source`]), where an elastic job's rendezvous is ([`rendezvous`], declared once for
//! `run --rdzv` and `--from rendezvous`), TLS ([`tls`]), the task server's limits
//! ([`limits`]), `run`'s GPU split ([`gpus`], for `--local` and `--rdzv`), how it stops
//! tasks ([`stops`], the same), finds hung ones ([`watchdog`], the same), keeps their output
//! in files ([`task_logs`], the same) and keeps them warm ([`prewarm`], `--rdzv`), the
//! elastic job's own flags ([`elastic`], read by `run` and by its agent in [`crate::run`]),
//! `--metrics` ([`metrics`], `run` and `rendezvous serve`) and a server's `--allow` ([`allow`],
//! `serve` and `rendezvous serve`).

pub(crate) mod allow;
pub(crate) mod bad_hosts;
pub(crate) mod elastic;
pub(crate) mod gpus;
pub(crate) mod limits;
pub(crate) mod metrics;
pub(crate) mod preemption;
pub(crate) mod prewarm;
pub(crate) mod rendezvous;
pub(crate) mod restarts;
pub(crate) mod source;
pub(crate) mod stops;
pub(crate) mod task_logs;
pub(crate) mod tls;
pub(crate) mod watchdog;
