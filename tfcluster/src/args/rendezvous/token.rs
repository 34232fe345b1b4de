//! The rendezvous token's flags: `--rdzv-token-file PATH` (`run --rdzv`, `--from
//! rendezvous`) or `--token-file PATH` (`rendezvous serve`), else `TFCLUSTER_RDZV_TOKEN`.
//! Never a flag taking the value itself: `ps` shows every process's arguments. Without
//! either, the job is open, and the command says so once, loudly ([`warn_open`]).

use std::path::Path;

use anyhow::anyhow;
use elastic::{TOKEN_ENV, Token};

use crate::failure::Failure;

/// The token of `flag`'s file, else of `TFCLUSTER_RDZV_TOKEN`; none without either. Both
/// given is a usage error naming both, as is a token that cannot be read or is not valid
/// (the error names where it came from, never the value).
pub(crate) fn token(file: Option<&Path>, flag: &str) -> Result<Option<Token>, Failure> {
    let from_env = std::env::var_os(TOKEN_ENV).is_some_and(|v| !v.is_empty());
    match file {
        Some(path) if from_env => Err(Failure::usage(anyhow!(
            "{flag} {} and {TOKEN_ENV} both give the rendezvous token: give one",
            path.display()
        ))),
        Some(path) => Ok(Some(Token::from_file(path).map_err(Failure::usage)?)),
        None => Token::from_env().map_err(Failure::usage),
    }
}

/// The warning of a command that runs without a token: what anyone who reaches `addr` can
/// do to job `job` (or to any job, for a rendezvous served with `job` none).
pub(crate) fn warn_open(addr: &str, job: Option<&str>, flag: &str) {
    let what = match job {
        Some(job) => format!(
            "anyone who reaches {addr} can join job {job:?} as a new host, see its cluster, \
             or take its id first"
        ),
        None => format!(
            "anyone who reaches {addr} can create jobs, and join, watch or take the id of \
             any job started without a token"
        ),
    };
    eprintln!(
        "tfcluster: warning: no rendezvous token ({flag} or {TOKEN_ENV}): {what}; nodes' \
         own calls stay protected by their secrets (see `tfcluster rendezvous token`)"
    );
}
