//! Test support: real etcd clusters of several members, for the tests of rendezvous on etcd.
//!
//! Members are real etcd 3.4 servers, Debian's `etcd-server` package (`cargo xtask test`
//! installs it with `etcd-client`, whose `etcdctl` this crate runs to check on them). A cluster
//! runs either on loopback ([`EtcdCluster::start_local`], each member on two free ports of
//! 127.0.0.1; [`EtcdCluster::start_local_tls`] with client and peer TLS and client certificates
//! required) or with one member inside each of several [`net_hosts::Hosts`]
//! ([`EtcdCluster::start_in_hosts`], on the host's address and etcd's own ports 2379 and 2380),
//! where a host's link can go down under it. Every member is a child of the test process; a
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

use std::ffi::{OsStr, OsString};
use std::fs::{self, File, OpenOptions};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use net_hosts::Hosts;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};

/// How long a start may take until every member is healthy (a 3-member cluster on loopback
/// takes about half a second).
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a member may take to be gone after SIGKILL.
const KILL_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one etcdctl may run (its own timeouts are seconds: more means it hangs).
const ETCDCTL_TIMEOUT: Duration = Duration::from_secs(30);
/// How often a wait looks again.
const POLL: Duration = Duration::from_millis(50);
/// What a member logs once it serves its peers and clients (etcd 3.4's zap logger).
const SERVING: &str = "now serving peer/client/metrics";
/// How long a start waits for a member to log [`SERVING`] before it starts the next anyway.
const SERVING_WAIT: Duration = Duration::from_secs(3);
/// How long a connection to a member's client port may take (it is on this machine).
const PROBE_TIMEOUT: Duration = Duration::from_millis(200);
/// Starts on loopback tried before giving up, each with fresh ports, when a member finds its
/// port taken (another process bound it between our choosing and etcd's binding).
const BIND_ATTEMPTS: usize = 5;
/// Lines of a member's log shown in a panic (zap lines are long).
const LOG_LINES: usize = 20;
/// etcd's raft heartbeat and election timeout, in milliseconds: a tenth of the defaults' pace
/// (100 and 1000) is ample on one machine, and a leader change takes well under a second.
const HEARTBEAT_MS: &str = "50";
const ELECTION_MS: &str = "500";
/// The ports of a member inside a host (etcd's own).
const HOST_CLIENT_PORT: u16 = 2379;
const HOST_PEER_PORT: u16 = 2380;
/// The environment variable that marks a member, set to its cluster's directory, whose name
/// holds the owning process's pid and start time: a member whose owner is gone is killed by the
/// next start in this machine.
const MARKER: &str = "TFCLUSTER_ETCD_CLUSTER";
/// The start of each cluster directory's name.
const DIR_PREFIX: &str = "etcd-cluster.";

/// Clusters made so far by this process: each gets a directory and a token of its own.
static MADE: AtomicU32 = AtomicU32::new(0);
/// etcdctl runs so far by this process: each gets output files of its own.
static RUNS: AtomicU64 = AtomicU64::new(0);

/// A running etcd cluster, its members numbered from 0 (named `m0`, `m1`, ... in etcd); see the
/// crate docs.
#[derive(Debug)]
pub struct EtcdCluster {
    /// Everything the cluster writes, removed on drop.
    dir: PathBuf,
    members: Vec<Member>,
    tls: Option<TlsFiles>,
}

/// The PEM files a client of a TLS cluster ([`EtcdCluster::start_local_tls`]) needs, inside the
/// cluster's directory (removed with the cluster).
#[derive(Clone, Debug)]
pub struct TlsFiles {
    /// The CA that signed every member's certificate and [`client_cert`](Self::client_cert).
    pub ca: PathBuf,
    /// A client certificate the members accept (signed by [`ca`](Self::ca)).
    pub client_cert: PathBuf,
    /// Its private key (PKCS#8).
    pub client_key: PathBuf,
}

/// What a member says of itself in `etcdctl endpoint status` ([`EtcdCluster::status`]): etcd's
/// own member ids, not this crate's indexes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemberStatus {
    /// Its member id.
    pub id: u64,
    /// The id of the member it takes for the leader (its own when it leads); 0 while it knows
    /// of none.
    pub leader: u64,
    /// The raft term it is in: each election starts a later one.
    pub raft_term: u64,
}

/// One member: how to start it, and its process while it runs.
#[derive(Debug)]
struct Member {
    name: String,
    client_url: String,
    /// Its command line, program first (`etcd …`, or `nsenter --net=… etcd …` in a host).
    launch: Vec<OsString>,
    /// etcdctl as run beside it (in its host for [`EtcdCluster::start_in_hosts`]), program
    /// first.
    etcdctl: Vec<OsString>,
    data_dir: PathBuf,
    /// etcd's own log (`--log-outputs`).
    log: PathBuf,
    /// Its stdout and stderr: what it prints before its logger is set up (a flag it refuses),
    /// the few packages that still log through capnslog (rafthttp), and Go's panics.
    console: PathBuf,
    /// `None` once killed.
    child: Option<Child>,
    /// Whether it is SIGSTOPped.
    stopped: AtomicBool,
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
        assert!(!on.is_empty(), "an etcd cluster needs at least one member");
        for (k, &host) in on.iter().enumerate() {
            assert!(
                host < hosts.count(),
                "host {host} of {on:?}: there are {} hosts",
                hosts.count()
            );
            assert!(!on[..k].contains(&host), "host {host} twice in {on:?}");
        }
        let mut cluster = Self::create(false);
        let parts = |command: Command| -> Vec<OsString> {
            std::iter::once(command.get_program().to_owned())
                .chain(command.get_args().map(OsStr::to_owned))
                .collect()
        };
        let places: Vec<Place> = on
            .iter()
            .map(|&host| {
                let address = hosts.address(host);
                Place {
                    client_url: format!("http://{address}:{HOST_CLIENT_PORT}"),
                    peer_url: format!("http://{address}:{HOST_PEER_PORT}"),
                    etcd: parts(hosts.command(host, "etcd")),
                    etcdctl: parts(hosts.command(host, "etcdctl")),
                }
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

    /// Kills member `i` with SIGKILL (as a crash, or a machine losing power: nothing is
    /// flushed) and waits until it is gone. Nothing happens when it is killed already.
    ///
    /// # Panics
    ///
    /// When there is no member `i`, or it still runs 10 s after SIGKILL.
    pub fn kill(&mut self, i: usize) {
        self.member(i);
        let member = &mut self.members[i];
        let Some(mut child) = member.child.take() else {
            return;
        };
        member.stopped.store(false, Ordering::Relaxed);
        // SIGKILL ends a stopped process too.
        let _ = child.kill();
        if wait_child(&mut child, KILL_TIMEOUT).is_none() {
            panic!(
                "etcd member {} (pid {}) still runs {KILL_TIMEOUT:?} after SIGKILL\n{}",
                member.name,
                child.id(),
                member.tail()
            );
        }
    }

    /// Freezes member `i` with SIGSTOP: it keeps its sockets but answers nothing (as a machine
    /// that hangs, or a long GC pause). [`etcdctl`](Self::etcdctl) and
    /// [`leader`](Self::leader) leave it out until [`cont`](Self::cont).
    ///
    /// # Panics
    ///
    /// When there is no member `i`, or it was killed.
    pub fn stop(&self, i: usize) {
        self.signal(i, Signal::SIGSTOP);
        self.members[i].stopped.store(true, Ordering::Relaxed);
    }

    /// Thaws member `i` (SIGCONT) after [`stop`](Self::stop).
    ///
    /// # Panics
    ///
    /// When there is no member `i`, or it was killed.
    pub fn cont(&self, i: usize) {
        self.signal(i, Signal::SIGCONT);
        self.members[i].stopped.store(false, Ordering::Relaxed);
    }

    /// Starts member `i` again on its data dir, with the command it first ran (killing it first
    /// if it runs), and waits until it is healthy: it rejoins the cluster with what it had
    /// persisted.
    ///
    /// # Panics
    ///
    /// When there is no member `i`, or it exits or is not healthy within 30 s (on loopback,
    /// its port may have been taken meanwhile).
    pub fn restart(&mut self, i: usize) {
        self.kill(i);
        self.spawn(i);
        let deadline = Instant::now() + START_TIMEOUT;
        let endpoint = self.members[i].client_url.clone();
        loop {
            self.check_exited(i);
            let health = self.etcdctl_via(i, &[&endpoint], &health_args());
            if health.status.success() {
                return;
            }
            if Instant::now() >= deadline {
                panic!(
                    "restarted etcd member {} is not healthy after {START_TIMEOUT:?}; etcdctl \
                     said:\n{}\n{}",
                    self.members[i].name,
                    shown_output(&health),
                    self.tails()
                );
            }
            std::thread::sleep(POLL);
        }
    }

    /// Which member leads now, as the members that run (neither killed nor stopped) say in
    /// `etcdctl endpoint status`: the member whose status names itself as leader, when a
    /// majority of all the members name it. `None` while there is none (an election is under
    /// way, or too few members run).
    pub fn leader(&self) -> Option<usize> {
        self.leader_and_statuses().0
    }

    /// Waits up to `timeout` for a member to lead ([`leader`](Self::leader)) and returns it.
    ///
    /// # Panics
    ///
    /// When none leads by then; the message holds the members' statuses and log tails.
    pub fn wait_leader(&self, timeout: Duration) -> usize {
        let deadline = Instant::now() + timeout;
        loop {
            let (leader, statuses) = self.leader_and_statuses();
            if let Some(leader) = leader {
                return leader;
            }
            if Instant::now() >= deadline {
                panic!(
                    "no etcd member leads after {timeout:?}; the running members' statuses:\n{}\n{}",
                    statuses,
                    self.tails()
                );
            }
            std::thread::sleep(POLL);
        }
    }

    /// What member `i` says of itself, asked of it alone (whether this crate has killed or
    /// stopped it or not): `None` when it does not answer within a second.
    ///
    /// # Panics
    ///
    /// When there is no member `i`, or etcdctl cannot be run.
    pub fn status(&self, i: usize) -> Option<MemberStatus> {
        let endpoint = self.member(i).client_url.as_str();
        let output = self.etcdctl_via(i, &[endpoint], &status_args());
        statuses(&output).first().map(|&(_, status)| status)
    }

    /// Runs `etcdctl ARGS` (API v3) against the members that run (neither killed nor stopped;
    /// all of them when none does), with the cluster's TLS files when it has TLS, from inside the
    /// host of the first running member for [`start_in_hosts`](Self::start_in_hosts), and
    /// returns what it printed and how it exited, success or not.
    ///
    /// # Panics
    ///
    /// When etcdctl cannot be run, or runs for more than 30 s (it is killed; commands that
    /// never end, such as `watch`, do not belong here).
    pub fn etcdctl(&self, args: &[&str]) -> Output {
        let live = self.live();
        let via = live.first().copied().unwrap_or(0);
        let endpoints: Vec<&str> = if live.is_empty() {
            self.members.iter().map(|m| m.client_url.as_str()).collect()
        } else {
            live.iter()
                .map(|&i| self.members[i].client_url.as_str())
                .collect()
        };
        self.etcdctl_via(via, &endpoints, args)
    }

    /// A new cluster's directory, with no members yet (with TLS files when `tls`).
    fn create(tls: bool) -> EtcdCluster {
        // The cluster first, so that a failure making the TLS files drops it and its directory.
        let mut cluster = EtcdCluster {
            dir: fresh_dir(),
            members: Vec::new(),
            tls: None,
        };
        if tls {
            cluster.tls = Some(make_tls(&cluster.dir));
        }
        cluster
    }

    fn start_loopback(members: usize, tls: bool) -> EtcdCluster {
        assert!(members > 0, "an etcd cluster needs at least one member");
        let mut cluster = Self::create(tls);
        let scheme = if tls { "https" } else { "http" };
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

    /// Panics when member `i` has exited by itself, unless it could not bind its ports:
    /// `Err` then.
    fn check_bind(&mut self, i: usize) -> Result<(), String> {
        let Some(status) = self.exited(i) else {
            return Ok(());
        };
        let member = &self.members[i];
        let text = format!("{}{}", read(&member.log), read(&member.console));
        if text.contains("address already in use") {
            return Err(format!(
                "member {} could not bind its ports ({status})",
                member.name
            ));
        }
        self.died(i, status)
    }

    /// Starts member `i`'s process.
    fn spawn(&mut self, i: usize) {
        let dir = self.dir.clone();
        let member = &mut self.members[i];
        let console = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&member.console)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", member.console.display()));
        let console_err = console
            .try_clone()
            .unwrap_or_else(|e| panic!("{}: {e}", member.console.display()));
        let mut command = command(&member.launch);
        command
            .env(MARKER, &dir)
            .stdin(Stdio::null())
            .stdout(console)
            .stderr(console_err);
        let child = command.spawn().unwrap_or_else(|e| {
            panic!(
                "cannot start etcd member {} (is Debian's etcd-server installed? cargo xtask \
                 test installs it): {}: {e}",
                member.name,
                show(&member.launch)
            )
        });
        member.child = Some(child);
        member.stopped.store(false, Ordering::Relaxed);
    }

    /// Member `i`, or a panic naming the members there are.
    fn member(&self, i: usize) -> &Member {
        self.members.get(i).unwrap_or_else(|| {
            panic!(
                "no etcd member {i}: the cluster has {} (0 to {})",
                self.members.len(),
                self.members.len().saturating_sub(1)
            )
        })
    }

    /// How member `i` exited, if it has (not when we killed it).
    fn exited(&mut self, i: usize) -> Option<ExitStatus> {
        let child = self.members[i].child.as_mut()?;
        match child.try_wait() {
            Ok(status) => status,
            Err(e) => panic!("waiting for etcd member {}: {e}", self.members[i].name),
        }
    }

    /// Panics when member `i` has exited by itself.
    fn check_exited(&mut self, i: usize) {
        if let Some(status) = self.exited(i) {
            self.died(i, status);
        }
    }

    /// Panics for member `i`, which exited with `status` by itself.
    fn died(&self, i: usize, status: ExitStatus) -> ! {
        let member = &self.members[i];
        panic!(
            "etcd member {} exited ({status})\n{}",
            member.name,
            self.tails()
        )
    }

    /// Sends `signal` to member `i`.
    fn signal(&self, i: usize, signal: Signal) {
        let member = self.member(i);
        let child = member.child.as_ref().unwrap_or_else(|| {
            panic!(
                "cannot send {signal} to etcd member {}: it was killed",
                member.name
            )
        });
        let pid = Pid::from_raw(i32::try_from(child.id()).expect("a pid fits i32"));
        kill(pid, signal).unwrap_or_else(|e| {
            panic!(
                "{signal} to etcd member {} (pid {pid}): {e}\n{}",
                member.name,
                member.tail()
            )
        });
    }

    /// The members that run: started, not killed, not stopped, not exited.
    fn live(&self) -> Vec<usize> {
        (0..self.members.len())
            .filter(|&i| {
                let member = &self.members[i];
                member
                    .child
                    .as_ref()
                    .is_some_and(|child| net_hosts::running(child.id()))
                    && !member.stopped.load(Ordering::Relaxed)
            })
            .collect()
    }

    /// etcdctl as run beside member `via`, against `endpoints`, with the TLS files if any.
    fn etcdctl_via(&self, via: usize, endpoints: &[&str], args: &[&str]) -> Output {
        let mut command = command(&self.members[via].etcdctl);
        command.arg(format!("--endpoints={}", endpoints.join(",")));
        if let Some(tls) = &self.tls {
            command
                .arg("--cacert")
                .arg(&tls.ca)
                .arg("--cert")
                .arg(&tls.client_cert)
                .arg("--key")
                .arg(&tls.client_key);
        }
        command.args(args);
        run_bounded(&mut command, &self.dir, ETCDCTL_TIMEOUT)
    }

    /// The leader by [`leader`](Self::leader)'s rule, and the statuses it came from, for
    /// messages.
    fn leader_and_statuses(&self) -> (Option<usize>, String) {
        let live = self.live();
        let Some(&via) = live.first() else {
            return (None, "    (no member runs)".to_owned());
        };
        let endpoints: Vec<&str> = live
            .iter()
            .map(|&i| self.members[i].client_url.as_str())
            .collect();
        let output = self.etcdctl_via(via, &endpoints, &status_args());
        let statuses: Vec<(usize, MemberStatus)> = statuses(&output)
            .into_iter()
            .filter_map(|(endpoint, status)| {
                let i = self.members.iter().position(|m| m.client_url == endpoint)?;
                Some((i, status))
            })
            .collect();
        let leader = statuses.iter().find_map(|&(i, status)| {
            let named = statuses
                .iter()
                .filter(|(_, s)| s.leader == status.id)
                .count();
            (status.id == status.leader && 2 * named > self.members.len()).then_some(i)
        });
        (leader, shown_output(&output))
    }

    /// SIGKILLs every member and waits for each (a bounded wait; no panic: drop runs it).
    fn kill_all(&mut self) {
        for member in &mut self.members {
            let Some(mut child) = member.child.take() else {
                continue;
            };
            let _ = child.kill();
            if wait_child(&mut child, KILL_TIMEOUT).is_none() {
                eprintln!(
                    "etcd-cluster: member {} (pid {}) still runs {KILL_TIMEOUT:?} after SIGKILL",
                    member.name,
                    child.id()
                );
            }
        }
    }

    /// Every member's command and log tail, for a panic.
    fn tails(&self) -> String {
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

impl Member {
    /// Its client URL's address.
    fn client_address(&self) -> SocketAddr {
        let (_, address) = self
            .client_url
            .split_once("://")
            .expect("a client URL has a scheme");
        address.parse().expect("a client URL holds an address")
    }

    /// Its command and the tails of its log and console, for a panic.
    fn tail(&self) -> String {
        let pid = match &self.child {
            Some(child) => format!("pid {}", child.id()),
            None => "killed".to_owned(),
        };
        format!(
            "member {} ({pid}): {}\n  log {}:\n{}  stdout and stderr {}:\n{}",
            self.name,
            show(&self.launch),
            self.log.display(),
            tail(&read(&self.log), LOG_LINES),
            self.console.display(),
            tail(&read(&self.console), LOG_LINES),
        )
    }
}

/// etcdctl's arguments that check members' health: every endpoint named must commit a read
/// through raft, or etcdctl exits 1. The read waits for a leader; the first election of a new
/// cluster can take a second (split votes), and a read that gives up early costs a retry, so it
/// may wait 3 s. The dial is short: only listening members are asked.
fn health_args() -> [&'static str; 4] {
    [
        "endpoint",
        "health",
        "--dial-timeout=500ms",
        "--command-timeout=3s",
    ]
}

/// etcdctl's arguments that ask members for their status, as JSON; a member that does not
/// answer within a second is left out.
fn status_args() -> [&'static str; 6] {
    [
        "endpoint",
        "status",
        "-w",
        "json",
        "--dial-timeout=1s",
        "--command-timeout=1s",
    ]
}

/// The statuses in the output of etcdctl run with [`status_args`], by endpoint: those of the
/// members that answered, even when others did not (etcdctl exits 1 then).
fn statuses(output: &Output) -> Vec<(String, MemberStatus)> {
    serde_json::from_slice::<serde_json::Value>(&output.stdout)
        .ok()
        .and_then(|value| value.as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(|entry| {
            let endpoint = entry["Endpoint"].as_str()?.to_owned();
            let status = &entry["Status"];
            // Member ids are u64s, often above i64's range; JSON holds them as decimal
            // numbers. `leader` is left out (0) while a member knows of none.
            let id = status["header"]["member_id"].as_u64()?;
            let leader = status["leader"].as_u64().unwrap_or(0);
            let raft_term = status["raftTerm"].as_u64()?;
            Some((
                endpoint,
                MemberStatus {
                    id,
                    leader,
                    raft_term,
                },
            ))
        })
        .collect()
}

/// A command for `parts` (program first), without the environment that would change etcd's
/// or etcdctl's flags: etcd reads `ETCD_*` as flags and exits when one is also given on the
/// command line; etcdctl reads `ETCDCTL_*` (`ETCDCTL_API=2` would change the API).
fn command(parts: &[OsString]) -> Command {
    let mut command = Command::new(&parts[0]);
    command.args(&parts[1..]);
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("ETCD") {
            command.env_remove(key);
        }
    }
    command
}

/// `parts` as a person would type them, for messages.
fn show(parts: &[OsString]) -> String {
    parts
        .iter()
        .map(|part| part.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs `command` with no stdin and its stdout and stderr through files in `dir` (a pipe would
/// need a reader per stream), killing it and panicking when it outlives `timeout`.
fn run_bounded(command: &mut Command, dir: &Path, timeout: Duration) -> Output {
    let shown = std::iter::once(command.get_program())
        .chain(command.get_args())
        .map(|part| part.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ");
    let n = RUNS.fetch_add(1, Ordering::Relaxed);
    let out = dir.join(format!("etcdctl.{n}.out"));
    let err = dir.join(format!("etcdctl.{n}.err"));
    let create =
        |path: &Path| File::create(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut child = command
        .stdin(Stdio::null())
        .stdout(create(&out))
        .stderr(create(&err))
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run {shown} (is Debian's etcd-client installed? cargo xtask test \
                 installs it): {e}"
            )
        });
    let status = wait_child(&mut child, timeout);
    let take = |path: &Path| {
        let bytes = fs::read(path).unwrap_or_default();
        let _ = fs::remove_file(path);
        bytes
    };
    let output = Output {
        status: status.unwrap_or_else(|| {
            let _ = child.kill();
            wait_child(&mut child, KILL_TIMEOUT)
                .unwrap_or_else(|| panic!("{shown} outlived {timeout:?} and SIGKILL"))
        }),
        stdout: take(&out),
        stderr: take(&err),
    };
    if status.is_none() {
        panic!(
            "{shown} did not finish within {timeout:?} and was killed:\n{}",
            shown_output(&output)
        );
    }
    output
}

/// Waits up to `timeout` for `child` to exit; `None` when it still runs.
fn wait_child(child: &mut Child, timeout: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            // The child is gone in a way we cannot observe: treat it as exited.
            Err(_) => return child.wait().ok(),
            Ok(None) if Instant::now() >= deadline => return None,
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

/// A command's exit status and output, indented, for a panic.
fn shown_output(output: &Output) -> String {
    format!(
        "  ({})\n  stdout:\n{}  stderr:\n{}",
        output.status,
        tail(&String::from_utf8_lossy(&output.stdout), LOG_LINES),
        tail(&String::from_utf8_lossy(&output.stderr), LOG_LINES)
    )
}

/// A file's text, or nothing.
fn read(path: &Path) -> String {
    String::from_utf8_lossy(&fs::read(path).unwrap_or_default()).into_owned()
}

/// The last `lines` lines of `text`, indented, with a note when lines were left off.
fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    let start = all.len().saturating_sub(lines);
    let mut shown = String::new();
    if all.is_empty() {
        shown.push_str("    (empty)\n");
    }
    if start > 0 {
        shown.push_str(&format!("    ... ({start} earlier lines)\n"));
    }
    for line in &all[start..] {
        shown.push_str("    ");
        shown.push_str(line);
        shown.push('\n');
    }
    shown
}

/// `count` distinct ports of 127.0.0.1 that were free a moment ago (bound to port 0 together,
/// then released).
fn free_ports(count: usize) -> Vec<u16> {
    let listeners: Vec<TcpListener> = (0..count)
        .map(|_| {
            TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
                .unwrap_or_else(|e| panic!("cannot bind a free port of 127.0.0.1: {e}"))
        })
        .collect();
    listeners
        .iter()
        .map(|listener| listener.local_addr().expect("a bound address").port())
        .collect()
}

/// Where clusters put their directories: `/dev/shm` when there is one (etcd fsyncs every
/// commit: in memory that costs nothing), the temporary directory elsewhere.
fn base_dir() -> PathBuf {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

/// A new, empty directory for a cluster, named after this process (its pid and start time) so
/// that a later start knows whether its owner is gone; sweeps what dead owners left first.
fn fresh_dir() -> PathBuf {
    let base = base_dir();
    sweep(&base);
    let (pid, started) = (
        std::process::id(),
        start_time(std::process::id()).unwrap_or(0),
    );
    loop {
        let n = MADE.fetch_add(1, Ordering::Relaxed);
        let dir = base.join(format!("{DIR_PREFIX}{pid}.{started}.{n}"));
        match fs::create_dir(&dir) {
            Ok(()) => return dir,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => panic!("cannot create {}: {e}", dir.display()),
        }
    }
}

/// When process `pid` started (in clock ticks after boot), if it runs.
fn start_time(pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Field 22; the fields after the parenthesised command name start at field 3.
    stat.rsplit_once(") ")?
        .1
        .split_whitespace()
        .nth(19)?
        .parse()
        .ok()
}

/// Whether the process that made the cluster directory `name` (`etcd-cluster.PID.START.N`) is
/// gone; `false` for names not of that form.
fn owner_gone(name: &str) -> bool {
    let Some(rest) = name.strip_prefix(DIR_PREFIX) else {
        return false;
    };
    let mut fields = rest.split('.');
    let (Some(pid), Some(started)) = (fields.next(), fields.next()) else {
        return false;
    };
    let (Ok(pid), Ok(started)) = (pid.parse::<u32>(), started.parse::<u64>()) else {
        return false;
    };
    start_time(pid) != Some(started)
}

/// Kills the members of clusters under `base` whose owning process is gone (it was killed
/// before it could drop them), and removes those clusters' directories.
fn sweep(base: &Path) {
    let marker = format!("{MARKER}=");
    if let Ok(entries) = fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<i32>().ok())
            else {
                continue;
            };
            let Ok(environ) = fs::read(entry.path().join("environ")) else {
                continue;
            };
            let orphan = environ.split(|&b| b == 0).any(|var| {
                let var = String::from_utf8_lossy(var);
                var.strip_prefix(&marker).is_some_and(|dir| {
                    Path::new(dir)
                        .file_name()
                        .is_some_and(|name| owner_gone(&name.to_string_lossy()))
                })
            });
            if orphan {
                let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
            }
        }
    }
    if let Ok(entries) = fs::read_dir(base) {
        for entry in entries.flatten() {
            if owner_gone(&entry.file_name().to_string_lossy()) {
                let _ = fs::remove_dir_all(entry.path());
            }
        }
    }
}

/// The server certificate and key every member of a TLS cluster in `dir` uses.
fn server_pem(dir: &Path) -> (PathBuf, PathBuf) {
    (dir.join("server.crt"), dir.join("server.key"))
}

/// Makes a CA, a server certificate for 127.0.0.1 and localhost (for clients and, as server and
/// client both, for peers) and a client certificate, and writes them as PEM into `dir`.
fn make_tls(dir: &Path) -> TlsFiles {
    let mut params = CertificateParams::default();
    params
        .distinguished_name
        .push(DnType::CommonName, "etcd-cluster test CA");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_key = KeyPair::generate().expect("a CA key");
    let ca = CertifiedIssuer::self_signed(params, ca_key).expect("a CA certificate");
    let issue = |names: &[&str], common_name: &str, usages| {
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let mut params = CertificateParams::new(names).expect("valid subject alternative names");
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        params.extended_key_usages = usages;
        let key = KeyPair::generate().expect("a key");
        let cert = params.signed_by(&key, &ca).expect("a certificate");
        (cert.pem(), key.serialize_pem())
    };
    let (server_cert, server_key) = issue(
        &["127.0.0.1", "localhost"],
        "etcd-cluster member",
        vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ],
    );
    let (client_cert, client_key) = issue(
        &[],
        "etcd-cluster client",
        vec![ExtendedKeyUsagePurpose::ClientAuth],
    );
    let files = TlsFiles {
        ca: dir.join("ca.crt"),
        client_cert: dir.join("client.crt"),
        client_key: dir.join("client.key"),
    };
    let (server_cert_path, server_key_path) = server_pem(dir);
    for (path, text) in [
        (&files.ca, ca.pem()),
        (&files.client_cert, client_cert),
        (&files.client_key, client_key),
        (&server_cert_path, server_cert),
        (&server_key_path, server_key),
    ] {
        fs::write(path, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
    }
    files
}
