//! Test support: real etcd clusters of several members, for the tests of rendezvous on etcd.
//!
//! Members are real etcd 3.4 servers, Debian's `etcd-server` package (`cargo xtask test`
//! installs it with `etcd-client`, whose `etcdctl` this crate runs to check on them). A cluster
//! runs either on loopback ([`EtcdCluster::start_local`], each member on two free ports of
//! 127.0.0.1; [`EtcdCluster::start_local_tls`] with client and peer TLS and client certificates
//! required) or with one member inside each of several [`net_hosts::Hosts`]
//! ([`EtcdCluster::start_in_hosts`], on the host's address and etcd's own ports 2379 and 2380;
//! [`EtcdCluster::start_in_hosts_tls`] with TLS as on loopback), where a host's link can go
//! down under it. Every member is a child of the test process; a
//! start returns once every member is healthy (it has a leader and commits), and a member can be
//! killed ([`EtcdCluster::kill`]), frozen and thawed ([`EtcdCluster::stop`],
//! [`EtcdCluster::cont`]) or restarted on its data ([`EtcdCluster::restart`]);
//! [`EtcdCluster::leader`] says which member leads now, and [`EtcdCluster::status`] what one
//! member says of itself (etcd's member ids, the leader it follows, its raft term). Dropping the
//! cluster, on a panic too, kills every member and removes its directory
//! ([`EtcdCluster::dir`]): data dirs, logs and certificates, under `/dev/shm` where there is one
//! (etcd fsyncs every commit; memory makes that free) and the temporary directory elsewhere.
//! A cluster whose test process died without dropping it (SIGKILL) is killed and removed by the
//! next start, found by the marker in its members' environment.
//!
//! Nothing here waits without a deadline: a member that does not come up, a leader that is not
//! elected, an etcdctl that does not answer, all panic with a message that names the member, its
//! command and the tail of its log.
//!
//! Used by elastic's and the CLI's etcd rendezvous tests, and the elastic launch benchmark.
//!
//! ```no_run
//! let cluster = etcd_cluster::EtcdCluster::start_local(3);
//! let put = cluster.etcdctl(&["put", "key", "value"]);
//! assert!(put.status.success());
//! let leader = cluster.wait_leader(std::time::Duration::from_secs(5));
//! println!("m{leader} leads; clients use {:?}", cluster.endpoints());
//! ```

mod cluster;
mod etcdctl;
mod member;
mod process;
mod scratch;
mod tls;

pub use cluster::EtcdCluster;
pub use etcdctl::MemberStatus;
pub use tls::TlsFiles;
