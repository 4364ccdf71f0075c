//! The bucket layout: which folders are runs, which files sheriff reads.

/// The files sheriff reads, recognised by name as the CI's own tools do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    ProwJob,
    Started,
    Finished,
    Disruption,
    ClusterData,
    /// `e2e-events_*`: every interval, instants included.
    Events,
    /// `e2e-timelines_everything_*`.
    TimelineEverything,
    /// Other `e2e-timelines_*` views (spyglass, operators, …).
    Timeline,
}

/// What a file name says about the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Classified {
    Read(FileKind),
    /// Named like a file sheriff reads but not JSON (`….json.gz`, `….txt`): reported, not read.
    Odd(&'static str),
    Ignore,
}

pub fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Classifies a file by its path relative to the run folder.
pub fn classify(rel_path: &str) -> Classified {
    let name = basename(rel_path);
    let top_level = !rel_path.contains('/');
    match name {
        "prowjob.json" if top_level => return Classified::Read(FileKind::ProwJob),
        "started.json" if top_level => return Classified::Read(FileKind::Started),
        "finished.json" if top_level => return Classified::Read(FileKind::Finished),
        _ => {}
    }
    let kind = if name.starts_with("backend-disruption") {
        FileKind::Disruption
    } else if name.starts_with("cluster-data_") {
        FileKind::ClusterData
    } else if name.starts_with("e2e-events") {
        FileKind::Events
    } else if name.starts_with("e2e-timelines_everything") {
        FileKind::TimelineEverything
    } else if name.starts_with("e2e-timelines") {
        FileKind::Timeline
    } else {
        return Classified::Ignore;
    };
    if name.ends_with(".json") {
        Classified::Read(kind)
    } else if name.ends_with(".html") || name.ends_with(".xml") || name.ends_with(".log") {
        // The CI renders HTML charts next to the JSON; they are not data.
        Classified::Ignore
    } else {
        Classified::Odd("named like a sheriff input but not a .json file; not read")
    }
}

/// A file name that marks the folder holding it as a run folder.
pub fn is_run_marker(name: &str) -> bool {
    matches!(name, "prowjob.json" | "started.json" | "finished.json")
}

/// `(job name, build id)` from a run folder path such as `logs/<job>/<build>` or
/// `pr-logs/pull/<org>_<repo>/<pr>/<job>/<build>`.
pub fn job_and_build(run_path: &str) -> (String, String) {
    let mut parts = run_path.trim_end_matches('/').rsplit('/');
    let build = parts.next().unwrap_or_default().to_string();
    let job = parts.next().unwrap_or_default().to_string();
    (job, build)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_recognised_by_name() {
        let junit = "artifacts/e2e-metal-ipi-upgrade/baremetalds-e2e-test/artifacts/junit";
        assert_eq!(
            classify(&format!("{junit}/backend-disruption_20230501-100000.json")),
            Classified::Read(FileKind::Disruption)
        );
        assert_eq!(
            classify(&format!("{junit}/cluster-data_20230501-100000.json")),
            Classified::Read(FileKind::ClusterData)
        );
        assert_eq!(
            classify(&format!("{junit}/e2e-events_20230501-100000.json")),
            Classified::Read(FileKind::Events)
        );
        assert_eq!(
            classify(&format!(
                "{junit}/e2e-timelines_everything_20230501-100000.json"
            )),
            Classified::Read(FileKind::TimelineEverything)
        );
        assert_eq!(
            classify(&format!(
                "{junit}/e2e-timelines_spyglass_20230501-100000.json"
            )),
            Classified::Read(FileKind::Timeline)
        );
        assert_eq!(
            classify(&format!(
                "{junit}/e2e-timelines_spyglass_20230501-100000.html"
            )),
            Classified::Ignore
        );
        assert!(matches!(
            classify(&format!(
                "{junit}/backend-disruption_20230501-100000.json.gz"
            )),
            Classified::Odd(_)
        ));
        assert_eq!(
            classify("prowjob.json"),
            Classified::Read(FileKind::ProwJob)
        );
        assert_eq!(classify("artifacts/x/finished.json"), Classified::Ignore);
        assert_eq!(classify("build-log.txt"), Classified::Ignore);
    }

    #[test]
    fn a_run_folder_names_its_job_and_build() {
        assert_eq!(
            job_and_build("pr-logs/pull/openshift_origin/123/pull-ci-x/7"),
            ("pull-ci-x".into(), "7".into())
        );
    }
}
