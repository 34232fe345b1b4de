//! The clusters themselves: real etcd members that answer etcdctl, elect a new leader when
//! theirs is killed, require client certificates with TLS, run inside net-hosts hosts, and
//! leave nothing behind when dropped, by a panic too.

use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use etcd_cluster::EtcdCluster;
use net_hosts::Hosts;

/// etcdctl's stdout, after checking that it succeeded.
fn ok(output: Output, what: &str) -> String {
    assert!(
        output.status.success(),
        "etcdctl {what} failed ({}):\nstdout: {}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("etcdctl prints UTF-8")
}

/// Puts `key` = `value` and reads it back (`get` prints the key, then the value).
fn put_get(cluster: &EtcdCluster, key: &str, value: &str) {
    assert_eq!(
        ok(cluster.etcdctl(&["put", key, value]), "put").trim(),
        "OK"
    );
    let got = ok(cluster.etcdctl(&["get", key]), "get");
    assert_eq!(got.lines().collect::<Vec<_>>(), [key, value], "get {key}");
}

#[test]
fn local_cluster_answers_put_and_get() {
    let started = Instant::now();
    let cluster = EtcdCluster::start_local(3);
    eprintln!("3 members on loopback healthy in {:.2?}", started.elapsed());
    let endpoints = cluster.endpoints();
    assert_eq!(endpoints.len(), 3);
    for (i, endpoint) in endpoints.iter().enumerate() {
        assert!(endpoint.starts_with("http://127.0.0.1:"), "{endpoint}");
        assert_eq!(&cluster.member_endpoint(i), endpoint);
    }
    put_get(&cluster, "/tfcluster/test", "hello");
    // Every member serves the value (a linearizable read through each).
    for endpoint in &endpoints {
        let output = Command::new("etcdctl")
            .arg(format!("--endpoints={endpoint}"))
            .args(["get", "/tfcluster/test", "--print-value-only"])
            .output()
            .expect("etcdctl runs");
        assert_eq!(ok(output, "get").trim(), "hello", "from {endpoint}");
    }
}

#[test]
fn killing_the_leader_elects_another() {
    let mut cluster = EtcdCluster::start_local(3);
    let leader = cluster.wait_leader(Duration::from_secs(5));
    assert_eq!(cluster.leader(), Some(leader));
    // etcd's own word from here on: member ids and terms, not this crate's indexes.
    let old = cluster.status(leader).expect("the leader answers");
    assert_eq!(old.leader, old.id, "m{leader} does not lead: {old:?}");
    put_get(&cluster, "before", "1");
    let killed = Instant::now();
    cluster.kill(leader);
    // etcd's own word from here on: the members left follow one leader, elected in a later
    // term, and not the killed one.
    let elected = cluster
        .elected_after(leader, &old, Duration::from_secs(5))
        .unwrap();
    let next = cluster.wait_leader(Duration::from_secs(5));
    assert_eq!(cluster.status(next).map(|s| s.id), Some(elected.id));
    eprintln!(
        "m{leader} killed; m{next} leads {:.2?} later",
        killed.elapsed()
    );
    // Two members of three are a quorum: writes and reads go on.
    put_get(&cluster, "after", "2");
    let got = ok(
        cluster.etcdctl(&["get", "before", "--print-value-only"]),
        "get",
    );
    assert_eq!(got.trim(), "1");
    // Frozen, a second member leaves one of three: no quorum, no leader; thawed, it is back.
    let other = (0..3).find(|&i| i != leader && i != next).expect("a third");
    cluster.stop(other);
    assert_eq!(cluster.leader(), None, "one member of three cannot lead");
    cluster.cont(other);
    cluster.wait_leader(Duration::from_secs(5));
    // The killed member comes back on its data and has what was written meanwhile.
    let restarted = Instant::now();
    cluster.restart(leader);
    eprintln!(
        "m{leader} restarted, healthy in {:.2?}",
        restarted.elapsed()
    );
    let output = Command::new("etcdctl")
        .arg(format!("--endpoints={}", cluster.member_endpoint(leader)))
        .args(["get", "after", "--print-value-only"])
        .output()
        .expect("etcdctl runs");
    assert_eq!(ok(output, "get").trim(), "2");
}

#[test]
fn tls_cluster_requires_a_client_certificate() {
    let started = Instant::now();
    let (cluster, tls) = EtcdCluster::start_local_tls(3);
    eprintln!(
        "3 TLS members on loopback healthy in {:.2?}",
        started.elapsed()
    );
    let endpoints = cluster.endpoints();
    assert!(
        endpoints
            .iter()
            .all(|e| e.starts_with("https://127.0.0.1:")),
        "{endpoints:?}"
    );
    put_get(&cluster, "secure", "yes");
    let etcdctl = |with_cert: bool| {
        let mut command = Command::new("etcdctl");
        command
            .arg(format!("--endpoints={}", endpoints.join(",")))
            .arg("--cacert")
            .arg(&tls.ca)
            .arg("--dial-timeout=1s")
            .arg("--command-timeout=2s");
        if with_cert {
            command
                .arg("--cert")
                .arg(&tls.client_cert)
                .arg("--key")
                .arg(&tls.client_key);
        }
        command
            .args(["get", "secure", "--print-value-only"])
            .output()
            .expect("etcdctl runs")
    };
    assert_eq!(
        ok(etcdctl(true), "get with the client certificate").trim(),
        "yes"
    );
    let refused = etcdctl(false);
    assert!(
        !refused.status.success(),
        "a client without a certificate was served: {}",
        String::from_utf8_lossy(&refused.stdout)
    );
    assert!(!String::from_utf8_lossy(&refused.stdout).contains("yes"));
}

#[test]
fn cluster_in_hosts_answers_from_inside_a_host() {
    let hosts = Hosts::create(3, "192.0.2.41".parse().expect("an address"));
    let started = Instant::now();
    let cluster = EtcdCluster::start_in_hosts(&hosts, &[0, 1, 2]);
    eprintln!("3 members in hosts healthy in {:.2?}", started.elapsed());
    assert_eq!(
        cluster.endpoints(),
        [
            "http://192.0.2.41:2379",
            "http://192.0.2.42:2379",
            "http://192.0.2.43:2379"
        ]
    );
    // etcdctl runs inside host 0, the first member's.
    put_get(&cluster, "hosts", "3");
    let leader = cluster.wait_leader(Duration::from_secs(5));
    assert!(leader < 3);
    // And from inside host 0 by hand, to every member.
    for endpoint in cluster.endpoints() {
        let output = hosts
            .command(0, "etcdctl")
            .arg(format!("--endpoints={endpoint}"))
            .args(["get", "hosts", "--print-value-only"])
            .output()
            .expect("etcdctl runs in host 0");
        assert_eq!(ok(output, "get").trim(), "3", "from {endpoint}");
    }
}

#[test]
fn a_dropped_cluster_leaves_no_member_and_no_directory_even_on_a_panic() {
    // What a cluster leaves to check: its directory, and its members' client addresses.
    let traces = |cluster: &EtcdCluster| -> (PathBuf, Vec<SocketAddr>) {
        let addresses = cluster
            .endpoints()
            .iter()
            .map(|e| e.trim_start_matches("http://").parse().expect("an address"))
            .collect();
        (cluster.dir().to_owned(), addresses)
    };
    let gone = |(dir, addresses): (PathBuf, Vec<SocketAddr>)| {
        assert!(!dir.exists(), "{} is still there", dir.display());
        for address in addresses {
            let connected = TcpStream::connect_timeout(&address, Duration::from_secs(1));
            assert!(connected.is_err(), "a member still serves {address}");
        }
    };
    let cluster = EtcdCluster::start_local(2);
    let left = traces(&cluster);
    assert!(left.0.is_dir(), "{}", left.0.display());
    drop(cluster);
    gone(left);

    let (sender, receiver) = std::sync::mpsc::channel();
    let failed = std::thread::spawn(move || {
        let cluster = EtcdCluster::start_local(2);
        sender.send(traces(&cluster)).expect("the test waits");
        panic!("a test fails while its cluster runs");
    })
    .join();
    assert!(failed.is_err(), "the thread panicked");
    gone(receiver.recv().expect("the cluster started"));
}
