//! device-filter's readers: device names and filter JSON.

/// `DeviceName`'s `FromStr` (`/job:worker/replica:0/task:1/device:GPU:0` and its short forms).
pub fn device_name(data: &[u8]) {
    if let Ok(s) = std::str::from_utf8(data) {
        let _ = s.parse::<device_filter::DeviceName>();
    }
}

/// `ClusterDeviceFilters`' JSON form (job → task index → filters).
pub fn filter_json(data: &[u8]) {
    if let Ok(s) = std::str::from_utf8(data) {
        let _ = serde_json::from_str::<device_filter::ClusterDeviceFilters>(s);
    }
}
