//! Who may make a call: the rendezvous's own token (a server given one takes no call
//! without it), the job's token (set by its first join; a job created without one is open),
//! and a node's secret (set by the node's first join; every later call of the node carries
//! it, in an open job too). Only hashes are compared, in constant time; no refusal names a
//! token or a secret, only the job, the node and the call.

use cluster_spec::__private::quote::quote;

use super::Registry;
use super::calls::Refusal;
use super::job::Job;
use crate::rendezvous::credentials::{Digest, Proof};

impl Registry {
    /// Checks that `call` to job `rdzv_id`, by node `node` when a node makes it, carries the
    /// token the rendezvous and the job need, and the node's secret. An unknown job or node is
    /// no refusal here: the call itself says what it finds.
    pub(crate) fn authorize(
        &self,
        rdzv_id: &str,
        node: Option<&str>,
        call: &str,
        proof: &Proof,
    ) -> Result<(), Refusal> {
        self.check_server_token(rdzv_id, call, proof)?;
        let Some(job) = self.jobs.get(rdzv_id) else {
            return Ok(());
        };
        job.check_token(call, proof)?;
        if let Some(node) = node {
            job.check_secret(node, call, proof)?;
        }
        Ok(())
    }

    /// The rendezvous's own token, when it has one, is every call's.
    pub(super) fn check_server_token(
        &self,
        rdzv_id: &str,
        call: &str,
        proof: &Proof,
    ) -> Result<(), Refusal> {
        let Some(token) = &self.settings.token else {
            return Ok(());
        };
        match &proof.token {
            Some(given) if *given == Digest::keyed(rdzv_id, token.expose_secret()) => Ok(()),
            given => Err(Refusal::Unauthenticated(format!(
                "{call} to job {}: this rendezvous takes only calls with its token, and the \
                 call carries {}",
                quote(rdzv_id, 0),
                if given.is_some() { "another" } else { "none" }
            ))),
        }
    }
}

impl Job {
    /// The job's token, when it has one, is every call's; a call with a token to a job
    /// created without one is refused too: the id is not the job its caller means (another
    /// party may have taken it first).
    pub(super) fn check_token(&self, call: &str, proof: &Proof) -> Result<(), Refusal> {
        let why = match (&self.token, &proof.token) {
            (None, None) => return Ok(()),
            (Some(job), Some(given)) if job == given => return Ok(()),
            (Some(_), Some(_)) => "the call's token is not the job's",
            (Some(_), None) => "the job needs its token, and the call carries none",
            (None, Some(_)) => {
                "the job was created without a token, and the call carries one (did another \
                 party take the id first?)"
            }
        };
        Err(Refusal::Unauthenticated(format!(
            "{call} to job {}: {why}",
            quote(&self.id, 0)
        )))
    }

    /// Node `node_id`'s secret, when the job has the node and the node has one, is each of
    /// its calls'.
    pub(super) fn check_secret(
        &self,
        node_id: &str,
        call: &str,
        proof: &Proof,
    ) -> Result<(), Refusal> {
        let Some(Some(secret)) = self.nodes.get(node_id).map(|n| n.secret) else {
            return Ok(());
        };
        if proof.secret.as_ref() == Some(&secret) {
            return Ok(());
        }
        Err(denied(&self.id, node_id, call))
    }
}

/// The refusal of a node's call without its secret.
fn denied(rdzv_id: &str, node_id: &str, call: &str) -> Refusal {
    Refusal::PermissionDenied(format!(
        "node {} of job {}: wrong or missing node secret ({call})",
        quote(node_id, 0),
        quote(rdzv_id, 0)
    ))
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::super::Reported;
    use super::super::tests::{config, join_as, node_proof, registry, report, round_of};
    use super::super::{JoinArgs, Refusal, Registry};
    use crate::outcome::{RoundStatus, TaskStatus};
    use crate::rendezvous::credentials::{Credentials, Digest, Proof};

    fn join(r: &mut Registry, id: &str, port: u16, proof: &Proof) -> Result<(), Refusal> {
        let args = JoinArgs {
            rdzv_id: "job".into(),
            config: config(1, 2, "", 0),
            node_id: Some(id.into()),
            host: "127.0.0.1".into(),
            ports: vec![port],
            name: String::new(),
            peer: None,
            credentials: Credentials::default(),
        };
        r.join(args, proof, Instant::now()).map(drop)
    }

    fn with_token(token: &str, node: &str) -> Proof {
        Proof {
            token: Some(Digest::keyed("job", token)),
            ..node_proof(node)
        }
    }

    const NODE_CALLS: [&str; 4] = ["WaitRound", "Heartbeat", "Report", "Leave"];

    #[test]
    fn a_node_call_without_the_nodes_secret_is_refused_and_changes_nothing() {
        // An open job: no token, yet each node's calls need its secret.
        let (mut r, t0, c) = (registry(), Instant::now(), config(1, 2, "", 0));
        join_as(&mut r, &c, "a", 1000, t0).unwrap();
        join_as(&mut r, &c, "b", 1001, t0).unwrap();
        assert_eq!(round_of(&mut r, "a", 0, t0).unwrap().0, 1);
        let forged = [Proof::default(), node_proof("b")];
        for proof in &forged {
            for call in NODE_CALLS {
                let err = r.authorize("job", Some("a"), call, proof).unwrap_err();
                assert_eq!(
                    err,
                    Refusal::PermissionDenied(format!(
                        "node \"a\" of job \"job\": wrong or missing node secret ({call})"
                    ))
                );
            }
            // A join under a's id with another address: refused, a keeps its place.
            let err = join(&mut r, "a", 6666, proof).unwrap_err();
            assert!(matches!(err, Refusal::PermissionDenied(_)), "{err}");
        }
        assert_eq!(
            r.heartbeat("job", "a", 1, (0, 0), None, t0).unwrap(),
            RoundStatus::Running
        );
        assert_eq!(
            r.jobs["job"].nodes["a"].ports,
            [1000],
            "the forged join changed the node"
        );
        // With its secret, every call of a's goes through.
        for call in NODE_CALLS {
            r.authorize("job", Some("a"), call, &node_proof("a"))
                .unwrap();
        }
        r.authorize("job", None, "WatchRounds", &Proof::default())
            .unwrap();
        // Its report still counts.
        let Reported { counted, .. } =
            report(&mut r, "a", 1, 0, TaskStatus::Exited(0), "", t0).unwrap();
        assert!(counted);
    }

    #[test]
    fn a_job_with_a_token_refuses_calls_without_it() {
        let mut r = registry();
        join(&mut r, "a", 1000, &with_token("the job's token", "a")).unwrap();
        for proof in [node_proof("a"), with_token("another token", "a")] {
            let err = join(&mut r, "b", 1001, &proof).unwrap_err();
            assert!(matches!(err, Refusal::Unauthenticated(_)), "{err}");
            let err = r.authorize("job", None, "WatchRounds", &proof).unwrap_err();
            assert!(matches!(err, Refusal::Unauthenticated(_)), "{err}");
            for call in NODE_CALLS {
                let err = r.authorize("job", Some("a"), call, &proof).unwrap_err();
                assert!(
                    err.to_string()
                        .starts_with(&format!("{call} to job \"job\": "))
                );
            }
        }
        let err = join(&mut r, "b", 1001, &node_proof("b")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Join to job \"job\": the job needs its token, and the call carries none"
        );
        assert_eq!(
            r.jobs["job"].nodes.len(),
            1,
            "a refused join took a node in"
        );
        join(&mut r, "b", 1001, &with_token("the job's token", "b")).unwrap();
        let observer = Proof {
            token: Some(Digest::keyed("job", "the job's token")),
            secret: None,
        };
        r.authorize("job", None, "WatchRounds", &observer).unwrap();
        // The token is not a node's secret: b's calls still need b's.
        let err = r
            .authorize(
                "job",
                Some("b"),
                "Heartbeat",
                &with_token("the job's token", "a"),
            )
            .unwrap_err();
        assert!(matches!(err, Refusal::PermissionDenied(_)), "{err}");
    }

    #[test]
    fn an_open_job_refuses_a_call_with_a_token() {
        let mut r = registry();
        join(&mut r, "a", 1000, &node_proof("a")).unwrap();
        let err = join(&mut r, "b", 1001, &with_token("the job's token", "b")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Join to job \"job\": the job was created without a token, and the call carries \
             one (did another party take the id first?)"
        );
    }

    #[test]
    fn a_rendezvous_with_a_token_takes_no_call_without_it() {
        let mut r = registry();
        r.settings.token = Some(crate::Token::new("the server's token").unwrap());
        let err = join(&mut r, "a", 1000, &node_proof("a")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Join to job \"job\": this rendezvous takes only calls with its token, and the \
             call carries none"
        );
        let err = join(&mut r, "a", 1000, &with_token("another token", "a")).unwrap_err();
        assert!(matches!(err, Refusal::Unauthenticated(_)), "{err}");
        assert!(r.jobs.is_empty(), "a refused join created a job");
        let err = r
            .authorize("other", None, "WatchRounds", &Proof::default())
            .unwrap_err();
        assert!(matches!(err, Refusal::Unauthenticated(_)), "{err}");
        join(&mut r, "a", 1000, &with_token("the server's token", "a")).unwrap();
        // The job has the server's token as its own.
        assert_eq!(
            r.jobs["job"].token,
            Some(Digest::keyed("job", "the server's token"))
        );
    }
}
