//! A local directory in the bucket layout: the bucket root, a `logs/<job>` folder, or one run.

use std::path::{Path, PathBuf};

use super::layout::{is_run_marker, job_and_build};
use super::{ListedFile, RunListing};

/// Finds the run folders under `dir`, with every file of each (relative to the run folder).
/// Runs whose job name does not pass `keep_job` are not walked.
pub fn discover(dir: &Path, keep_job: &dyn Fn(&str) -> bool) -> std::io::Result<Vec<RunListing>> {
    let dir = dir.canonicalize()?;
    let mut runs = Vec::new();
    walk(&dir, keep_job, &mut runs)?;
    runs.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(runs)
}

/// The bucket root of a run folder: the parent of its nearest `logs` or `pr-logs` ancestor.
fn bucket_root(run_dir: &Path) -> Option<PathBuf> {
    run_dir
        .ancestors()
        .skip(1)
        .find(|a| matches!(a.file_name().and_then(|n| n.to_str()), Some("logs" | "pr-logs")))
        .and_then(|a| a.parent())
        .map(Path::to_path_buf)
}

fn walk(dir: &Path, keep_job: &dyn Fn(&str) -> bool, runs: &mut Vec<RunListing>) -> std::io::Result<()> {
    let mut subdirs = Vec::new();
    let mut is_run = false;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        if kind.is_dir() {
            subdirs.push(entry.path());
        } else if kind.is_file() && entry.file_name().to_str().is_some_and(is_run_marker) {
            is_run = true;
        }
    }
    if is_run {
        let root = bucket_root(dir);
        let bucket = root
            .as_ref()
            .and_then(|r| r.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let path = match root.as_ref().and_then(|r| dir.strip_prefix(r).ok()) {
            Some(rel) => rel.to_string_lossy().replace('\\', "/"),
            None => {
                // A run folder outside any bucket layout: call it <job>/<build>.
                let mut parts =
                    dir.iter().rev().take(2).map(|p| p.to_string_lossy().into_owned()).collect::<Vec<_>>();
                parts.reverse();
                parts.join("/")
            }
        };
        let (job, _) = job_and_build(&path);
        if !keep_job(&job) {
            return Ok(());
        }
        let mut files = Vec::new();
        collect_files(dir, dir, &mut files)?;
        files.sort_by(|a, b| a.name.cmp(&b.name));
        runs.push(RunListing { bucket, path, files });
        return Ok(());
    }
    subdirs.sort();
    for sub in subdirs {
        walk(&sub, keep_job, runs)?;
    }
    Ok(())
}

fn collect_files(run_dir: &Path, dir: &Path, out: &mut Vec<ListedFile>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let path = entry.path();
        if kind.is_dir() {
            collect_files(run_dir, &path, out)?;
        } else if kind.is_file() {
            let name = path.strip_prefix(run_dir).unwrap_or(&path).to_string_lossy().replace('\\', "/");
            out.push(ListedFile {
                name,
                size: entry.metadata()?.len(),
                key: path.to_string_lossy().into_owned(),
            });
        }
    }
    Ok(())
}

/// Reads a file, refusing one over `max_bytes`.
pub fn read(file: &ListedFile, max_bytes: u64) -> Result<Vec<u8>, String> {
    if file.size > max_bytes {
        return Err(format!("{} bytes, larger than the {max_bytes}-byte limit; skipped", file.size));
    }
    std::fs::read(&file.key).map_err(|e| format!("cannot read: {e}"))
}
