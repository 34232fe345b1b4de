//! An operator's calls of a [`RendezvousClient`] (`tfcluster status`): a job's status, as a
//! long poll that answers when it changes, and the list of jobs the client's token opens.
//! Neither joins or changes anything.

use std::time::Duration;

use super::{MAX_POLL, RendezvousClient};
use crate::Error;
use crate::job_status::{JobStatus, JobSummary};
use crate::rendezvous::{ListQuery, Rendezvous, StatusQuery};

impl RendezvousClient {
    /// Job `rdzv_id`'s status. With `after` (the [`digest`](JobStatus::digest) of the status
    /// last seen), a long poll: it answers when the status differs from that one, or after
    /// `poll` (at most 10 s; the rendezvous may cap it lower) with the same status again.
    /// Without, it answers at once.
    ///
    /// # Errors
    ///
    /// [`Error::Refused`] (`NOT_FOUND` for a job the rendezvous does not have,
    /// `UNAUTHENTICATED` without the job's token), [`Error::Unreachable`] once the client's
    /// retries ([`ClientOptions::with_retry_for`](crate::ClientOptions::with_retry_for))
    /// run out, [`Error::InvalidResponse`] for an answer that breaks the protocol.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: asking changes nothing.
    pub async fn job_status(
        &self,
        rdzv_id: &str,
        after: Option<u64>,
        poll: Duration,
    ) -> Result<JobStatus, Error> {
        let poll = poll.min(MAX_POLL);
        let query = StatusQuery {
            credentials: self.credentials(None),
            rdzv_id: rdzv_id.to_owned(),
            after_digest: after.unwrap_or(0),
            poll,
        };
        let within = self.options.rpc_timeout
            + if after.is_some() {
                poll
            } else {
                Duration::ZERO
            };
        self.call("JobStatus", self.give_up(), within, |backend, t| {
            let query = query.clone();
            async move { backend.job_status(query, t).await }
        })
        .await
    }

    /// The jobs the rendezvous holds that the client's token opens (every open job, and
    /// those of the token), by id, at most [`MAX_LISTED`](crate::MAX_LISTED).
    ///
    /// # Errors
    ///
    /// [`Error::Refused`] (`UNAUTHENTICATED` when the rendezvous has a token of its own
    /// the client lacks), [`Error::Unreachable`], [`Error::InvalidResponse`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: asking changes nothing.
    pub async fn list_jobs(&self) -> Result<Vec<JobSummary>, Error> {
        let query = ListQuery {
            credentials: self.credentials(None),
        };
        self.call(
            "ListJobs",
            self.give_up(),
            self.options.rpc_timeout,
            |backend, t| {
                let query = query.clone();
                async move { backend.list_jobs(query, t).await }
            },
        )
        .await
    }
}
