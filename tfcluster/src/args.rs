//! Flag groups more than one command or launcher uses, each a `clap::Args` struct that a
//! command flattens, with the checks that turn its flags into values: where the cluster comes
//! from ([`source`]), where an elastic job's rendezvous is ([`rendezvous`], declared once for
//! `run --rdzv` and `--from rendezvous`), TLS ([`tls`]), the task server's limits
//! ([`limits`]), `run`'s GPU split ([`gpus`], for `--local` and `--rdzv`) and how it stops
//! tasks ([`stops`], the same), and the elastic job's own flags ([`elastic`], read by `run`
//! and by its agent in [`crate::run`]).

pub(crate) mod elastic;
pub(crate) mod gpus;
pub(crate) mod limits;
pub(crate) mod rendezvous;
pub(crate) mod source;
pub(crate) mod stops;
pub(crate) mod tls;
