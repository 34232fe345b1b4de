//! Integration tests of `elastic`: a `RendezvousServer` on loopback (port 0), or a real
//! three-member etcd cluster (the shared suite runs on both), and clients as agents — rounds
//! closing at max and after the last call, late and new joiners, lost nodes, failures and the
//! shared restart count, success, refusals, tokens and node secrets, hostile peers, an
//! unreachable rendezvous, etcd's leader lost mid-round and TLS, the built-in rendezvous over
//! mTLS, behind an allow list and a connection cap, cutting responses never read — a round's
//! `ClusterResolver`, observers watching the
//! rounds; the agent's stop. Every test runs under a
//! deadline.

#[path = "elastic/agent.rs"]
mod agent;
#[path = "elastic/auth.rs"]
mod auth;
#[path = "elastic/common.rs"]
mod common;
#[path = "elastic/etcd.rs"]
mod etcd;
#[path = "elastic/guarded.rs"]
mod guarded;
#[path = "elastic/hostile.rs"]
mod hostile;
#[path = "elastic/lying.rs"]
mod lying;
#[path = "elastic/resolver.rs"]
mod resolver;
#[path = "elastic/rounds.rs"]
mod rounds;
#[path = "elastic/status.rs"]
mod status;
#[path = "elastic/watch.rs"]
mod watch;
