//! Who this process is: its host name, its replica id in leases and logs, and random ids; and
//! how its background threads are scheduled.

/// The host's name (`HOSTNAME`, else `/etc/hostname`, else `sheriff`).
pub fn hostname() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| "sheriff".into())
}

/// This replica's name in leases and logs: host and process id.
pub fn replica_id() -> String {
    format!("{}-{}", hostname(), std::process::id())
}

/// The process id of a replica of this host, from its id (`<host>-<pid>` or `<host>-<pid>-<n>`);
/// None for a replica of another host.
pub(crate) fn local_replica_pid(replica: &str) -> Option<u32> {
    let rest = replica.strip_prefix(&hostname())?.strip_prefix('-')?;
    rest.split('-').next()?.parse().ok()
}

/// Whether a process with this id runs on this host. Where that cannot be told (no `/proc`),
/// it is taken to run: the caller then waits rather than take over from a live process.
pub(crate) fn is_running(pid: u32) -> bool {
    let proc = std::path::Path::new("/proc");
    !proc.is_dir() || proc.join(pid.to_string()).exists()
}

/// Eight hex digits, random: tells apart workers of one process, or finds a log line.
pub(crate) fn random_suffix() -> String {
    format!("{:08x}", fastrand::u32(..))
}

/// How much nicer than the rest of the process a background thread runs.
const BACKGROUND_NICENESS: i32 = 10;

/// Lowers the calling thread's scheduling priority by 10 (nice, at most to 19;
/// threads it starts inherit it), so that on a busy machine answers to people come before a
/// cycle's number crunching. Linux only; elsewhere, and when the system refuses, nothing changes.
pub(crate) fn lower_thread_priority() {
    #[cfg(target_os = "linux")]
    {
        let thread = Some(rustix::thread::gettid());
        let lowered = rustix::process::getpriority_process(thread).and_then(|now| {
            rustix::process::setpriority_process(thread, (now + BACKGROUND_NICENESS).min(19))
        });
        if let Err(e) = lowered {
            tracing::debug!("cannot lower a background thread's priority: {e}");
        }
    }
}

/// Runs CPU-bound `work` on a thread of its own at a lower priority ([`lower_thread_priority`]),
/// and, on a multi-threaded runtime, off the runtime's workers, which go on serving requests
/// meanwhile. A panic in `work` carries on in the caller.
pub(crate) fn in_background<T: Send>(work: impl FnOnce() -> T + Send) -> T {
    let run = || {
        std::thread::scope(|scope| {
            let worker = scope.spawn(|| {
                lower_thread_priority();
                work()
            });
            worker
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    };
    let flavor = tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor());
    if matches!(flavor, Ok(tokio::runtime::RuntimeFlavor::MultiThread)) {
        tokio::task::block_in_place(run)
    } else {
        run()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn background_work_returns_its_value() {
        assert_eq!(in_background(|| 6 * 7), 42);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn background_work_runs_nicer_than_its_caller() {
        let niceness =
            || rustix::process::getpriority_process(Some(rustix::thread::gettid())).unwrap();
        let mine = niceness();
        assert_eq!(
            in_background(niceness),
            (mine + BACKGROUND_NICENESS).min(19)
        );
        assert_eq!(niceness(), mine, "the caller's own priority is left alone");
    }

    #[test]
    fn a_panic_in_background_work_reaches_the_caller() {
        let caught = std::panic::catch_unwind(|| in_background(|| panic!("background trouble")));
        assert!(caught.is_err());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn on_a_multi_threaded_runtime_other_tasks_run_while_background_work_does() {
        // On the runtime's only worker, background work waits for a task spawned just before
        // it: it would time out if it held the worker the task needs.
        let waiting = tokio::spawn(async {
            let (tx, rx) = std::sync::mpsc::channel::<()>();
            let other = tokio::spawn(async move { tx.send(()).unwrap() });
            let heard = in_background(move || rx.recv_timeout(std::time::Duration::from_secs(5)));
            other.await.unwrap();
            heard
        });
        assert!(waiting.await.unwrap().is_ok(), "the other task never ran");
    }
}
