//! `CreateContext` requests for many tasks, assembled from parts encoded once.
//!
//! TensorFlow's protocol gives every task the whole cluster: each request carries the client's
//! `ServerDef` (the full `ClusterDef`) and every device the task may see. Built as prost
//! structs, that is one clone of the cluster and of the device list per task, a million
//! allocations for 1,024 tasks. Here the shared `ServerDef` and each device are encoded once;
//! a task's request is those bytes plus its job, task index and ids (protobuf fields may come
//! in any order, and a decoder reads the result as the same message).

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use cluster_proto::eager::{CreateContextRequest, CreateContextResponse};
use cluster_proto::{DeviceAttributes, ServerDef};
use prost::Message;
use prost::encoding::{WireType, encode_key, encode_varint, encoded_len_varint, key_len};
use tonic::codec::{BufferSettings, Codec, EncodeBuf, Encoder};
use tonic::codegen::http::uri::PathAndQuery;
use tonic::transport::Channel;
use tonic_prost::ProstCodec;

use device_filter::{ClusterDeviceFilters, VisibilityIndex};

use super::Deadline;
use super::connection::Member;
use super::fan_out::fan_out_reporting;
use super::options::Progress;
use super::visible::{Sent, Visible};
use crate::TaskId;
use crate::error::{Stage, TaskFailure};
use crate::server::MAX_MESSAGE_SIZE;

/// The parts every task's request shares.
pub(crate) struct CreateTemplate {
    /// The client's `ServerDef` without `job_name` and `task_index`.
    server_def: Bytes,
    /// Each device as a `cluster_device_attributes` field (key, length, message).
    devices: Vec<Bytes>,
    /// All of `devices`, for tasks without filters.
    all_devices: Bytes,
    /// `keep_alive_secs`, `context_id`, `context_view_id`, `lazy_copy_remote_function_inputs`.
    tail: Bytes,
}

impl CreateTemplate {
    pub(crate) fn new(
        server_def: &ServerDef,
        devices: &[DeviceAttributes],
        keep_alive_secs: u64,
        context_id: u64,
        context_view_id: u64,
    ) -> Self {
        let mut shared = server_def.clone();
        shared.job_name.clear();
        shared.task_index = 0;
        let server_def = Bytes::from(shared.encode_to_vec());
        let devices: Vec<Bytes> = devices
            .iter()
            .map(|d| {
                let mut buf = BytesMut::with_capacity(d.encoded_len() + 8);
                prost::encoding::message::encode(6, d, &mut buf);
                buf.freeze()
            })
            .collect();
        let mut all = BytesMut::with_capacity(devices.iter().map(Bytes::len).sum());
        devices.iter().for_each(|d| all.put_slice(d));
        let probe = CreateContextRequest {
            keep_alive_secs: i64::try_from(keep_alive_secs).unwrap_or(i64::MAX),
            context_id,
            context_view_id,
            lazy_copy_remote_function_inputs: true,
            ..CreateContextRequest::default()
        };
        Self {
            server_def,
            devices,
            all_devices: all.freeze(),
            tail: Bytes::from(probe.encode_to_vec()),
        }
    }

    /// The encoded request for `task`, which may see `visible` of the devices.
    pub(crate) fn request(&self, task: &TaskId, visible: &Visible) -> Vec<Bytes> {
        let job = task.job.as_bytes();
        let task_index = u64::from(task.task);
        let mut own_len = key_len(2) + encoded_len_varint(job.len() as u64) + job.len();
        if task_index != 0 {
            own_len += key_len(3) + encoded_len_varint(task_index);
        }
        let server_def_len = (self.server_def.len() + own_len) as u64;
        let mut head = BytesMut::with_capacity(16 + own_len);
        encode_key(1, WireType::LengthDelimited, &mut head);
        encode_varint(server_def_len, &mut head);
        let mut own = BytesMut::with_capacity(own_len);
        encode_key(2, WireType::LengthDelimited, &mut own);
        encode_varint(job.len() as u64, &mut own);
        own.put_slice(job);
        if task_index != 0 {
            encode_key(3, WireType::Varint, &mut own);
            encode_varint(task_index, &mut own);
        }
        let mut chunks = vec![head.freeze(), self.server_def.clone(), own.freeze()];
        match visible {
            Visible::All => chunks.push(self.all_devices.clone()),
            Visible::Some(list) => chunks.extend(list.iter().map(|&i| self.devices[i].clone())),
        }
        chunks.push(self.tail.clone());
        chunks
    }
}

/// What one step of creating contexts needs: the cluster's devices and the filters' index.
pub(crate) struct CreateStep<'a> {
    pub(crate) template: &'a CreateTemplate,
    pub(crate) filters: &'a ClusterDeviceFilters,
    pub(crate) index: &'a VisibilityIndex<'a>,
    /// The cluster's device names, shared by every member's record of what it was sent.
    pub(crate) names: &'a Arc<Vec<String>>,
    pub(crate) deadline: &'a Deadline,
    /// Told as each task answers.
    pub(crate) progress: Option<&'a Progress>,
}

impl CreateStep<'_> {
    /// `CreateContext` on each of `tasks` (members of `members`) with the devices its filters
    /// let it see, recorded in the member; returns the tasks that answered and every failure.
    pub(crate) async fn run(
        &self,
        members: &mut BTreeMap<TaskId, Member>,
        tasks: &[TaskId],
    ) -> (Vec<TaskId>, Vec<TaskFailure>) {
        let mut requests = Vec::with_capacity(tasks.len());
        for task in tasks {
            let Some(member) = members.get_mut(task) else {
                continue;
            };
            let visible = Visible::of(self.filters, self.index, task);
            let chunks = self.template.request(task, &visible);
            member.sent = Sent {
                names: self.names.clone(),
                visible,
            };
            requests.push((
                task.clone(),
                member.address.clone(),
                (member.remote.channel.channel.clone(), chunks),
            ));
        }
        let report = |done, total| {
            if let Some(progress) = self.progress {
                progress.report(Stage::CreateContext, done, total);
            }
        };
        let (created, failures) = fan_out_reporting(
            requests,
            |_, _, (channel, chunks)| {
                let deadline = self.deadline.clone();
                async move {
                    let created = deadline.run("CreateContext", send(channel, chunks)).await;
                    if created.is_ok() {
                        tracing::debug!("remote context created");
                    }
                    created
                }
            },
            report,
        )
        .await;
        (
            created.into_iter().map(|(task, _, _)| task).collect(),
            failures,
        )
    }
}

/// Sends an encoded `CreateContext` on `channel`.
pub(crate) async fn send(
    channel: Channel,
    chunks: Vec<Bytes>,
) -> Result<tonic::Response<CreateContextResponse>, tonic::Status> {
    let mut grpc = tonic::client::Grpc::new(channel)
        .max_decoding_message_size(MAX_MESSAGE_SIZE)
        .max_encoding_message_size(MAX_MESSAGE_SIZE);
    grpc.ready()
        .await
        .map_err(|e| tonic::Status::unavailable(format!("channel not ready: {e}")))?;
    let path = PathAndQuery::from_static("/tensorflow.eager.EagerService/CreateContext");
    grpc.unary(tonic::Request::new(chunks), path, PreEncoded::default())
        .await
}

/// A codec that sends already-encoded chunks and decodes the response with prost.
struct PreEncoded<Response>(PhantomData<Response>);

impl<Response> Default for PreEncoded<Response> {
    fn default() -> Self {
        Self(PhantomData)
    }
}

impl<Response: Message + Default + Send + 'static> Codec for PreEncoded<Response> {
    type Encode = Vec<Bytes>;
    type Decode = Response;
    type Encoder = ChunkEncoder;
    type Decoder = <ProstCodec<(), Response> as Codec>::Decoder;

    fn encoder(&mut self) -> Self::Encoder {
        ChunkEncoder
    }

    fn decoder(&mut self) -> Self::Decoder {
        ProstCodec::<(), Response>::raw_decoder(BufferSettings::default())
    }
}

struct ChunkEncoder;

impl Encoder for ChunkEncoder {
    type Item = Vec<Bytes>;
    type Error = tonic::Status;

    fn encode(&mut self, item: Vec<Bytes>, dst: &mut EncodeBuf<'_>) -> Result<(), tonic::Status> {
        let total: usize = item.iter().map(Bytes::len).sum();
        dst.reserve(total);
        for chunk in &item {
            dst.put_slice(chunk);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::requests::Blueprint;
    use cluster_spec::ClusterSpec;
    use device_filter::ClusterDeviceFilters;

    fn device(name: &str) -> DeviceAttributes {
        DeviceAttributes {
            name: name.to_owned(),
            device_type: "CPU".to_owned(),
            memory_limit: 1 << 28,
            incarnation: 42,
            xla_global_id: -1,
            ..DeviceAttributes::default()
        }
    }

    /// The assembled bytes decode to exactly the message the prost path builds.
    #[test]
    fn assembled_request_decodes_as_built() {
        let spec =
            ClusterSpec::from_json(r#"{"worker": ["a:1", "b:2", "c:3"], "ps": ["d:4"]}"#).unwrap();
        let mut filters = ClusterDeviceFilters::default();
        filters
            .set_device_filters("worker", 1, ["/job:ps"])
            .unwrap();
        let blueprint = Blueprint::new(
            &spec,
            Some(("localhost", "localhost:9")),
            "localhost",
            &filters,
        );
        let devices = vec![
            device("/job:ps/replica:0/task:0/device:CPU:0"),
            device("/job:worker/replica:0/task:0/device:CPU:0"),
            device("/job:worker/replica:0/task:1/device:CPU:0"),
        ];
        for (task, visible, view) in [
            (TaskId::new("worker", 0), Visible::All, 0),
            (TaskId::new("worker", 1), Visible::Some(vec![0, 2]), 3),
            (TaskId::new("ps", 0), Visible::Some(vec![]), 0),
        ] {
            let expected = blueprint.create(
                &task,
                7,
                view,
                600,
                visible
                    .positions(devices.len())
                    .iter()
                    .map(|&i| devices[i].clone())
                    .collect(),
            );
            let template =
                CreateTemplate::new(&blueprint.server_def(&task), &devices, 600, 7, view);
            let bytes: Vec<u8> = template.request(&task, &visible).concat();
            assert_eq!(CreateContextRequest::decode(&bytes[..]).unwrap(), expected);
        }
    }
}
