//! The commands, one module each (cargo's layout): its clap arguments (`Args`, whose doc
//! comment is the command's help) and its `run`. What several commands share lives outside:
//! flag groups in [`crate::args`], how `run` runs its command in [`crate::run`].

pub(crate) mod completions;
pub(crate) mod connect;
pub(crate) mod hostlist;
pub(crate) mod rendezvous;
pub(crate) mod resolve;
pub(crate) mod run;
pub(crate) mod serve;
pub(crate) mod spec;
pub(crate) mod status;
pub(crate) mod up;
