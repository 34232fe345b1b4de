//! The rendezvous server facing the network through grpc-guard: mTLS, the allow list, the
//! connection cap, and responses a peer never reads.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use elastic::grpc_guard::{Access, Network, TlsConfig};
use elastic::{
    ClientOptions, JobConfig, Join, RendezvousClient, RendezvousServer, RendezvousServerBuilder,
};
use prost::Message;
use raw_http2::{RawConnection, call, frame, grpc_message, grpc_request_headers};
use test_pki::{TestCa, Usage};
use tokio::io::AsyncReadExt;

use crate::common::{config, fast, names, round, run, server_with};

/// A client that gives up within about a second.
fn impatient() -> ClientOptions {
    ClientOptions::default()
        .with_connect_timeout(Duration::from_millis(500))
        .with_rpc_timeout(Duration::from_millis(500))
        .with_retry_for(Duration::from_secs(1))
}

fn tls_of(issued: &test_pki::Issued, ca: &TestCa) -> TlsConfig {
    TlsConfig::from_pem(issued.cert.clone(), issued.key.clone(), ca.cert_pem()).unwrap()
}

/// Polls `check` every 20 ms until it holds or `within` passes; whether it held.
async fn eventually(within: Duration, mut check: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < within {
        if check() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    check()
}

#[test]
fn over_mtls_only_clients_with_a_certificate_of_the_ca_join() {
    run(async {
        let ca = TestCa::new("rendezvous CA");
        let server = server_with(
            RendezvousServer::builder()
                .with_last_call(Duration::from_millis(300))
                .with_access(Access::default().with_tls(tls_of(&ca.issue(&["127.0.0.1"]), &ca))),
        )
        .await;
        let addr = server.local_addr().to_string();
        let c = config("1", 0);
        let join = Join::new("job", c.clone(), vec![20_000]).with_name("agent0");

        // A client with a certificate of the CA joins and gets its round.
        let agent = ca.issue_as("agent", &[], Usage::Client);
        let good = RendezvousClient::new(&addr, fast().with_tls(tls_of(&agent, &ca))).unwrap();
        let mut node = good.join(&join).await.unwrap();
        assert_eq!(names(&round(&good, &mut node).await), ["agent0"]);

        // Plaintext, or a certificate another CA issued (the server's CA trusted): refused
        // by the transport, never by the rendezvous (plaintext: HTTP/2 cannot read the TLS
        // answer; the stranger: the server's TLS alert, UnknownCA, or the connection it
        // closed), while the client of the CA is still
        // answered (the server is up: the refusal is the TLS's).
        let stranger = TestCa::new("another CA").issue_as("intruder", &[], Usage::Client);
        for options in [impatient(), impatient().with_tls(tls_of(&stranger, &ca))] {
            let client = RendezvousClient::new(&addr, options).unwrap();
            let err = client.join(&join.clone().with_name("agent1")).await;
            let by_transport = match &err {
                Err(elastic::Error::Unreachable { .. }) => true,
                Err(elastic::Error::Refused { message, .. }) => {
                    message.starts_with("transport error") || message.contains("h2 protocol error")
                }
                _ => false,
            };
            assert!(
                by_transport,
                "joined, or refused by the rendezvous: {err:?}"
            );
            let still = good.job_status("job", None, Duration::ZERO).await;
            assert!(still.is_ok(), "the server stopped answering: {still:?}");
        }

        // TLS without a client certificate: refused.
        let bare = tonic::transport::Endpoint::from_shared(format!("https://{addr}"))
            .unwrap()
            .tls_config(
                tonic::transport::ClientTlsConfig::new()
                    .ca_certificate(tonic::transport::Certificate::from_pem(ca.cert_pem())),
            )
            .unwrap()
            .connect_timeout(Duration::from_millis(500));
        if let Ok(channel) = bare.connect().await {
            let mut stub = elastic::proto::rendezvous_client::RendezvousClient::new(channel);
            let status = stub
                .watch_rounds(elastic::proto::WatchRoundsRequest {
                    rdzv_id: "job".into(),
                    ..Default::default()
                })
                .await;
            // The handshake fails without a certificate: the call never reaches the service.
            let status = status.expect_err("answered without a client certificate");
            // A status the client's transport made carries its cause (a server's has none).
            assert!(
                std::error::Error::source(&status).is_some(),
                "refused by the rendezvous, not the transport: {status:?}"
            );
        }
        server.shutdown().await;
    });
}

#[test]
fn a_peer_outside_the_allowed_networks_is_refused_and_told_why() {
    run(async {
        let server = server_with(RendezvousServer::builder().with_access(
            Access::default().with_allow(["192.0.2.0/24".parse::<Network>().unwrap()]),
        ))
        .await;
        let client = RendezvousClient::new(server.local_addr().to_string(), impatient()).unwrap();
        let err = client
            .join(&Join::new("job", config("1", 0), vec![20_000]))
            .await
            .unwrap_err();
        // Refused at once, not retried: the peer's address will not change.
        let err = err.to_string();
        assert!(
            err.contains("refused Join: PermissionDenied: this host is not in the rendezvous's allowed networks")
                && err.contains("127.0.0.1 is not in this server's allowed networks"),
            "{err}"
        );
        // Told why on the wire, in a GOAWAY, and closed at once.
        let mut raw = tokio::net::TcpStream::connect(server.local_addr())
            .await
            .unwrap();
        let mut said = Vec::new();
        tokio::time::timeout(Duration::from_secs(5), raw.read_to_end(&mut said))
            .await
            .expect("closed at once")
            .unwrap();
        let said = String::from_utf8_lossy(&said);
        assert!(
            said.contains(
                "tfcluster rendezvous: 127.0.0.1 is not in this server's allowed networks"
            ),
            "{said:?}"
        );
        server.shutdown().await;

        // Over TLS, told in an `access_denied` alert before any handshake (HTTP/2 bytes would
        // read as a corrupt record), and refused as at once.
        let ca = TestCa::new("rendezvous CA");
        let server = server_with(
            RendezvousServer::builder().with_access(
                Access::default()
                    .with_allow(["192.0.2.0/24".parse::<Network>().unwrap()])
                    .with_tls(tls_of(&ca.issue(&["127.0.0.1"]), &ca)),
            ),
        )
        .await;
        let agent = ca.issue_as("agent", &[], Usage::Client);
        let client = RendezvousClient::new(
            server.local_addr().to_string(),
            impatient().with_tls(tls_of(&agent, &ca)),
        )
        .unwrap();
        let err = client
            .join(&Join::new("job", config("1", 0), vec![20_000]))
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("PermissionDenied: this host is not in the rendezvous's allowed networks")
                && err.contains("AccessDenied"),
            "{err}"
        );
        server.shutdown().await;
    });
}

#[test]
fn idle_connections_past_the_cap_are_closed_while_an_agent_still_joins() {
    run(async {
        let limits = RendezvousServerBuilder::default_limits()
            .with_max_connections(8)
            .with_idle_timeout(Some(Duration::from_secs(1)));
        let server = server_with(
            RendezvousServer::builder()
                .with_last_call(Duration::from_millis(300))
                .with_limits(limits),
        )
        .await;
        let addr = server.local_addr();
        // Eight connections that start HTTP/2 and never call: the cap, until they idle out.
        let idle: Vec<RawConnection> = (0..8).map(|_| RawConnection::open(addr).unwrap()).collect();
        // Twenty that never say a word: each takes the place of an older one, or is refused.
        let mut silent = Vec::new();
        for _ in 0..20 {
            silent.push(tokio::net::TcpStream::connect(addr).await.unwrap());
        }
        // An evicted connection's slot comes back when the runtime drops its aborted task: at
        // once on a quiet machine, a moment later on a busy one (CI saw 9 for an instant).
        assert!(
            eventually(Duration::from_secs(2), || server.open_connections() <= 8).await,
            "{}",
            server.open_connections()
        );
        // The agent gets in as soon as idle connections are closed.
        let client = RendezvousClient::new(
            addr.to_string(),
            fast().with_retry_for(Duration::from_secs(10)),
        )
        .unwrap();
        let c = config("1", 0);
        let mut node = client
            .join(&Join::new("job", c, vec![20_000]).with_name("agent0"))
            .await
            .unwrap();
        assert_eq!(names(&round(&client, &mut node).await), ["agent0"]);
        assert!(
            eventually(Duration::from_secs(5), || idle
                .iter()
                .all(|c| c.received().closed))
            .await,
            "idle connections still open"
        );
        assert!(eventually(Duration::from_secs(2), || server.open_connections() <= 8).await);
        drop(silent);
        server.shutdown().await;
    });
}

/// A host name of 253 bytes, the longest there is: rounds of few nodes get large.
fn long_host(c: char) -> String {
    let label = |c: char, n: usize| std::iter::repeat_n(c, n).collect::<String>();
    format!(
        "{}.{}.{}.{}",
        label(c, 63),
        label('b', 63),
        label('c', 63),
        label('d', 61)
    )
}

/// Opens, on a raw connection that never opens the server's window, a `WatchRounds` call
/// of `rdzv_id` on stream 1.
fn stalled_watch(addr: SocketAddr, rdzv_id: &str) -> RawConnection {
    let raw = RawConnection::open(addr).unwrap();
    let request = elastic::proto::WatchRoundsRequest {
        rdzv_id: rdzv_id.into(),
        ..Default::default()
    }
    .encode_to_vec();
    // SETTINGS_INITIAL_WINDOW_SIZE (0x4) of 1 KiB: each stream lets out 1 KiB of the
    // answer, however large a round the rendezvous may send.
    let mut out = Vec::new();
    let mut window = vec![0x00, 0x04];
    window.extend_from_slice(&1024u32.to_be_bytes());
    frame(0x4, 0, 0, &window, &mut out);
    call(
        1,
        &grpc_request_headers(
            &addr.to_string(),
            "/tfcluster.rendezvous.Rendezvous/WatchRounds",
        ),
        &grpc_message(&request),
        &mut out,
    );
    raw.send(out);
    raw
}

#[test]
fn a_response_its_peer_never_reads_is_cut_and_its_memory_given_back() {
    run(async {
        let timeout = Duration::from_secs(1);
        let server = server_with(
            RendezvousServer::builder()
                .with_last_call(Duration::from_millis(300))
                .with_limits(
                    RendezvousServerBuilder::default_limits().with_message_timeout(timeout),
                ),
        )
        .await;
        // A round of two nodes of 200 tasks on 253-byte hosts: over 100 KB, and within the
        // TF_CONFIG a round may have (512 tasks would pass it and fail the job).
        let c = JobConfig::new("2".parse().unwrap(), 200).unwrap();
        let client = RendezvousClient::new(server.local_addr().to_string(), fast()).unwrap();
        let mut nodes = Vec::new();
        for (i, host) in [long_host('a'), long_host('x')].into_iter().enumerate() {
            let ports = (1..=200).map(|p| 20_000 + p).collect();
            let join = Join::new("big", c.clone(), ports)
                .with_host(host)
                .with_name(format!("agent{i}"));
            nodes.push(client.join(&join).await.unwrap());
        }
        let (mut a, mut b) = (nodes.remove(0), nodes.remove(0));
        let (r0, _) = tokio::join!(round(&client, &mut a), round(&client, &mut b));
        assert_eq!(r0.cluster_spec().num_tasks("worker").unwrap(), 400);

        // A peer asks for the round and reads only the 1 KiB its window lets out.
        let raw = stalled_watch(server.local_addr(), "big");
        assert!(
            eventually(Duration::from_secs(5), || server.response_memory_in_use()
                > 64 << 10)
            .await,
            "the response is held: {} bytes",
            server.response_memory_in_use()
        );
        // Within the message timeout and a little more, what it held is given back but for
        // the slices already handed to h2 ...
        assert!(
            eventually(timeout + Duration::from_secs(3), || server
                .response_memory_in_use()
                <= 32 << 10)
            .await,
            "not cut: {} bytes held",
            server.response_memory_in_use()
        );
        // ... and when its window opens, the stream is reset and the rest given back.
        raw.open_window(1, 1 << 20);
        assert!(
            eventually(Duration::from_secs(5), || raw.received().rst_streams > 0).await,
            "no RST_STREAM: {:?}",
            raw.received()
        );
        assert!(
            eventually(Duration::from_secs(5), || server.response_memory_in_use()
                == 0)
            .await,
            "{} bytes held",
            server.response_memory_in_use()
        );
        // The server still answers everyone else.
        let mut node = client
            .join(&Join::new("small", config("1", 0), vec![20_000]).with_name("agent9"))
            .await
            .unwrap();
        assert_eq!(names(&round(&client, &mut node).await), ["agent9"]);
        server.shutdown().await;
    });
}
