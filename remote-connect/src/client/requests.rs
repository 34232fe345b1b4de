//! The requests a client sends, built as TensorFlow's client builds them
//! (`CreateRemoteContexts`, `UpdateRemoteContexts` in `context_distributed_manager.cc`).

use cluster_proto::config_proto::Experimental;
use cluster_proto::eager::UpdateContextRequest;
use cluster_proto::{ClusterDef, ConfigProto, DeviceAttributes, ServerDef};
use cluster_spec::ClusterSpec;
use device_filter::ClusterDeviceFilters;

use crate::TaskId;

/// What every request of one connection shares.
#[derive(Clone, Debug)]
pub(crate) struct Blueprint {
    cluster: ClusterDef,
    config: ConfigProto,
    filters: Option<cluster_proto::ClusterDeviceFilters>,
}

impl Blueprint {
    /// `spec` is the user's cluster; `local` is the job added for this process, if any,
    /// appended after the sorted jobs as TensorFlow appends it.
    pub(crate) fn new(
        spec: &ClusterSpec,
        local: Option<(&str, &str)>,
        local_job: &str,
        filters: &ClusterDeviceFilters,
    ) -> Self {
        let mut cluster = spec.as_cluster_def();
        if let Some((job, address)) = local {
            cluster.job.push(cluster_proto::JobDef {
                name: job.to_owned(),
                tasks: [(0, address.to_owned())].into(),
            });
        }
        // TensorFlow's `connect_to_cluster`: the last job other than the local one, in the
        // spec's order, leads collectives.
        let leader = spec
            .jobs()
            .into_iter()
            .rfind(|job| *job != local_job)
            .map(|job| format!("/job:{job}/replica:0/task:0"))
            .unwrap_or_default();
        let config = ConfigProto {
            allow_soft_placement: true,
            experimental: Some(Experimental {
                collective_group_leader: leader,
                coordination_config: None,
            }),
            ..ConfigProto::default()
        };
        Self {
            cluster,
            config,
            filters: (!filters.is_empty()).then(|| filters.to_proto()),
        }
    }

    /// The cluster as sent: the user's jobs sorted by name, then the added local job.
    pub(crate) fn cluster(&self) -> &ClusterDef {
        &self.cluster
    }

    /// The client's `ServerDef` with the job and task of the receiving task.
    pub(crate) fn server_def(&self, task: &TaskId) -> ServerDef {
        ServerDef {
            cluster: Some(self.cluster.clone()),
            job_name: task.job.clone(),
            task_index: task.task as i32,
            default_session_config: Some(self.config.clone()),
            protocol: "grpc".to_owned(),
            port: 0,
            cluster_device_filters: self.filters.clone(),
            replica: 0,
        }
    }

    /// The request as a prost message: the reference that the requests assembled by
    /// `create_request` are tested against.
    #[cfg(test)]
    pub(crate) fn create(
        &self,
        task: &TaskId,
        context_id: u64,
        context_view_id: u64,
        keep_alive_secs: u64,
        devices: Vec<DeviceAttributes>,
    ) -> cluster_proto::eager::CreateContextRequest {
        cluster_proto::eager::CreateContextRequest {
            server_def: Some(self.server_def(task)),
            r#async: false,
            keep_alive_secs: i64::try_from(keep_alive_secs).unwrap_or(i64::MAX),
            version_def: None,
            cluster_device_attributes: devices,
            context_id,
            context_view_id,
            lazy_copy_remote_function_inputs: true,
            clear_existing_contexts: false,
        }
    }

    /// A full update (`Some(devices)`) or a simplified one that only moves the view.
    pub(crate) fn update(
        &self,
        task: &TaskId,
        context_id: u64,
        context_view_id: u64,
        devices: Option<Vec<DeviceAttributes>>,
    ) -> UpdateContextRequest {
        match devices {
            Some(devices) => UpdateContextRequest {
                server_def: Some(self.server_def(task)),
                cluster_device_attributes: devices,
                context_id,
                context_view_id,
            },
            None => UpdateContextRequest {
                server_def: None,
                cluster_device_attributes: Vec::new(),
                context_id,
                context_view_id,
            },
        }
    }
}
