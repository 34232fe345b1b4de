//! [`NoticeSource`]: which cloud's notices to watch (`--preemption-notices`).

use std::fmt;
use std::str::FromStr;

use crate::Cloud;

/// Which notices to watch: the cloud this host is found to be on (`auto`), one cloud
/// named, or none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum NoticeSource {
    /// The cloud this host's firmware names ([`detect`](crate::detect)); none on a host
    /// that is no cloud VM, which then sends no packet to any metadata address.
    #[default]
    Auto,
    /// This cloud's, whatever the firmware says (a stand-in's, in tests).
    Cloud(Cloud),
    /// None.
    Off,
}

/// A `--preemption-notices` value that is none of `auto`, `gce`, `aws`, `azure`, `off`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("preemption notices {0:?}: expected auto, gce, aws, azure or off")]
pub struct InvalidNoticeSource(pub String);

impl FromStr for NoticeSource {
    type Err = InvalidNoticeSource;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Ok(match text {
            "auto" => Self::Auto,
            "gce" => Self::Cloud(Cloud::Gce),
            "aws" => Self::Cloud(Cloud::Aws),
            "azure" => Self::Cloud(Cloud::Azure),
            "off" => Self::Off,
            _ => return Err(InvalidNoticeSource(text.to_owned())),
        })
    }
}

impl fmt::Display for NoticeSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Auto => f.write_str("auto"),
            Self::Cloud(cloud) => cloud.fmt(f),
            Self::Off => f.write_str("off"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_round_trips_and_others_are_named() {
        for word in ["auto", "gce", "aws", "azure", "off"] {
            assert_eq!(word.parse::<NoticeSource>().unwrap().to_string(), word);
        }
        assert_eq!(
            "ec2".parse::<NoticeSource>().unwrap_err().to_string(),
            "preemption notices \"ec2\": expected auto, gce, aws, azure or off"
        );
    }
}
