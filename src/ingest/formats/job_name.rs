//! Dimensions read from a job name (DESIGN §3.4), as the CI analysis tooling derives them.
//! Used when a run has no cluster-data file, and to fill what cluster-data leaves out.

use crate::model::Dimensions;

/// A `major.minor` release number, ordered numerically (4.9 < 4.10).
fn releases_in(name: &str) -> Vec<(u32, u32)> {
    let bytes = name.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_digit() && (i == 0 || !bytes[i - 1].is_ascii_digit() && bytes[i - 1] != b'.') {
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            if i + 1 < bytes.len() && bytes[i] == b'.' && bytes[i + 1].is_ascii_digit() {
                let major: u32 = name[start..i].parse().unwrap_or(0);
                let minor_start = i + 1;
                i += 1;
                while i < bytes.len() && bytes[i].is_ascii_digit() {
                    i += 1;
                }
                let minor: u32 = name[minor_start..i].parse().unwrap_or(0);
                out.push((major, minor));
                continue;
            }
        }
        i += 1;
    }
    out
}

fn version(v: (u32, u32)) -> String {
    format!("{}.{}", v.0, v.1)
}

/// The upgrade type between two releases (DESIGN §3.4).
pub fn upgrade_type(from: (u32, u32), to: (u32, u32)) -> &'static str {
    if from == to {
        "micro"
    } else if from.0 != to.0 {
        "major"
    } else if to.1.abs_diff(from.1) == 1 {
        "minor"
    } else {
        "multi"
    }
}

/// Parses `"4.14"` or `"4.14.0-0.nightly-…"` into (4, 14).
pub fn parse_release(text: &str) -> Option<(u32, u32)> {
    releases_in(text).into_iter().next()
}

/// Every dimension the name tells; `master_nodes_updated` stays empty (names never say).
pub fn dimensions_from_job_name(job: &str) -> Dimensions {
    let name = job.to_ascii_lowercase();
    let has = |s: &str| name.contains(s);
    let releases = releases_in(&name);
    let highest = releases.iter().copied().max();
    let lowest = releases.iter().copied().min();
    let mut d = Dimensions { release: highest.map(version).unwrap_or_default(), ..Default::default() };
    if has("-upgrade") {
        if has("-upgrade-out-of-change") {
            d.upgrade_type = "micro-downgrade".into();
            d.from_release = d.release.clone();
        } else if let (Some(lo), Some(hi)) = (lowest, highest) {
            d.upgrade_type = upgrade_type(lo, hi).into();
            d.from_release = version(lo);
        } else {
            d.upgrade_type = "micro".into();
        }
    } else {
        d.upgrade_type = "none".into();
    }
    d.platform = [
        ("-aws", "aws"),
        ("-azure", "azure"),
        ("-gcp", "gcp"),
        ("-metal", "metal"),
        ("-vsphere", "vsphere"),
        ("-openstack", "openstack"),
        ("-ovirt", "ovirt"),
        ("-nutanix", "nutanix"),
        ("-libvirt", "libvirt"),
        ("-alibaba", "alibaba"),
        ("-rosa", "aws"),
        ("-aks", "azure"),
    ]
    .iter()
    .find(|(needle, _)| has(needle))
    .map(|(_, p)| (*p).to_string())
    .unwrap_or_default();
    d.network = if has("-ovn") {
        "ovn".into()
    } else if has("-sdn") {
        "sdn".into()
    } else if has("-cilium") {
        "cilium".into()
    } else if highest.is_some_and(|r| r >= (4, 12)) {
        "ovn".into()
    } else {
        "sdn".into()
    };
    d.network_stack = if has("-dualstack") {
        "dual"
    } else if has("-ipv6") {
        "ipv6"
    } else {
        "ipv4"
    }
    .into();
    d.topology = if has("-sno-") || name.ends_with("-sno") || has("-single-node") {
        "single"
    } else if has("-hypershift") || has("-hcp") {
        "external"
    } else if has("-compact") {
        "compact"
    } else {
        "ha"
    }
    .into();
    d.architecture = if has("-arm64") || has("-arm") {
        "arm64"
    } else if has("-ppc64le") {
        "ppc64le"
    } else if has("-s390x") {
        "s390x"
    } else if has("-multi") || has("-heterogeneous") {
        "multi"
    } else {
        "amd64"
    }
    .into();
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_design_examples() {
        let d = dimensions_from_job_name(
            "periodic-ci-openshift-release-master-nightly-4.14-e2e-metal-ipi-upgrade-ovn-ipv6",
        );
        assert_eq!(
            (d.release.as_str(), d.from_release.as_str(), d.upgrade_type.as_str(), d.platform.as_str()),
            ("4.14", "4.14", "micro", "metal")
        );
        assert_eq!(
            (d.network.as_str(), d.network_stack.as_str(), d.topology.as_str()),
            ("ovn", "ipv6", "ha")
        );
        let d = dimensions_from_job_name(
            "periodic-ci-openshift-release-master-nightly-4.14-upgrade-from-stable-4.13-e2e-metal-ipi-sdn-bm-upgrade",
        );
        assert_eq!(
            (d.release.as_str(), d.from_release.as_str(), d.upgrade_type.as_str()),
            ("4.14", "4.13", "minor")
        );
        assert_eq!((d.platform.as_str(), d.network.as_str()), ("metal", "sdn"));
    }

    #[test]
    fn upgrade_kinds_and_defaults() {
        let d = dimensions_from_job_name(
            "periodic-ci-openshift-release-master-ci-4.16-upgrade-from-stable-4.14-e2e-aws-ovn-upgrade",
        );
        assert_eq!(d.upgrade_type, "multi");
        let d = dimensions_from_job_name("periodic-ci-openshift-release-master-ci-4.10-e2e-gcp");
        assert_eq!(
            (d.upgrade_type.as_str(), d.from_release.as_str(), d.network.as_str()),
            ("none", "", "sdn")
        );
        let d = dimensions_from_job_name("periodic-ci-openshift-release-master-ci-4.12-e2e-azure");
        assert_eq!(d.network, "ovn");
        let d = dimensions_from_job_name(
            "periodic-ci-openshift-release-master-ci-4.14-e2e-aws-upgrade-out-of-change",
        );
        assert_eq!(d.upgrade_type, "micro-downgrade");
        let d = dimensions_from_job_name(
            "periodic-ci-openshift-release-master-nightly-5.0-upgrade-from-stable-4.18-e2e-aws-upgrade",
        );
        assert_eq!((d.upgrade_type.as_str(), d.release.as_str()), ("major", "5.0"));
        let d = dimensions_from_job_name(
            "periodic-ci-openshift-release-master-nightly-4.9-upgrade-from-stable-4.10-x-upgrade",
        );
        assert_eq!((d.release.as_str(), d.from_release.as_str()), ("4.10", "4.9"));
    }

    #[test]
    fn platform_topology_stack_and_architecture() {
        let d =
            dimensions_from_job_name("periodic-ci-openshift-release-master-nightly-4.15-e2e-rosa-sts-ovn");
        assert_eq!(d.platform, "aws");
        let d = dimensions_from_job_name(
            "periodic-ci-openshift-release-master-nightly-4.15-e2e-aws-ovn-single-node-serial",
        );
        assert_eq!(d.topology, "single");
        let d = dimensions_from_job_name(
            "periodic-ci-openshift-hypershift-release-4.15-periodics-e2e-aws-ovn-hcp",
        );
        assert_eq!(d.topology, "external");
        let d = dimensions_from_job_name(
            "periodic-ci-openshift-release-master-nightly-4.15-e2e-metal-ipi-ovn-dualstack",
        );
        assert_eq!(d.network_stack, "dual");
        let d = dimensions_from_job_name(
            "periodic-ci-openshift-multiarch-master-nightly-4.15-ocp-e2e-aws-ovn-arm64",
        );
        assert_eq!(d.architecture, "arm64");
        let d = dimensions_from_job_name(
            "periodic-ci-openshift-release-master-nightly-4.15-e2e-aws-ovn-heterogeneous-upgrade",
        );
        assert_eq!(d.architecture, "multi");
        let d = dimensions_from_job_name(
            "periodic-ci-openshift-release-master-nightly-4.15-e2e-vsphere-ovn-compact",
        );
        assert_eq!((d.platform.as_str(), d.topology.as_str()), ("vsphere", "compact"));
    }
}
