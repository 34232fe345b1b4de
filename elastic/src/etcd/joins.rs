//! Joins through the record's next write. When a round ends every agent joins again at
//! once; one record written by each in turn would take as many writes as agents, each after
//! losing the race to the others. Instead a join is put as a key of its own
//! (`PREFIX/ID/~join/TOKEN`, a [`proto::StoredJoin`], with the hashes of the token and
//! secret the join carried, never them) in the transaction that reads the job,
//! and the joiner then writes the record with every join waiting beside its own folded in,
//! oldest first, through the same registry rules, answering each
//! (`PREFIX/ID/~answer/TOKEN`, on the joiner's lease). A joiner that loses the race reads
//! its answer back instead of writing. So the joins that arrive together are one or two
//! writes of the record, however many agents there are.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::time::{Duration, Instant};

use etcd_client::{PutOptions, TxnOp};
use prost::Message;

use super::store::{EtcdStore, Lease, Snapshot};
use crate::grpc::status::{code_number, code_of_number};
use crate::proto;
use crate::proto::stored_join_answer::Answer;
use crate::rendezvous::credentials::{self, Digest};
use crate::rendezvous::registry::{Clock, Registry};
use crate::rendezvous::{CallError, JoinArgs, Joined, Proof};
use crate::wire;
use cluster_spec::__private::error_chain::Chain;

/// The most operations etcd takes in one transaction (its `--max-txn-ops` default).
const MAX_TXN_OPS: usize = 128;
/// The operations one folded join takes at most: its request deleted, its answer and its
/// live key put.
const OPS_PER_JOIN: usize = 3;

/// How long a read answer is kept before its joiner deletes it.
const FORGET_AFTER: Duration = Duration::from_secs(1);

/// A join of this store in flight.
pub(super) struct Joining {
    /// Its keys' last segment, unique to this join.
    pub(super) token: String,
    /// Its request, until a read has put it.
    put: Option<Vec<u8>>,
    lease: i64,
}

impl Joining {
    /// The put of its request, for the read it goes with.
    pub(super) fn put_op(&self, store: &EtcdStore, rdzv_id: &str) -> Option<TxnOp> {
        self.put.as_ref().map(|request| {
            TxnOp::put(
                store.join_key(rdzv_id, &self.token),
                request.clone(),
                Some(PutOptions::new().with_lease(self.lease)),
            )
        })
    }
}

impl EtcdStore {
    pub(super) fn joins_prefix(&self, rdzv_id: &str) -> String {
        format!("{}~join/", self.job_prefix(rdzv_id))
    }

    fn join_key(&self, rdzv_id: &str, token: &str) -> String {
        format!("{}{token}", self.joins_prefix(rdzv_id))
    }

    pub(super) fn answer_key(&self, rdzv_id: &str, token: &str) -> String {
        format!("{}~answer/{token}", self.job_prefix(rdzv_id))
    }

    /// Joins `args`'s node to its job through the record's next write (see the module).
    pub(super) async fn join_folded(
        &self,
        args: JoinArgs,
        proof: Proof,
    ) -> Result<Joined, CallError> {
        Registry::check_join(&args)?;
        let start = Instant::now();
        let rdzv_id = args.rdzv_id.clone();
        // A node this store knows keeps its lease; a new one is given its own, which the
        // store takes as the node's once the node is in (before, the store's writes would
        // give it back: the node is in no job yet).
        if let Some(node) = &args.node_id {
            self.keep_alive(&rdzv_id, node).await?;
        }
        let known = args
            .node_id
            .as_ref()
            .and_then(|node| self.leases().get(&(rdzv_id.clone(), node.clone())).copied());
        let lease = match known {
            Some(held) => held.id,
            None => self.grant().await?,
        };
        let request = proto::StoredJoin {
            request: Some(wire::join_to_proto(&args)),
            lease,
            token_hmac: credentials::stored(proof.token),
            secret_hmac: credentials::stored(proof.secret),
        }
        .encode_to_vec();
        let mut joining = Joining {
            token: format!(
                "{:016x}",
                RandomState::new().hash_one(std::time::SystemTime::now())
            ),
            put: Some(request),
            lease,
        };
        let answer = loop {
            let mut snapshot = self.read(&rdzv_id, Some(&joining)).await?;
            let put = joining.put.take();
            if let Some(bytes) = &snapshot.answer {
                let answer = proto::StoredJoinAnswer::decode(bytes.as_slice())
                    .map_err(|e| self.unusable(&rdzv_id, &e))?;
                self.forget_answer(&rdzv_id, &joining.token);
                break answer;
            }
            if !snapshot
                .joins
                .iter()
                .any(|(token, _)| *token == joining.token)
            {
                match put {
                    // Put by this read; its range may not show it.
                    Some(request) => snapshot.joins.push((joining.token.clone(), request)),
                    // Gone unanswered: its lease ran out. The client joins again, and this
                    // store gives the node a new lease.
                    None => {
                        return Err(CallError::Unavailable(format!(
                            "the join to job {rdzv_id:?} went with its lease before it was answered \
                             (etcd at {})",
                            self.url
                        )));
                    }
                }
            }
            if let Some(answer) = self.fold(&rdzv_id, &snapshot, &joining.token).await? {
                break answer;
            }
        };
        match answer.answer {
            Some(Answer::Joined(joined)) => {
                let node = (rdzv_id.clone(), joined.node_id.clone());
                let held = known.unwrap_or(Lease {
                    id: lease,
                    renewed: start,
                });
                self.leases().insert(node, held);
                wire::joined_from_proto(joined).map_err(|e| {
                    CallError::BrokenState(format!(
                        "the answer to a join of job {rdzv_id:?} in etcd at {} does not load: {}",
                        self.url,
                        Chain(&e)
                    ))
                })
            }
            refusal => {
                if known.is_none() {
                    self.revoke(lease).await;
                }
                let refused = match refusal {
                    Some(Answer::Refused(r)) => r,
                    _ => proto::StoredRefusal::default(),
                };
                Err(CallError::of_code(
                    code_of_number(refused.code),
                    refused.message,
                ))
            }
        }
    }

    /// Folds the joins `snapshot` holds (oldest first) into its job, in one write that answers
    /// each, as many as one transaction takes. The answer to join `token`, or `None`
    /// when another agent wrote first or the join was past the room (its turn is the next
    /// write).
    async fn fold(
        &self,
        rdzv_id: &str,
        snapshot: &Snapshot,
        token: &str,
    ) -> Result<Option<proto::StoredJoinAnswer>, CallError> {
        let clock = Clock::now();
        let now = clock.instant();
        let mut registry = self.load(rdzv_id, snapshot, clock)?;
        let mut ops = Vec::new();
        let mut leases = HashMap::new();
        let mut ours = None;
        for (join_token, bytes) in snapshot.joins.iter().take((MAX_TXN_OPS - 1) / OPS_PER_JOIN) {
            ops.push(TxnOp::delete(self.join_key(rdzv_id, join_token), None));
            // Not a join this version wrote: dropped, its joiner reads no answer.
            let Ok(join) = proto::StoredJoin::decode(bytes.as_slice()) else {
                continue;
            };
            let request = join.request.unwrap_or_default();
            let proof = Proof {
                token: Digest::from_stored(&join.token_hmac),
                secret: Digest::from_stored(&join.secret_hmac),
            };
            let joined = wire::join_from_proto(request)
                .map_err(|e| CallError::invalid(&e))
                .and_then(|args| Ok(registry.join(args, &proof, now)?));
            let answer = match joined {
                Ok(joined) => {
                    leases.insert(joined.node_id.clone(), join.lease);
                    Answer::Joined(wire::joined_to_proto(&joined))
                }
                Err(error) => Answer::Refused(proto::StoredRefusal {
                    code: code_number(error.code()),
                    message: error.to_string(),
                }),
            };
            let answer = proto::StoredJoinAnswer {
                answer: Some(answer),
            };
            if join_token == token {
                ours = Some(answer);
            } else {
                ops.push(TxnOp::put(
                    self.answer_key(rdzv_id, join_token),
                    answer.encode_to_vec(),
                    Some(PutOptions::new().with_lease(join.lease)),
                ));
            }
        }
        for (node, host) in registry.new_nodes(rdzv_id, &snapshot.alive) {
            let Some(&lease) = leases.get(&node) else {
                continue;
            };
            ops.push(TxnOp::put(
                format!("{}{node}", self.alive_prefix(rdzv_id)),
                host,
                Some(PutOptions::new().with_lease(lease)),
            ));
        }
        // Written even when its bytes are the same: the write's compare is what makes two
        // agents folding the same joins answer them once.
        let record = registry.store(rdzv_id, clock).map(|r| r.encode_to_vec());
        let written = self
            .write(rdzv_id, snapshot.mod_revision, record, ops)
            .await?;
        if written.is_none() {
            return Ok(None);
        }
        self.release(&registry, rdzv_id).await;
        Ok(ours)
    }

    /// Deletes the answer to join `token`, now read, in the background: its lease would take
    /// it with the node in the end, but a node joins again after every round. Later, so the
    /// deletes of a round's joins are not written while the round forms.
    fn forget_answer(&self, rdzv_id: &str, token: &str) {
        let (_, client) = self.member();
        let key = self.answer_key(rdzv_id, token);
        let deadline = self.rpc_timeout;
        tokio::spawn(async move {
            tokio::time::sleep(FORGET_AFTER).await;
            let mut client = client;
            let _ = tokio::time::timeout(deadline, client.delete(key, None)).await;
        });
    }
}
