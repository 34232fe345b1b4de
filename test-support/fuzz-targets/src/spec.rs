//! cluster-spec's readers: cluster JSON and ClusterDef bytes.

/// `ClusterSpec::from_json` on any UTF-8 input (stated memory factor: 8 bytes per input byte).
pub fn cluster_json(data: &[u8]) {
    if let Ok(s) = std::str::from_utf8(data) {
        let _ = cluster_spec::ClusterSpec::from_json(s);
    }
}

/// `ClusterSpec::decode_cluster_def` on raw bytes (a ClusterDef protobuf; stated factor: 8).
pub fn cluster_def(data: &[u8]) {
    let _ = cluster_spec::ClusterSpec::decode_cluster_def(data);
}
