//! One gRPC channel per remote task, and the deadlines every call on it runs under.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use cluster_proto::eager::eager_service_client::EagerServiceClient;
use cluster_proto::worker_service_client::WorkerServiceClient;
use cluster_spec::__private::error_chain::Chain;
use tokio::sync::Semaphore;
use tokio::time::Instant;
use tonic::transport::Channel;

use super::Transport;
use crate::error::TaskError;
use crate::server::MAX_MESSAGE_SIZE;

/// The largest HTTP/2 frame a task may send this client: 1 MiB. Fetching 100 MB from a
/// TensorFlow worker took 150–290 ms at the default 16 KiB frames and about 110 ms at 1 MiB
/// (measured in the same run; 16 MiB gained little more).
const MAX_FRAME_SIZE: u32 = 1 << 20;

/// The deadlines of one operation: each RPC gets `rpc`, cut short by the operation's end; and
/// a cap on RPCs in flight.
#[derive(Clone, Debug)]
pub(crate) struct Deadline {
    rpc: Duration,
    end: Instant,
    permits: Arc<Semaphore>,
}

impl Deadline {
    pub(crate) fn new(rpc: Duration, overall: Duration, max_in_flight: usize) -> Self {
        Self {
            rpc,
            end: Instant::now() + overall,
            permits: Arc::new(Semaphore::new(max_in_flight.max(1))),
        }
    }

    /// The time the next RPC may take.
    fn budget(&self) -> Duration {
        self.rpc
            .min(self.end.saturating_duration_since(Instant::now()))
    }

    /// Runs one RPC (`call`, started only once a permit is free) under its deadline.
    pub(crate) async fn run<T, F>(&self, method: &'static str, call: F) -> Result<T, TaskError>
    where
        F: Future<Output = Result<tonic::Response<T>, tonic::Status>>,
    {
        let timeout = self.budget();
        let started = Instant::now();
        let work = async {
            // The semaphore is never closed, so acquiring only waits.
            let _permit = self.permits.acquire().await;
            call.await
        };
        let result = match tokio::time::timeout(timeout, work).await {
            Ok(Ok(response)) => Ok(response.into_inner()),
            Ok(Err(status)) => Err(TaskError::Rpc { method, status }),
            Err(_) => Err(TaskError::Timeout { method, timeout }),
        };
        // The task and address come from the caller's span (one per task of a step).
        tracing::trace!(
            method,
            elapsed = ?started.elapsed(),
            error = result.as_ref().err().map(|e| tracing::field::display(Chain(e))),
            "rpc"
        );
        result
    }

    /// Dials `address` (`host:port`) under the deadline.
    pub(crate) async fn dial(
        &self,
        transport: &Transport,
        address: &str,
    ) -> Result<TaskChannel, TaskError> {
        let timeout = self.budget();
        let endpoint = transport
            .endpoint(address)
            .map_err(|source| TaskError::Connect { source })?
            .tcp_nodelay(true)
            // Large tensors: HTTP/2's default 64 KiB windows cap a fetch at one window per
            // round trip; let the window grow with the measured bandwidth-delay product, as
            // gRPC C++ (BDP probing) does.
            .http2_adaptive_window(true)
            // And let peers send large frames: at HTTP/2's default 16 KiB a 100 MB tensor is
            // 6,100 frames, each its own trip through the connection's reader.
            .max_frame_size(MAX_FRAME_SIZE)
            .connect_timeout(timeout);
        let connect = async {
            let _permit = self.permits.acquire().await;
            endpoint.connect().await
        };
        let started = Instant::now();
        match tokio::time::timeout(timeout, connect).await {
            Ok(Ok(channel)) => {
                tracing::trace!(
                    address,
                    elapsed = ?started.elapsed(),
                    "dialled"
                );
                Ok(TaskChannel::new(channel))
            }
            Ok(Err(source)) => Err(TaskError::Connect { source }),
            Err(_) => Err(TaskError::Timeout {
                method: "connect",
                timeout,
            }),
        }
    }
}

/// The clients of one remote task, over one HTTP/2 connection.
#[derive(Clone, Debug)]
pub(crate) struct TaskChannel {
    /// The connection itself, for requests sent pre-encoded.
    pub(crate) channel: Channel,
    pub(crate) worker: WorkerServiceClient<Channel>,
    pub(crate) eager: EagerServiceClient<Channel>,
}

impl TaskChannel {
    fn new(channel: Channel) -> Self {
        Self {
            channel: channel.clone(),
            worker: WorkerServiceClient::new(channel.clone())
                .max_decoding_message_size(MAX_MESSAGE_SIZE)
                .max_encoding_message_size(MAX_MESSAGE_SIZE),
            eager: EagerServiceClient::new(channel)
                .max_decoding_message_size(MAX_MESSAGE_SIZE)
                .max_encoding_message_size(MAX_MESSAGE_SIZE),
        }
    }
}
