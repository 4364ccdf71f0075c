//! A local directory in the bucket layout: the bucket root, a `logs/<job>` folder, or one run.

use std::path::{Path, PathBuf};

use super::layout::{is_run_marker, job_and_build};
use super::parse_error::{ParseError, Problem};
use super::{ListedFile, RunListing};

/// Finds the run folders under `dir`, with every file of each (relative to the run folder).
/// Runs whose job name does not pass `keep_job` are not walked.
pub fn discover(dir: &Path, keep_job: &dyn Fn(&str) -> bool) -> std::io::Result<Vec<RunListing>> {
    let dir = dir.canonicalize().map_err(|e| named(dir, &e))?;
    let mut runs = Vec::new();
    walk(&dir, keep_job, &mut runs, 0).map_err(|e| named(&dir, &e))?;
    runs.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(runs)
}

/// Folders nested deeper than this under the source are not walked (a bucket run folder is a
/// few levels down; artifacts a dozen more).
const MAX_DEPTH: usize = 48;

/// An I/O error that names its path.
fn named(path: &Path, e: &std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

/// The bucket root of a run folder: the parent of its nearest `logs` or `pr-logs` ancestor.
fn bucket_root(run_dir: &Path) -> Option<PathBuf> {
    run_dir
        .ancestors()
        .skip(1)
        .find(|a| {
            matches!(
                a.file_name().and_then(|n| n.to_str()),
                Some("logs" | "pr-logs")
            )
        })
        .and_then(|a| a.parent())
        .map(Path::to_path_buf)
}

/// Walks `dir` for run folders. Only the source folder itself failing is an error: a folder
/// below it that cannot be read (or lies deeper than [`MAX_DEPTH`]) is skipped with a warning
/// naming it, and a run whose files cannot all be listed is left for a later ingest rather
/// than stored without some of them.
fn walk(
    dir: &Path,
    keep_job: &dyn Fn(&str) -> bool,
    runs: &mut Vec<RunListing>,
    depth: usize,
) -> std::io::Result<()> {
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
        let (bucket, path) = bucket_and_path(dir);
        let (job, _) = job_and_build(&path);
        if !keep_job(&job) {
            return Ok(());
        }
        let mut files = Vec::new();
        match collect_files(dir, dir, &mut files, depth) {
            Ok(()) => {
                files.sort_by(|a, b| a.name.cmp(&b.name));
                runs.push(RunListing {
                    bucket,
                    path,
                    files,
                    unlisted: None,
                });
            }
            // reported with the run, in the summary and the ingest log
            Err(e) => runs.push(RunListing {
                bucket,
                path,
                files: Vec::new(),
                unlisted: Some(e.to_string()),
            }),
        }
        return Ok(());
    }

    subdirs.sort();
    for sub in subdirs {
        if depth + 1 > MAX_DEPTH {
            tracing::warn!(folder = %sub.display(), "folder skipped: nested more than {MAX_DEPTH} levels deep");
            continue;
        }
        if let Err(e) = walk(&sub, keep_job, runs, depth + 1) {
            // a folder that cannot be read may be a run: reported as one that cannot be listed,
            // in the summary and the ingest log, never silently left out
            tracing::warn!(folder = %sub.display(), "folder cannot be read: {e}");
            let (bucket, path) = bucket_and_path(&sub);
            if keep_job(&job_and_build(&path).0) {
                let unlisted = Some(named(&sub, &e).to_string());
                runs.push(RunListing {
                    bucket,
                    path,
                    files: Vec::new(),
                    unlisted,
                });
            }
        }
    }

    Ok(())
}

/// A folder's bucket (the name of the folder holding `logs/`) and its path inside it; outside
/// any bucket layout, its last two names (`<job>/<build>`).
fn bucket_and_path(dir: &Path) -> (String, String) {
    let root = bucket_root(dir);
    let bucket = root
        .as_ref()
        .and_then(|r| r.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let path = match root.as_ref().and_then(|r| dir.strip_prefix(r).ok()) {
        Some(rel) => rel.to_string_lossy().replace('\\', "/"),
        None => {
            let mut parts = dir
                .iter()
                .rev()
                .take(2)
                .map(|p| p.to_string_lossy().into_owned())
                .collect::<Vec<_>>();
            parts.reverse();
            parts.join("/")
        }
    };
    (bucket, path)
}

fn collect_files(
    run_dir: &Path,
    dir: &Path,
    out: &mut Vec<ListedFile>,
    depth: usize,
) -> std::io::Result<()> {
    if depth > MAX_DEPTH {
        return Err(std::io::Error::other(format!(
            "{}: nested more than {MAX_DEPTH} levels deep",
            dir.display()
        )));
    }
    for entry in std::fs::read_dir(dir).map_err(|e| named(dir, &e))? {
        let entry = entry.map_err(|e| named(dir, &e))?;
        let kind = entry.file_type().map_err(|e| named(&entry.path(), &e))?;
        let path = entry.path();
        if kind.is_dir() {
            collect_files(run_dir, &path, out, depth + 1)?;
        } else if kind.is_file() {
            let name = path
                .strip_prefix(run_dir)
                .unwrap_or(&path)
                .to_string_lossy()
                .replace('\\', "/");
            out.push(ListedFile {
                name,
                size: entry.metadata()?.len(),
                key: path.to_string_lossy().into_owned(),
                local: Some(path.clone()),
            });
        }
    }
    Ok(())
}

/// Reads a file, refusing one over `max_bytes`.
pub fn read(file: &ListedFile, max_bytes: u64) -> Result<Vec<u8>, ParseError> {
    if file.size > max_bytes {
        return Err(super::too_large(file, max_bytes));
    }
    let path = file
        .local
        .clone()
        .unwrap_or_else(|| PathBuf::from(&file.key));
    std::fs::read(path).map_err(|e| ParseError::new(&file.name, Problem::Unreadable(e)))
}

#[cfg(test)]
mod non_utf8_tests {
    use super::*;

    #[test]
    fn a_file_whose_name_is_not_utf8_is_still_read() {
        use std::os::unix::ffi::OsStrExt as _;
        let dir = tempfile::tempdir().unwrap();
        let name = std::ffi::OsStr::from_bytes(b"backend-disruption_\xff\xfe-233813.json");
        std::fs::write(dir.path().join(name), b"{\"BackendDisruptions\": {}}").unwrap();
        let mut files = Vec::new();
        collect_files(dir.path(), dir.path(), &mut files, 0).unwrap();
        assert_eq!(files.len(), 1);
        assert!(
            files[0].name.starts_with("backend-disruption_"),
            "{}",
            files[0].name
        );
        assert_eq!(
            read(&files[0], 1 << 20).unwrap(),
            b"{\"BackendDisruptions\": {}}"
        );
    }
}
