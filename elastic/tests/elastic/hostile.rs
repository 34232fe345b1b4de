//! Peers that send garbage or too much, and a rendezvous that cannot be reached: errors, not
//! hangs, and the server keeps serving others.

use std::time::{Duration, Instant};

use bytes_codec::RawCodec;
use elastic::proto::MAX_REQUEST_BYTES;
use elastic::{ClientOptions, Join, RendezvousClient, proto};
use tokio::io::AsyncWriteExt;
use tonic::Code;

use crate::common::{
    client, config, join, names, on_another_address, rebind, refusing, round, run, server,
};

#[test]
fn garbage_and_oversized_requests_get_grpc_errors_while_a_round_forms() {
    run(async {
        let server = server().await;
        let addr = server.local_addr();
        let good = client(&server);
        let c = config("2", 0);
        let mut a = join(&good, "job", &c, 0).await;

        // Bytes that are not HTTP/2: the server drops that connection only.
        let mut raw = tokio::net::TcpStream::connect(addr).await.unwrap();
        raw.write_all(&[0xde, 0xad, 0xbe, 0xef].repeat(4096))
            .await
            .unwrap();

        // A gRPC call whose message is not a JoinRequest.
        let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect()
            .await
            .unwrap();
        let mut grpc = tonic::client::Grpc::new(channel.clone());
        grpc.ready().await.unwrap();
        let path = tonic::codegen::http::uri::PathAndQuery::from_static(
            "/tfcluster.rendezvous.Rendezvous/Join",
        );
        let status = grpc
            .unary(tonic::Request::new(vec![0xff; 64]), path.clone(), RawCodec)
            .await
            .unwrap_err();
        assert!(
            matches!(status.code(), Code::Internal | Code::InvalidArgument),
            "{status:?}"
        );

        // A well-formed JoinRequest larger than the server decodes.
        let mut stub = proto::rendezvous_client::RendezvousClient::new(channel);
        let huge = proto::JoinRequest {
            rdzv_id: "job".into(),
            host: "h".repeat(MAX_REQUEST_BYTES + 1),
            ..Default::default()
        };
        let status = stub.join(huge).await.unwrap_err();
        assert_eq!(status.code(), Code::OutOfRange, "{status:?}");

        // Fields a peer must fill are checked, naming the value.
        let status = stub
            .join(proto::JoinRequest {
                rdzv_id: "job".into(),
                config: Some(proto::JobConfig {
                    min_nodes: 2,
                    max_nodes: 2,
                    tasks_per_node: 1,
                    ..Default::default()
                }),
                ports: vec![70_000],
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(
            (status.code(), status.message()),
            (Code::InvalidArgument, "port 70000 is not from 1 to 65535")
        );

        // Meanwhile the server still forms rounds.
        let mut b = join(&good, "job", &c, 1).await;
        let (ra, rb) = tokio::join!(round(&good, &mut a), round(&good, &mut b));
        assert_eq!(names(&ra), names(&rb));
        server.shutdown().await;
    });
}

#[test]
fn an_unreachable_rendezvous_is_a_clear_error_within_the_timeout() {
    run(async {
        // A port nothing listens on: connections are refused.
        let (_held, closed) = refusing();
        // A port that accepts connections and never answers.
        let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let silent_addr = silent.local_addr().unwrap();
        for (addr, cause) in [
            (closed, "Connection refused"),
            (silent_addr, "no answer within"),
        ] {
            let client = RendezvousClient::new(
                addr.to_string(),
                ClientOptions::default()
                    .with_connect_timeout(Duration::from_millis(300))
                    .with_rpc_timeout(Duration::from_millis(300))
                    .with_retry_for(Duration::from_secs(1)),
            )
            .unwrap();
            let start = Instant::now();
            let err = client
                .join(&Join::new("job", config("1", 0), vec![1]))
                .await
                .unwrap_err();
            let took = start.elapsed();
            assert!(
                took >= Duration::from_millis(900) && took < Duration::from_secs(3),
                "{took:?}"
            );
            let text = err.to_string();
            assert!(
                text.starts_with(&format!("rendezvous at {addr} unreachable for "))
                    && text.contains("(Join)")
                    && text.contains(cause),
                "{text}"
            );
        }
        drop(silent);
        let err = RendezvousClient::new("no port here", ClientOptions::default()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid rendezvous address \"no port here\": expected HOST:PORT"
        );
    });
}

#[test]
fn an_agent_started_before_the_rendezvous_waits_for_it() {
    run(on_another_address(|| async {
        // Held until the server binds it beside the hold.
        let (held, addr) = refusing();
        let client = RendezvousClient::new(
            addr.to_string(),
            ClientOptions::default().with_retry_for(Duration::from_secs(10)),
        )
        .unwrap();
        let c = config("1", 0);
        let joining = tokio::spawn({
            let client = client.clone();
            async move { client.join(&Join::new("job", c, vec![1])).await }
        });
        // Refused for a while (its first tries, 50 and 100 ms apart), the agent still waits.
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(
            !joining.is_finished(),
            "the agent gave up before the rendezvous started: {:?}",
            joining.await
        );
        let Some(server) = rebind(addr, elastic::RendezvousServer::builder()).await else {
            joining.abort();
            return None;
        };
        drop(held);
        let mut node = joining.await.unwrap().unwrap();
        assert_eq!(round(&client, &mut node).await.number(), 1);
        server.shutdown().await;
        Some(())
    }));
}

/// A codec that sends and receives raw bytes, for requests no stub would send.
mod bytes_codec {
    use prost::bytes::{Buf, BufMut, Bytes};
    use tonic::Status;
    use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};

    pub(crate) struct RawCodec;
    pub(crate) struct Raw;

    impl Codec for RawCodec {
        type Encode = Vec<u8>;
        type Decode = Bytes;
        type Encoder = Raw;
        type Decoder = Raw;
        fn encoder(&mut self) -> Raw {
            Raw
        }
        fn decoder(&mut self) -> Raw {
            Raw
        }
    }

    impl Encoder for Raw {
        type Item = Vec<u8>;
        type Error = Status;
        fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
            dst.put_slice(&item);
            Ok(())
        }
    }

    impl Decoder for Raw {
        type Item = Bytes;
        type Error = Status;
        fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, Status> {
            Ok(Some(src.copy_to_bytes(src.remaining())))
        }
    }
}

#[test]
fn shutdown_and_drop_end_long_polls_and_stop_serving() {
    for drop_it in [false, true] {
        run(async move {
            let server = server().await;
            let client = client(&server);
            let mut node = join(&client, "job", &config("2", 0), 0).await;
            let waiting = tokio::spawn({
                let client = client.clone();
                async move { client.wait_round(&mut node, Duration::from_secs(20)).await }
            });
            tokio::time::sleep(Duration::from_millis(100)).await;
            let start = Instant::now();
            if drop_it {
                drop(server);
            } else {
                server.shutdown().await;
            }
            // The parked poll is answered at once; the client retries for its 2 s, then
            // says the rendezvous is gone.
            let err = waiting.await.unwrap().unwrap_err();
            let took = start.elapsed();
            assert!(took < Duration::from_secs(5), "{took:?}");
            let unreachable =
                matches!(err, elastic::Error::Unreachable { call, .. } if call == "WaitRound");
            assert!(unreachable, "{err}");
        });
    }
}
