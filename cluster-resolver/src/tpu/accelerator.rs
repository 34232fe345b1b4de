//! TPU cores per host from a node's `acceleratorType` (`v3-8`, `v4-32`, `v5litepod-16`, …).
//!
//! TensorFlow counts the `TPU` devices each host reports once connected, and returns that
//! per-host count (`{"TPU": 8}` on a v3-8). The same number follows from the accelerator
//! type and the number of hosts (network endpoints), without a connection:
//!
//! | generation | the number in the name counts | TPU devices TensorFlow sees |
//! |---|---|---|
//! | `v2`, `v3` | TensorCores | one per TensorCore |
//! | `v4`, `v5p` | TensorCores (2 per chip) | one per chip (megacore), so half the number |
//! | `v5litepod`, `v5e`, `v6e` | chips (1 TensorCore each) | one per chip |

/// TPU devices per host of an accelerator type spread over `hosts` hosts, or why there is no
/// such number.
pub(super) fn devices_per_host(accelerator_type: &str, hosts: usize) -> Result<u32, String> {
    let (generation, count) = accelerator_type
        .rsplit_once('-')
        .ok_or_else(|| "expected <generation>-<count>, e.g. v3-8".to_owned())?;
    let count: u32 = count.parse().map_err(|_| {
        format!(
            "the count {} is not a number",
            cluster_spec::__private::quote::quote(count, 0)
        )
    })?;
    let devices = match generation {
        "v2" | "v3" | "v5litepod" | "v5e" | "v6e" => count,
        "v4" | "v5p" => count / 2,
        other => {
            return Err(format!(
                "unknown TPU generation {}",
                cluster_spec::__private::quote::quote(other, 0)
            ));
        }
    };
    let hosts = u32::try_from(hosts).map_err(|_| "too many hosts".to_owned())?;
    if hosts == 0 {
        return Err("the node lists no network endpoints (hosts)".to_owned());
    }
    if devices == 0 || devices % hosts != 0 {
        // TensorFlow's check of the same condition: "TPU cores on each device is not the same".
        return Err(format!(
            "{devices} TPU devices do not spread evenly over {hosts} hosts"
        ));
    }
    Ok(devices / hosts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_host_counts_as_tensorflow_sees_them() {
        assert_eq!(devices_per_host("v2-8", 1), Ok(8));
        assert_eq!(devices_per_host("v3-8", 1), Ok(8));
        assert_eq!(devices_per_host("v3-32", 4), Ok(8));
        assert_eq!(devices_per_host("v4-8", 1), Ok(4));
        assert_eq!(devices_per_host("v4-32", 4), Ok(4));
        assert_eq!(devices_per_host("v5p-8", 1), Ok(4));
        assert_eq!(devices_per_host("v5litepod-8", 1), Ok(8));
        assert_eq!(devices_per_host("v5litepod-16", 4), Ok(4));
        assert_eq!(devices_per_host("v6e-8", 1), Ok(8));
    }

    #[test]
    fn unusable_types_say_why() {
        assert!(
            devices_per_host("v3", 1)
                .unwrap_err()
                .contains("<generation>-<count>")
        );
        assert!(devices_per_host("v3-x", 1).unwrap_err().contains("\"x\""));
        assert!(devices_per_host("v9-8", 1).unwrap_err().contains("\"v9\""));
        assert!(
            devices_per_host("v3-8", 0)
                .unwrap_err()
                .contains("no network endpoints")
        );
        assert!(devices_per_host("v3-8", 3).unwrap_err().contains("evenly"));
        assert!(devices_per_host("v4-1", 1).is_err());
    }
}
