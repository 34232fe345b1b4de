//! Which cloud this host is a VM of, from local evidence only: the firmware's DMI strings,
//! read as cloud-init's `ds-identify` reads them, so a host that is no cloud VM sends no
//! packet to a metadata address to find out (TensorFlow's `on_gcp()` asks
//! `metadata.google.internal` over the network at every `PreemptionCheckpointHandler`).

use std::path::Path;

use crate::Cloud;

/// Where Linux shows the firmware's DMI strings.
pub const DMI_DIR: &str = "/sys/class/dmi/id";

/// Azure's chassis asset tag, the same on every Azure VM (cloud-init's `ds-identify`).
const AZURE_ASSET_TAG: &str = "7783-7084-3265-9085-8269-3286-77";

/// The cloud whose VM this is, by the DMI strings under `dmi` (normally [`DMI_DIR`]):
/// GCE when `product_name` is `Google Compute Engine` or `sys_vendor` `Google`; EC2 when
/// `sys_vendor` is `Amazon EC2` (Nitro) or `product_uuid`/`product_serial` starts with
/// `ec2` (Xen); Azure by its chassis asset tag. `None` elsewhere, and where the files are
/// missing or unreadable (a container without `/sys`, another OS): no evidence, no cloud.
pub fn detect(dmi: &Path) -> Option<Cloud> {
    let read = |name: &str| {
        std::fs::read_to_string(dmi.join(name))
            .map(|text| text.trim().to_owned())
            .unwrap_or_default()
    };
    let starts_ec2 = |text: String| text.to_ascii_lowercase().starts_with("ec2");
    if read("product_name") == "Google Compute Engine" || read("sys_vendor") == "Google" {
        Some(Cloud::Gce)
    } else if read("sys_vendor") == "Amazon EC2"
        || starts_ec2(read("product_uuid"))
        || starts_ec2(read("product_serial"))
    {
        Some(Cloud::Aws)
    } else if read("chassis_asset_tag") == AZURE_ASSET_TAG {
        Some(Cloud::Azure)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// DMI files: name and contents.
    type Files<'a> = &'a [(&'a str, &'a str)];

    fn dmi(files: Files<'_>) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("a scratch directory");
        for (name, text) in files {
            std::fs::write(dir.path().join(name), format!("{text}\n")).expect("written");
        }
        dir
    }

    #[test]
    fn each_cloud_is_found_by_its_firmware_strings() {
        let cases: [(Files<'_>, Option<Cloud>); 7] = [
            (
                &[
                    ("product_name", "Google Compute Engine"),
                    ("sys_vendor", "Google"),
                ],
                Some(Cloud::Gce),
            ),
            (
                &[("sys_vendor", "Amazon EC2"), ("product_name", "m5.large")],
                Some(Cloud::Aws),
            ),
            (
                &[
                    ("sys_vendor", "Xen"),
                    ("product_uuid", "EC2E1916-9099-7CAF-FD21-012345ABCDEF"),
                ],
                Some(Cloud::Aws),
            ),
            (
                &[
                    ("sys_vendor", "Microsoft Corporation"),
                    ("chassis_asset_tag", AZURE_ASSET_TAG),
                ],
                Some(Cloud::Azure),
            ),
            // Hyper-V on a desk is not Azure: the asset tag is.
            (
                &[
                    ("sys_vendor", "Microsoft Corporation"),
                    ("product_name", "Virtual Machine"),
                ],
                None,
            ),
            (
                &[
                    ("sys_vendor", "QEMU"),
                    ("product_name", "Standard PC (Q35 + ICH9, 2009)"),
                ],
                None,
            ),
            (&[], None),
        ];
        for (files, cloud) in cases {
            assert_eq!(detect(dmi(files).path()), cloud, "{files:?}");
        }
        assert_eq!(detect(Path::new("/nonexistent/dmi")), None);
    }
}
