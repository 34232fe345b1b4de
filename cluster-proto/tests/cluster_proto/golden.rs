//! Bytes TensorFlow 2.21 wrote, decoded with our messages.

use cluster_proto::{ClusterDef, JobDef, ServerDef};
use prost::Message;
use tf_oracle::unhex;

#[test]
fn tensorflow_cluster_def_decodes() {
    // TF 2.21: ClusterSpec({"w": ["a:1"], "ps": {2: "b:2"}}).as_cluster_def().SerializeToString()
    let tf = unhex("0a0d0a027073120708021203623a320a0c0a0177120708001203613a31");
    let def = ClusterDef::decode(&tf[..]).unwrap();
    let expected = ClusterDef {
        job: vec![
            JobDef {
                name: "ps".into(),
                tasks: [(2, "b:2".into())].into(),
            },
            JobDef {
                name: "w".into(),
                tasks: [(0, "a:1".into())].into(),
            },
        ],
    };
    assert_eq!(def, expected);
    // Ours omits the default key 0 (08 00), which proto3 allows; it decodes the same.
    let ours = def.encode_to_vec();
    assert_eq!(
        ours,
        unhex("0a0d0a027073120708021203623a320a0a0a017712051203613a31")
    );
    assert_eq!(ClusterDef::decode(&ours[..]).unwrap(), expected);
}

#[test]
fn maps_encode_deterministically() {
    let mut def = ServerDef {
        job_name: "worker".into(),
        task_index: 3,
        ..Default::default()
    };
    let cluster = def.cluster.get_or_insert_with(Default::default);
    cluster.job.push(JobDef {
        name: "worker".into(),
        tasks: (0..50).rev().map(|i| (i, format!("h{i}:1"))).collect(),
    });
    let first = def.encode_to_vec();
    assert_eq!(
        ServerDef::decode(&first[..]).unwrap().encode_to_vec(),
        first
    );
}

#[test]
fn queue_items_decode_as_tensorflow_encodes_them() {
    use cluster_proto::eager::{EnqueueRequest, QueueItem, queue_item};
    // A QueueItem{operation: Operation{id: 7, name: "Add"}} as TF would send it.
    let item = unhex("120708071203416464");
    let decoded = QueueItem::decode(&item[..]).unwrap();
    let Some(queue_item::Item::Operation(op)) = &decoded.item else {
        panic!("not an operation: {decoded:?}");
    };
    assert_eq!((op.id, op.name.as_str()), (7, "Add"));
    let request = EnqueueRequest {
        context_id: 0xdead_beef_0000_0001,
        queue: vec![decoded.clone()],
    };
    let bytes = request.encode_to_vec();
    // context_id is fixed64 (tag 0x09), queue is field 3 (tag 0x1a).
    assert_eq!(bytes[0], 0x09);
    assert_eq!(bytes[9], 0x1a);
    assert_eq!(&bytes[11..], &item[..]);
    assert_eq!(EnqueueRequest::decode(&bytes[..]).unwrap().queue, [decoded]);
}

#[cfg(feature = "grpc")]
#[test]
fn service_paths_are_tensorflows() {
    use cluster_proto::eager::eager_service_server;
    use cluster_proto::worker_service_server;
    assert_eq!(
        worker_service_server::SERVICE_NAME,
        "tensorflow.WorkerService"
    );
    assert_eq!(
        eager_service_server::SERVICE_NAME,
        "tensorflow.eager.EagerService"
    );
}
