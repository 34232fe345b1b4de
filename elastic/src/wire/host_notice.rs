//! A [`HostNotice`] on the wire: `remaining_ms` zero means no deadline, so a deadline that
//! has come is sent as one millisecond.

use std::time::Duration;

use crate::host_notice::HostNotice;
use crate::proto;

pub(crate) fn notice_to_proto(notice: &HostNotice) -> proto::HostNotice {
    proto::HostNotice {
        cloud: notice.cloud.clone(),
        kind: notice.kind.clone(),
        remaining_ms: notice
            .remaining
            .map_or(0, |r| (r.as_millis() as u64).max(1)),
        detail: notice.detail.clone(),
    }
}

pub(crate) fn notice_from_proto(notice: proto::HostNotice) -> HostNotice {
    HostNotice {
        cloud: notice.cloud,
        kind: notice.kind,
        remaining: (notice.remaining_ms > 0).then(|| Duration::from_millis(notice.remaining_ms)),
        detail: notice.detail,
    }
}
