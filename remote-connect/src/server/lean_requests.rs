//! `CreateContext` and `UpdateContext` requests decoded lean, and what decoding one holds.
//!
//! TensorFlow's protocol sends every task the whole cluster: the `ServerDef`'s `ClusterDef`
//! and every device the task may see. Decoded into the generic prost messages that is an
//! allocation per address and three per device, and for a 1,024-task cluster it dominated a
//! connect. Here the `ClusterDef` stays bytes until cluster-spec's direct decoder validates
//! it, and of each device only the name is kept.

use bytes::Bytes;
use cluster_spec::{ClusterSpec, DECODE_MEMORY_FACTOR};

use super::contiguous::{DecodedSize, count_fields};
use super::identity::Claim;

/// What decoding one device record of a device list holds on a server until its context is
/// installed, beyond the record's bytes: the record, the name's place in the list handed to
/// the context, and the set that removes repeats (each allocated with room to grow).
const DECODED_PER_DEVICE: usize = 256;

/// `tensorflow.eager.CreateContextRequest`, reading only what a server uses.
#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct LeanCreateContextRequest {
    #[prost(message, optional, tag = "1")]
    pub(super) server_def: Option<LeanServerDef>,
    #[prost(int64, tag = "3")]
    pub(super) keep_alive_secs: i64,
    #[prost(message, repeated, tag = "6")]
    pub(super) cluster_device_attributes: Vec<DeviceNameOnly>,
    #[prost(fixed64, tag = "7")]
    pub(super) context_id: u64,
    #[prost(fixed64, tag = "8")]
    pub(super) context_view_id: u64,
    #[prost(bool, tag = "10")]
    pub(super) clear_existing_contexts: bool,
}

/// `tensorflow.eager.UpdateContextRequest`, reading only what a server uses.
#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct LeanUpdateContextRequest {
    #[prost(message, optional, tag = "1")]
    pub(super) server_def: Option<LeanServerDef>,
    #[prost(message, repeated, tag = "2")]
    pub(super) cluster_device_attributes: Vec<DeviceNameOnly>,
    #[prost(fixed64, tag = "3")]
    pub(super) context_id: u64,
    #[prost(fixed64, tag = "4")]
    pub(super) context_view_id: u64,
}

/// `tensorflow.ServerDef` with the `ClusterDef` left encoded.
#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct LeanServerDef {
    #[prost(bytes = "bytes", tag = "1")]
    cluster: Bytes,
    #[prost(string, tag = "2")]
    job_name: String,
    #[prost(int32, tag = "3")]
    task_index: i32,
    #[prost(int32, tag = "8")]
    replica: i32,
}

/// `tensorflow.DeviceAttributes`, name only, as bytes (no allocation per device).
#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct DeviceNameOnly {
    #[prost(bytes = "bytes", tag = "1")]
    pub(super) name: Bytes,
}

impl From<LeanServerDef> for Claim {
    fn from(def: LeanServerDef) -> Self {
        let cluster =
            (!def.cluster.is_empty()).then(|| ClusterSpec::decode_cluster_def(&def.cluster));
        Self {
            cluster,
            job_name: def.job_name,
            task_index: def.task_index,
            replica: def.replica,
        }
    }
}

/// What a request with a `ServerDef` (field `server_def`) and a device list (field `devices`)
/// holds once decoded: a record per device, and cluster-spec's decode of the `ClusterDef`.
fn cluster_request_size(bytes: &[u8], server_def: u32, devices: u32, at_most: usize) -> usize {
    let [(_, def_bytes), (count, _)] = count_fields(bytes, [server_def, devices], |c| {
        c[1].0.saturating_mul(DECODED_PER_DEVICE) > at_most
    });
    count
        .saturating_mul(DECODED_PER_DEVICE)
        .saturating_add(def_bytes.saturating_mul(DECODE_MEMORY_FACTOR))
}

impl DecodedSize for LeanCreateContextRequest {
    fn decoded_size(bytes: &[u8], at_most: usize) -> usize {
        cluster_request_size(bytes, 1, 6, at_most)
    }
}

impl DecodedSize for LeanUpdateContextRequest {
    fn decoded_size(bytes: &[u8], at_most: usize) -> usize {
        cluster_request_size(bytes, 1, 2, at_most)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    #[test]
    fn a_device_list_costs_per_device_and_a_cluster_def_per_byte() {
        let empty_devices = LeanCreateContextRequest {
            cluster_device_attributes: vec![DeviceNameOnly::default(); 1000],
            ..Default::default()
        }
        .encode_to_vec();
        assert_eq!(empty_devices.len(), 2000, "2 bytes on the wire each");
        assert_eq!(
            LeanCreateContextRequest::decoded_size(&empty_devices, usize::MAX),
            1000 * DECODED_PER_DEVICE
        );
        // Counting stops once the cost is past what could be given.
        assert!(
            LeanCreateContextRequest::decoded_size(&empty_devices, 10 * DECODED_PER_DEVICE)
                <= 11 * DECODED_PER_DEVICE
        );
        let update = LeanUpdateContextRequest {
            server_def: Some(LeanServerDef {
                cluster: Bytes::from(vec![0; 100]),
                ..Default::default()
            }),
            cluster_device_attributes: vec![DeviceNameOnly::default(); 3],
            context_id: 1,
            context_view_id: 1,
        }
        .encode_to_vec();
        let server_def_len = 2 + 100;
        assert_eq!(
            LeanUpdateContextRequest::decoded_size(&update, usize::MAX),
            3 * DECODED_PER_DEVICE + server_def_len * DECODE_MEMORY_FACTOR
        );
    }
}
