//! [`EtcdCluster`]: a cluster's start (its members laid out on loopback or in hosts, started one
//! after the other until all are healthy), what it says of itself (endpoints, directory, TLS
//! files), and its end when dropped.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use launcher::ReservedPorts;
use net_hosts::Hosts;

use crate::etcdctl::health_args;
use crate::member::Member;
use crate::process::{read, shown_output};
use crate::scratch::fresh_dir;
use crate::tls::{TlsFiles, make_tls, server_pem};

/// How long a start may take until every member is healthy (a 3-member cluster on loopback
/// takes about half a second).
pub(crate) const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How often a wait looks again.
pub(crate) const POLL: Duration = Duration::from_millis(50);
/// What a member logs once it serves its peers and clients (etcd 3.4's zap logger).
const SERVING: &str = "now serving peer/client/metrics";
/// How long a start waits for a member to log [`SERVING`] before it starts the next anyway.
const SERVING_WAIT: Duration = Duration::from_secs(3);
/// How long a connection to a member's client port may take (it is on this machine).
const PROBE_TIMEOUT: Duration = Duration::from_millis(200);
/// Starts on loopback tried before giving up, each with fresh ports, when a member finds its
/// port taken (another process bound it between our choosing and etcd's binding).
const BIND_ATTEMPTS: usize = 5;
/// etcd's raft heartbeat and election timeout, in milliseconds: a tenth of the defaults' pace
/// (100 and 1000) is ample on one machine, and a leader change takes well under a second.
const HEARTBEAT_MS: &str = "50";
const ELECTION_MS: &str = "500";

/// The ports of a member inside a host (etcd's own).
const HOST_CLIENT_PORT: u16 = 2379;
const HOST_PEER_PORT: u16 = 2380;

/// A running etcd cluster, its members numbered from 0 (named `m0`, `m1`, ... in etcd); see the
/// crate docs.
#[derive(Debug)]
pub struct EtcdCluster {
    /// Everything the cluster writes, removed on drop.
    pub(crate) dir: PathBuf,
    pub(crate) members: Vec<Member>,
    pub(crate) tls: Option<TlsFiles>,
}

/// Where a member of a new cluster runs, and on which URLs.
struct Place {
    client_url: String,
    peer_url: String,
    /// etcd's command, program first, to which its flags are added.
    etcd: Vec<OsString>,
    /// etcdctl's, program first.
    etcdctl: Vec<OsString>,
}

impl EtcdCluster {
    /// `members` members on 127.0.0.1, each on two free ports (client and peer), started and
    /// healthy.
    ///
    /// # Panics
    ///
    /// When a member exits or the cluster is not healthy within 30 s (the message holds every
    /// member's command and log tail), or `etcd` or `etcdctl` cannot be run; everything started
    /// is killed first.
    pub fn start_local(members: usize) -> EtcdCluster {
        Self::start_loopback(members, false)
    }

    /// As [`start_local`](Self::start_local), with TLS for clients and peers: a CA made now, one
    /// server certificate for 127.0.0.1 and localhost that every member presents to clients
    /// and to each other, and client certificates required (`--client-cert-auth`,
    /// `--peer-client-cert-auth`). Endpoints are `https://127.0.0.1:PORT`; the returned files
    /// are what a client needs (the CA, and a client certificate and key the CA signed).
    ///
    /// # Panics
    ///
    /// As [`start_local`](Self::start_local), and when rcgen cannot make a certificate.
    pub fn start_local_tls(members: usize) -> (EtcdCluster, TlsFiles) {
        let cluster = Self::start_loopback(members, true);
        let tls = cluster.tls.clone().expect("a TLS cluster has its files");
        (cluster, tls)
    }

    /// One member inside each host of `on` (member `k` in host `on[k]`), on the host's address
    /// and etcd's ports 2379 (clients) and 2380 (peers), started with
    /// [`Hosts::command`] and healthy as seen from inside the first of them. etcdctl runs from
    /// inside a host too ([`etcdctl`](Self::etcdctl)): the test's own namespace may not reach
    /// the hosts.
    ///
    /// # Panics
    ///
    /// When `on` is empty or names a host twice or one `hosts` lacks, and as
    /// [`start_local`](Self::start_local).
    pub fn start_in_hosts(hosts: &Hosts, on: &[usize]) -> EtcdCluster {
        Self::start_in(hosts, on, false)
    }

    /// As [`start_in_hosts`](Self::start_in_hosts), with TLS for clients and peers as
    /// [`start_local_tls`](Self::start_local_tls) has it, the members' certificate naming
    /// every host's address: endpoints are `https://ADDRESS:2379`.
    ///
    /// # Panics
    ///
    /// As [`start_in_hosts`](Self::start_in_hosts), and when rcgen cannot make a certificate.
    pub fn start_in_hosts_tls(hosts: &Hosts, on: &[usize]) -> (EtcdCluster, TlsFiles) {
        let cluster = Self::start_in(hosts, on, true);
        let tls = cluster.tls.clone().expect("a TLS cluster has its files");
        (cluster, tls)
    }

    fn start_in(hosts: &Hosts, on: &[usize], tls: bool) -> EtcdCluster {
        assert!(!on.is_empty(), "an etcd cluster needs at least one member");
        for (k, &host) in on.iter().enumerate() {
            assert!(
                host < hosts.count(),
                "host {host} of {on:?}: there are {} hosts",
                hosts.count()
            );
            assert!(!on[..k].contains(&host), "host {host} twice in {on:?}");
        }
        let addresses: Vec<String> = on.iter().map(|&h| hosts.address(h).to_string()).collect();
        let names: Vec<&str> = addresses.iter().map(String::as_str).collect();
        let mut cluster = Self::create(tls.then_some(&names[..]));
        let scheme = scheme(tls);
        let parts = |command: Command| -> Vec<OsString> {
            std::iter::once(command.get_program().to_owned())
                .chain(command.get_args().map(OsStr::to_owned))
                .collect()
        };
        let places: Vec<Place> = on
            .iter()
            .zip(&addresses)
            .map(|(&host, address)| Place {
                client_url: format!("{scheme}://{address}:{HOST_CLIENT_PORT}"),
                peer_url: format!("{scheme}://{address}:{HOST_PEER_PORT}"),
                etcd: parts(hosts.command(host, "etcd")),
                etcdctl: parts(hosts.command(host, "etcdctl")),
            })
            .collect();
        cluster.lay_out(&places, 0);
        let accepts = |k: usize, address: SocketAddr| {
            hosts.in_host(on[k], || {
                TcpStream::connect_timeout(&address, PROBE_TIMEOUT).is_ok()
            })
        };
        if let Err(clash) = cluster.boot(&accepts) {
            panic!("etcd cluster in hosts {on:?}: {clash}\n{}", cluster.tails());
        }
        cluster
    }

    /// Every member's client URL (`http://127.0.0.1:PORT`, `https://…` with TLS,
    /// `http://ADDRESS:2379` in hosts), by member, whether it runs or not.
    pub fn endpoints(&self) -> Vec<String> {
        self.members.iter().map(|m| m.client_url.clone()).collect()
    }

    /// Member `i`'s client URL.
    ///
    /// # Panics
    ///
    /// When there is no member `i`.
    pub fn member_endpoint(&self, i: usize) -> String {
        self.member(i).client_url.clone()
    }

    /// The directory that holds everything the cluster writes (data dirs, logs, certificates),
    /// removed when the cluster is dropped.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The TLS files of a [`start_local_tls`](Self::start_local_tls) cluster; `None` without
    /// TLS.
    pub fn tls(&self) -> Option<&TlsFiles> {
        self.tls.as_ref()
    }

    /// A new cluster's directory, with no members yet; with TLS files when `tls` names the
    /// addresses the members' certificate is for besides loopback's.
    fn create(tls: Option<&[&str]>) -> EtcdCluster {
        // The cluster first, so that a failure making the TLS files drops it and its directory.
        let mut cluster = EtcdCluster {
            dir: fresh_dir(),
            members: Vec::new(),
            tls: None,
        };
        if let Some(names) = tls {
            cluster.tls = Some(make_tls(&cluster.dir, names));
        }
        cluster
    }

    fn start_loopback(members: usize, tls: bool) -> EtcdCluster {
        assert!(members > 0, "an etcd cluster needs at least one member");
        let mut cluster = Self::create(tls.then_some(&[]));
        let scheme = scheme(tls);
        for attempt in 1..=BIND_ATTEMPTS {
            let ports = free_ports(2 * members);
            let places: Vec<Place> = ports
                .chunks(2)
                .map(|pair| Place {
                    client_url: format!("{scheme}://127.0.0.1:{}", pair[0]),
                    peer_url: format!("{scheme}://127.0.0.1:{}", pair[1]),
                    etcd: vec![OsString::from("etcd")],
                    etcdctl: vec![OsString::from("etcdctl")],
                })
                .collect();
            cluster.lay_out(&places, attempt);
            let accepts = |_, address| TcpStream::connect_timeout(&address, PROBE_TIMEOUT).is_ok();
            match cluster.boot(&accepts) {
                Ok(()) => return cluster,
                // Another try on other ports, from nothing.
                Err(_) if attempt < BIND_ATTEMPTS => {
                    cluster.kill_all();
                    for member in &cluster.members {
                        let _ = fs::remove_dir_all(&member.data_dir);
                        let _ = fs::remove_file(&member.log);
                        let _ = fs::remove_file(&member.console);
                    }
                }
                Err(clash) => panic!(
                    "etcd cluster on loopback: {clash} ({BIND_ATTEMPTS} tries, fresh ports each)\n{}",
                    cluster.tails()
                ),
            }
        }
        unreachable!("the last attempt returns or panics")
    }

    /// Sets up a member at each of `places` (not started), as `attempt` (which makes the
    /// cluster token unique).
    fn lay_out(&mut self, places: &[Place], attempt: usize) {
        let initial: Vec<String> = places
            .iter()
            .enumerate()
            .map(|(i, place)| format!("m{i}={}", place.peer_url))
            .collect();
        let initial = initial.join(",");
        let token = format!(
            "{}.{attempt}",
            self.dir
                .file_name()
                .expect("the cluster's directory has a name")
                .to_string_lossy()
        );
        self.members = places
            .iter()
            .enumerate()
            .map(|(i, place)| {
                let (client, peer) = (&place.client_url, &place.peer_url);
                let name = format!("m{i}");
                let data_dir = self.dir.join(format!("{name}.data"));
                let log = self.dir.join(format!("{name}.log"));
                let console = self.dir.join(format!("{name}.console"));
                let mut launch = place.etcd.clone();
                // `--name=value`, one argument: Go's boolean flags take no separate value.
                let mut flag = |name: &str, value: &OsStr| {
                    let mut arg = OsString::from(format!("--{name}="));
                    arg.push(value);
                    launch.push(arg);
                };
                flag("name", name.as_ref());
                flag("data-dir", data_dir.as_ref());
                flag("listen-client-urls", client.as_ref());
                flag("advertise-client-urls", client.as_ref());
                flag("listen-peer-urls", peer.as_ref());
                flag("initial-advertise-peer-urls", peer.as_ref());
                flag("initial-cluster", initial.as_ref());
                flag("initial-cluster-state", "new".as_ref());
                flag("initial-cluster-token", token.as_ref());
                flag("heartbeat-interval", HEARTBEAT_MS.as_ref());
                flag("election-timeout", ELECTION_MS.as_ref());
                // etcd 3.4's default logger is capnslog; zap is the one that writes to a file.
                flag("logger", "zap".as_ref());
                flag("log-outputs", log.as_ref());
                if let Some(tls) = &self.tls {
                    let (cert, key) = server_pem(&self.dir);
                    for prefix in ["", "peer-"] {
                        flag(&format!("{prefix}cert-file"), cert.as_ref());
                        flag(&format!("{prefix}key-file"), key.as_ref());
                        flag(&format!("{prefix}trusted-ca-file"), tls.ca.as_ref());
                        flag(&format!("{prefix}client-cert-auth"), "true".as_ref());
                    }
                }
                Member {
                    name,
                    client_url: client.clone(),
                    launch,
                    etcdctl: place.etcdctl.clone(),
                    data_dir,
                    log,
                    console,
                    child: None,
                    stopped: AtomicBool::new(false),
                }
            })
            .collect();
    }

    /// Starts every member and waits until all are healthy; `Err` when one could not bind its
    /// port (the caller may try other ports), a panic on any other failure. `accepts(i,
    /// address)` says whether member `i`'s client address takes a connection (from where
    /// etcdctl runs).
    fn boot(&mut self, accepts: &dyn Fn(usize, SocketAddr) -> bool) -> Result<(), String> {
        let deadline = Instant::now() + START_TIMEOUT;
        // One after the other, each once it serves its peers. A new member first asks every
        // peer whether the cluster was bootstrapped already, and a peer that listens but does
        // not serve yet (it is asking too) holds that question for etcd's bootstrap timeout, a
        // second per peer: started together, three members took 0.3 s to 2.3 s to elect a
        // leader; one after the other, 0.2 s to 0.4 s.
        for i in 0..self.members.len() {
            self.spawn(i);
            let patience = Instant::now() + SERVING_WAIT;
            while Instant::now() < patience && !read(&self.members[i].log).contains(SERVING) {
                self.check_bind(i)?;
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        let endpoints = self.endpoints();
        let endpoints: Vec<&str> = endpoints.iter().map(String::as_str).collect();
        let addresses: Vec<SocketAddr> = self.members.iter().map(Member::client_address).collect();
        loop {
            for i in 0..self.members.len() {
                self.check_bind(i)?;
            }
            // A member that does not listen yet costs etcdctl its dial timeout and gRPC's
            // reconnect backoff (a second); a refused connection costs nothing.
            let listening: Vec<bool> = addresses
                .iter()
                .enumerate()
                .map(|(i, &address)| accepts(i, address))
                .collect();
            let last = if listening.iter().all(|&yes| yes) {
                let health = self.etcdctl_via(0, &endpoints, &health_args());
                if health.status.success() {
                    return Ok(());
                }
                format!("etcdctl said:\n{}", shown_output(&health))
            } else {
                let closed: Vec<&str> = (0..self.members.len())
                    .filter(|&i| !listening[i])
                    .map(|i| self.members[i].name.as_str())
                    .collect();
                format!("{} took no connection", closed.join(", "))
            };
            if Instant::now() >= deadline {
                panic!(
                    "etcd cluster not healthy {START_TIMEOUT:?} after its start; {last}\n{}",
                    self.tails()
                );
            }
            std::thread::sleep(POLL);
        }
    }

    /// Every member's command and log tail, for a panic.
    pub(crate) fn tails(&self) -> String {
        self.members
            .iter()
            .map(Member::tail)
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Drop for EtcdCluster {
    fn drop(&mut self) {
        self.kill_all();
        if let Err(e) = fs::remove_dir_all(&self.dir) {
            eprintln!("etcd-cluster: cannot remove {}: {e}", self.dir.display());
        }
    }
}

/// `count` distinct ports of 127.0.0.1 that were free a moment ago (bound together, then
/// released: etcd binds them itself).
fn free_ports(count: usize) -> Vec<u16> {
    ReservedPorts::bind(Ipv4Addr::LOCALHOST.into(), count)
        .unwrap_or_else(|e| panic!("cannot bind {count} free ports of 127.0.0.1: {e}"))
        .ports()
}

/// The scheme of a member's URLs.
fn scheme(tls: bool) -> &'static str {
    if tls { "https" } else { "http" }
}
