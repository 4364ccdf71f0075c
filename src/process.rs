//! Who this process is: its host name, its replica id in leases and logs, and random ids.

/// The host's name (`HOSTNAME`, else `/etc/hostname`, else `sheriff`).
pub fn hostname() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok().map(|s| s.trim().to_string()))
        .unwrap_or_else(|| "sheriff".into())
}

/// This replica's name in leases and logs: host and process id.
pub fn replica_id() -> String {
    format!("{}-{}", hostname(), std::process::id())
}

/// Eight hex digits, random: tells apart workers of one process, or finds a log line.
pub fn random_suffix() -> String {
    format!("{:08x}", fastrand::u32(..))
}
