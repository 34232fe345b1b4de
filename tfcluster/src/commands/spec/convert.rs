//! `tfcluster spec validate` and `tfcluster spec convert`: a cluster in any of the forms
//! TensorFlow writes it (TF_CONFIG JSON, `ClusterDef` binary, `ClusterDef` text format), read,
//! checked and written in another.

use anyhow::{Context as _, anyhow};
use cluster_spec::ClusterSpec;
use prost_reflect::{DescriptorPool, DynamicMessage, MessageDescriptor};

use crate::failure::Failure;
use crate::output::{emit, emit_bytes};

/// A form of a cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Form {
    /// TF_CONFIG's "cluster" JSON.
    Json,
    /// A serialized `tensorflow.ClusterDef` (what `SerializeToString()` gives).
    ClusterDef,
    /// `tensorflow.ClusterDef` in protobuf text format (`job { name: "worker" tasks { key: 0
    /// value: "w0:2222" } }`).
    ClusterDefText,
}

/// Reads `bytes` in `form` (detected when `None`: JSON starts with `{`, text format is UTF-8
/// text, anything else is binary) into a validated spec; errors name `origin`.
pub(crate) fn read(bytes: &[u8], form: Option<Form>, origin: &str) -> Result<ClusterSpec, Failure> {
    let form = form.unwrap_or_else(|| detect(bytes));
    Ok(parse(bytes, form).with_context(|| origin.to_owned())?)
}

fn parse(bytes: &[u8], form: Form) -> anyhow::Result<ClusterSpec> {
    Ok(match form {
        Form::Json => {
            let text = std::str::from_utf8(bytes).context("not UTF-8 JSON")?;
            ClusterSpec::from_json(text)?
        }
        Form::ClusterDef => ClusterSpec::decode_cluster_def(bytes)?,
        Form::ClusterDefText => {
            let text = std::str::from_utf8(bytes).context("not UTF-8 text")?;
            let message = DynamicMessage::parse_text_format(cluster_def()?, text)
                .context("ClusterDef text format")?;
            let wire = prost::Message::encode_to_vec(&message);
            ClusterSpec::decode_cluster_def(&wire)?
        }
    })
}

/// Writes `spec` in `form` to standard output.
pub(crate) fn write(spec: &ClusterSpec, form: Form) -> Result<(), Failure> {
    match form {
        Form::Json => emit(&format!("{}\n", spec.to_json())),
        Form::ClusterDef => emit_bytes(&spec.encode_cluster_def()),
        Form::ClusterDefText => {
            let message =
                DynamicMessage::decode(cluster_def()?, spec.encode_cluster_def().as_slice())
                    .context("ClusterDef")?;
            let options = prost_reflect::text_format::FormatOptions::new().pretty(true);
            emit(&format!(
                "{}\n",
                message.to_text_format_with_options(&options)
            ))
        }
    }
}

fn detect(bytes: &[u8]) -> Form {
    let text = std::str::from_utf8(bytes).ok();
    match text.map(str::trim_start) {
        Some(t) if t.starts_with('{') => Form::Json,
        Some(t) if t.starts_with("job") || t.is_empty() => Form::ClusterDefText,
        _ => Form::ClusterDef,
    }
}

/// `tensorflow.ClusterDef`'s descriptor, from the descriptors cluster-proto was built from.
fn cluster_def() -> anyhow::Result<MessageDescriptor> {
    DescriptorPool::decode(cluster_proto::FILE_DESCRIPTOR_SET)
        .ok()
        .and_then(|pool| pool.get_message_by_name("tensorflow.ClusterDef"))
        .ok_or_else(|| anyhow!("cluster-proto's descriptors lack tensorflow.ClusterDef"))
}
