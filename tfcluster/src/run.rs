//! How `tfcluster run` runs its command, once its flags are read ([`crate::commands::run`]):
//! one task, this process's own, found from a `--from` source ([`one`]); every task of a
//! cluster on this machine ([`local`], its jobs and ports in [`local_jobs`]); or this host's
//! share of an elastic job, through its agent ([`elastic`]), which says what it waits for
//! while a round forms ([`waiting`]). Each passes SIGINT and SIGTERM on to what it started
//! ([`crate::stop_signal`]).

pub(crate) mod elastic;
pub(crate) mod local;
pub(crate) mod local_jobs;
pub(crate) mod one;
pub(crate) mod waiting;
