//! Dimensions read from a job name, as the CI analysis tooling derives them.
//! Used when a run has no cluster-data file, and to fill what cluster-data leaves out.

use crate::model::Dimensions;

/// A `major.minor` release number, ordered numerically (4.9 < 4.10).
fn releases_in(name: &str) -> Vec<(u32, u32)> {
    let bytes = name.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_digit()
            && (i == 0 || !bytes[i - 1].is_ascii_digit() && bytes[i - 1] != b'.')
        {
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

/// The upgrade type between two releases.
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
pub(crate) fn parse_release(text: &str) -> Option<(u32, u32)> {
    releases_in(text).into_iter().next()
}

/// Every dimension the name tells; `master_nodes_updated` stays empty (names never say).
pub fn dimensions_from_job_name(job: &str) -> Dimensions {
    let name = job.to_ascii_lowercase();
    let releases = releases_in(&name);
    let highest = releases.iter().copied().max();
    let lowest = releases.iter().copied().min();
    let mut d = Dimensions {
        release: highest.map(version).unwrap_or_default(),
        ..Default::default()
    };
    (d.upgrade_type, d.from_release) = upgrade(&name, lowest, highest, &d.release);
    d.platform = platform(&name);
    d.network = network(&name, highest).into();
    d.network_stack =
        first_match(&name, &[("-dualstack", "dual"), ("-ipv6", "ipv6")], "ipv4").into();
    d.topology = topology(&name).into();
    d.architecture = first_match(
        &name,
        &[
            ("-arm64", "arm64"),
            ("-arm", "arm64"),
            ("-ppc64le", "ppc64le"),
            ("-s390x", "s390x"),
            ("-multi", "multi"),
            ("-heterogeneous", "multi"),
        ],
        "amd64",
    )
    .into();
    d
}

/// The value of the first needle found in `name`, else `otherwise`.
fn first_match(
    name: &str,
    rules: &[(&str, &'static str)],
    otherwise: &'static str,
) -> &'static str {
    rules
        .iter()
        .find(|(needle, _)| name.contains(needle))
        .map_or(otherwise, |(_, v)| v)
}

/// The upgrade type and the release upgraded from.
fn upgrade(
    name: &str,
    lowest: Option<(u32, u32)>,
    highest: Option<(u32, u32)>,
    release: &str,
) -> (String, String) {
    if !name.contains("-upgrade") {
        return ("none".into(), String::new());
    }
    if name.contains("-upgrade-out-of-change") {
        return ("micro-downgrade".into(), release.to_string());
    }
    match (lowest, highest) {
        (Some(lo), Some(hi)) => (upgrade_type(lo, hi).into(), version(lo)),
        _ => ("micro".into(), String::new()),
    }
}

fn platform(name: &str) -> String {
    let rules = [
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
    ];
    first_match(name, &rules, "").to_string()
}

/// The network plugin named, else OVN from 4.12 on and SDN before.
fn network(name: &str, highest: Option<(u32, u32)>) -> &'static str {
    let default = if highest.is_some_and(|r| r >= (4, 12)) {
        "ovn"
    } else {
        "sdn"
    };
    first_match(
        name,
        &[("-ovn", "ovn"), ("-sdn", "sdn"), ("-cilium", "cilium")],
        default,
    )
}

fn topology(name: &str) -> &'static str {
    if name.contains("-sno-") || name.ends_with("-sno") || name.contains("-single-node") {
        "single"
    } else {
        first_match(
            name,
            &[
                ("-hypershift", "external"),
                ("-hcp", "external"),
                ("-compact", "compact"),
            ],
            "ha",
        )
    }
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
            (
                d.release.as_str(),
                d.from_release.as_str(),
                d.upgrade_type.as_str(),
                d.platform.as_str()
            ),
            ("4.14", "4.14", "micro", "metal")
        );
        assert_eq!(
            (
                d.network.as_str(),
                d.network_stack.as_str(),
                d.topology.as_str()
            ),
            ("ovn", "ipv6", "ha")
        );
        let d = dimensions_from_job_name(
            "periodic-ci-openshift-release-master-nightly-4.14-upgrade-from-stable-4.13-e2e-metal-ipi-sdn-bm-upgrade",
        );
        assert_eq!(
            (
                d.release.as_str(),
                d.from_release.as_str(),
                d.upgrade_type.as_str()
            ),
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
            (
                d.upgrade_type.as_str(),
                d.from_release.as_str(),
                d.network.as_str()
            ),
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
        assert_eq!(
            (d.upgrade_type.as_str(), d.release.as_str()),
            ("major", "5.0")
        );
        let d = dimensions_from_job_name(
            "periodic-ci-openshift-release-master-nightly-4.9-upgrade-from-stable-4.10-x-upgrade",
        );
        assert_eq!(
            (d.release.as_str(), d.from_release.as_str()),
            ("4.10", "4.9")
        );
    }

    #[test]
    fn platform_topology_stack_and_architecture() {
        let d = dimensions_from_job_name(
            "periodic-ci-openshift-release-master-nightly-4.15-e2e-rosa-sts-ovn",
        );
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
        assert_eq!(
            (d.platform.as_str(), d.topology.as_str()),
            ("vsphere", "compact")
        );
    }
}
