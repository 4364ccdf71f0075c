//! `probe_days`, `broken_probes`: how each job's CI network probes behaved, so that a probe is
//! judged against its own normal on that job (see [`crate::model::TroubleRules`]).
//!
//! Every write of a run counts its liveness samples into its job's day (runs, and runs with
//! the probe down beyond the allowance); forgetting a run takes them out again. After either,
//! the job's broken probes are worked out again from its recent days, and when they changed
//! every stored run of the job is classified again, in the same transaction, moving each run
//! whose class changed into or out of the histograms. So a run's class depends on its job's
//! stored runs only, never on the order they arrived in.

use std::collections::BTreeSet;

use super::cells::ChangedCells;
use super::runs::Runs;
use super::{Conn, Result, row_by_position, sql};
use crate::model::{DAY, HOUR, ProbeHealth, TroubleRules};

/// Runs of a job reclassified per read.
const JOB_BATCH: i64 = 1_000;

/// A stored run as classifying needs it; read from `job_runs`, then given its samples.
#[derive(Debug, Clone, sqlx::FromRow)]
pub(super) struct StoredRun {
    pub id: i64,
    #[sqlx(rename = "job_name")]
    pub job: String,
    pub variant_id: i64,
    #[sqlx(rename = "started_at")]
    pub started: i64,
    /// Its class now: why it was CI-troubled, or None.
    #[sqlx(rename = "ci_trouble")]
    pub class: Option<String>,
    #[sqlx(skip)]
    pub samples: Vec<StoredSample>,
}

/// One sample of a stored run, with the run's id.
#[derive(sqlx::FromRow)]
struct SampleOfRun {
    run_id: i64,
    backend_id: i64,
    #[sqlx(rename = "name")]
    backend: String,
    seconds: i64,
}

/// One sample of a stored run, with the run's job and start (Unix seconds).
#[derive(Clone, sqlx::FromRow)]
struct JobSample {
    job_name: String,
    started_at: i64,
    backend_id: i64,
    #[sqlx(rename = "name")]
    backend: String,
    seconds: i64,
}

/// One probe's record over a job's recent days.
struct ProbeDaysTotal {
    backend_id: i64,
    runs: i64,
    /// The runs with the probe down beyond the allowance.
    down: i64,
    /// The days with at least one such run.
    down_days: i64,
}
row_by_position!(ProbeDaysTotal {
    backend_id,
    runs,
    down,
    down_days
});

/// A job whose first stored run started in a window: that run's start and the runs since.
struct FirstRuns {
    job: String,
    /// The first run's start (Unix seconds).
    first: i64,
    runs: i64,
}
row_by_position!(FirstRuns { job, first, runs });

/// The dimensions of a job's latest run that tell a new job's scope.
#[derive(sqlx::FromRow)]
struct LatestDimensions {
    release: String,
    platform: String,
    architecture: String,
    network: String,
    upgrade_type: String,
}

/// One sample of a broken probe in a run, with the run's job and dimensions.
#[derive(sqlx::FromRow)]
struct BrokenProbeSample {
    /// The run's id.
    id: i64,
    job_name: String,
    release: String,
    platform: String,
    architecture: String,
    #[sqlx(rename = "name")]
    backend: String,
    seconds: i64,
}

/// One sample of a stored run.
#[derive(Debug, Clone)]
pub(super) struct StoredSample {
    pub backend_id: i64,
    pub backend: String,
    pub seconds: i64,
}

/// One sample of a run as it is being counted: its backend's id and name, and its seconds.
#[derive(Debug, Clone, Copy)]
pub(super) struct NamedSample<'a> {
    pub backend_id: i64,
    pub backend: &'a str,
    pub seconds: i64,
}

/// A job's counted reports of one probe on one day (a push-down backfill's): the runs that had
/// the probe, and how many of them had it down.
#[derive(Debug, Clone, Copy)]
pub(super) struct ProbeCount {
    pub backend_id: i64,
    pub day: i64,
    pub runs: i64,
    pub down: i64,
}

/// The liveness samples of a run: `(backend id, seconds)`.
pub(super) fn probes_of<'a>(
    rules: &TroubleRules,
    samples: impl IntoIterator<Item = NamedSample<'a>>,
) -> Vec<(i64, i64)> {
    samples
        .into_iter()
        .filter(|s| rules.is_liveness(s.backend))
        .map(|s| (s.backend_id, s.seconds))
        .collect()
}

/// Counts a run's probes into its job's day (`add`), or takes them out.
pub(super) async fn count_probes(
    c: &mut Conn<'_>,
    job: &str,
    day: i64,
    probes: &[(i64, i64)],
    rules: &TroubleRules,
    add: bool,
) -> Result<()> {
    if probes.is_empty() {
        return Ok(());
    }

    let sign: i64 = if add { 1 } else { -1 };
    let mut probes = probes.to_vec();
    probes.sort_unstable();
    c.execute(
        sql("INSERT INTO probe_days (job_name, backend_id, day, runs, down)")
            .values(&probes, |(backend_id, seconds)| {
                let down = i64::from(rules.is_down(*seconds));
                vec![
                    job.into(),
                    (*backend_id).into(),
                    day.into(),
                    sign.into(),
                    (sign * down).into(),
                ]
            })
            .push(
                " ON CONFLICT (job_name, backend_id, day) DO UPDATE SET \
                 runs = probe_days.runs + excluded.runs, down = probe_days.down + excluded.down",
            ),
    )
    .await?;

    if !add {
        c.execute(
            sql("DELETE FROM probe_days WHERE job_name = $1 AND day = $2 AND runs <= 0")
                .bind(job)
                .bind(day),
        )
        .await?;
    }

    Ok(())
}

/// Adds counted probe reports of a job to its days (a push-down backfill, which reads counts
/// rather than runs).
pub(super) async fn add_probe_counts(
    c: &mut Conn<'_>,
    job: &str,
    counts: &[ProbeCount],
) -> Result<()> {
    for chunk in counts.chunks(500) {
        c.execute(
            sql("INSERT INTO probe_days (job_name, backend_id, day, runs, down)")
                .values(chunk, |n| {
                    vec![job.into(), n.backend_id.into(), n.day.into(), n.runs.into(), n.down.into()]
                })
                .push(
                    " ON CONFLICT (job_name, backend_id, day) DO UPDATE SET \
                     runs = probe_days.runs + excluded.runs, down = probe_days.down + excluded.down",
                ),
        )
        .await?;
    }
    Ok(())
}

/// Each probe's record over the job's recent days: `(backend id, health)`.
async fn health_of_job(
    c: &mut Conn<'_>,
    job: &str,
    rules: &TroubleRules,
) -> Result<Vec<(i64, ProbeHealth)>> {
    let rows: Vec<ProbeDaysTotal> = c
        .fetch_all(
            sql(
                "SELECT backend_id, CAST(SUM(runs) AS BIGINT), CAST(SUM(down) AS BIGINT), \
                 CAST(SUM(CASE WHEN down > 0 THEN 1 ELSE 0 END) AS BIGINT) \
                 FROM probe_days WHERE job_name = $1 \
                 AND day > (SELECT MAX(day) FROM probe_days WHERE job_name = $1) - $2 \
                 GROUP BY backend_id ORDER BY backend_id",
            )
            .bind(job)
            .bind(rules.broken_horizon_days),
        )
        .await?;
    let count = |n: i64| u64::try_from(n).unwrap_or(0);
    Ok(rows
        .into_iter()
        .map(|r| {
            (
                r.backend_id,
                ProbeHealth {
                    runs: count(r.runs),
                    down: count(r.down),
                    down_days: count(r.down_days),
                },
            )
        })
        .collect())
}

/// The probes broken for a job, as its runs were last classified.
async fn stored_broken(c: &mut Conn<'_>, job: &str) -> Result<BTreeSet<i64>> {
    let rows: Vec<(i64,)> = c
        .fetch_all(sql("SELECT backend_id FROM broken_probes WHERE job_name = $1").bind(job))
        .await?;
    Ok(rows.into_iter().map(|(b,)| b).collect())
}

/// Works out a job's broken probes again after its counts changed; when they differ from
/// those its runs were classified with, records them and classifies its stored runs again.
/// The broken probes now.
pub(super) async fn refresh_job(
    c: &mut Conn<'_>,
    job: &str,
    rules: &TroubleRules,
    changed: &mut ChangedCells,
) -> Result<BTreeSet<i64>> {
    let now: BTreeSet<i64> = health_of_job(c, job, rules)
        .await?
        .into_iter()
        .filter(|(_, h)| rules.is_broken(*h))
        .map(|(b, _)| b)
        .collect();

    if now == stored_broken(c, job).await? {
        return Ok(now);
    }

    c.execute(sql("DELETE FROM broken_probes WHERE job_name = $1").bind(job))
        .await?;

    if !now.is_empty() {
        let rows: Vec<i64> = now.iter().copied().collect();
        c.execute(
            sql("INSERT INTO broken_probes (job_name, backend_id)")
                .values(&rows, |b| vec![job.into(), (*b).into()]),
        )
        .await?;
    }

    let mut after = i64::MIN;
    loop {
        let runs = job_runs_after(c, job, after).await?;
        let Some(last) = runs.last().map(|r| r.id) else {
            break;
        };
        reclassify_on(c, &runs, |r| classify(rules, r, &now), changed).await?;
        after = last;
    }

    if !now.is_empty() {
        tracing::info!(
            job,
            probes = now.len(),
            "CI network probes broken for a job: not used to judge its runs"
        );
    }

    Ok(now)
}

/// A stored run's class under `rules`, its job's `broken` probes set aside.
pub(super) fn classify(
    rules: &TroubleRules,
    run: &StoredRun,
    broken: &BTreeSet<i64>,
) -> Option<String> {
    let ignored: BTreeSet<&str> = run
        .samples
        .iter()
        .filter(|s| broken.contains(&s.backend_id))
        .map(|s| s.backend.as_str())
        .collect();
    rules.classify_with(
        run.samples.iter().map(|s| (s.backend.as_str(), s.seconds)),
        |b| ignored.contains(b),
    )
}

/// The next runs of a job after id `after`, with their samples.
async fn job_runs_after(c: &mut Conn<'_>, job: &str, after: i64) -> Result<Vec<StoredRun>> {
    let runs: Vec<StoredRun> = c
        .fetch_all(
            sql(
                "SELECT id, job_name, variant_id, started_at, ci_trouble FROM job_runs \
                 WHERE job_name = $1 AND id > $2 ORDER BY id LIMIT $3",
            )
            .bind(job)
            .bind(after)
            .bind(JOB_BATCH),
        )
        .await?;
    with_samples(c, runs).await
}

/// Runs (read without their samples) with their samples read in one statement.
pub(super) async fn with_samples(c: &mut Conn<'_>, runs: Vec<StoredRun>) -> Result<Vec<StoredRun>> {
    let mut out = runs;
    if out.is_empty() {
        return Ok(out);
    }
    let samples: Vec<SampleOfRun> = c
        .fetch_all(
            sql(
                "SELECT s.run_id, s.backend_id, b.name, s.seconds FROM samples s \
                 JOIN backends b ON b.id = s.backend_id WHERE s.run_id IN (",
            )
            .list(out.iter().map(|r| r.id))
            .push(") ORDER BY s.run_id, s.backend_id"),
        )
        .await?;
    let mut k = 0;
    for SampleOfRun {
        run_id,
        backend_id,
        backend,
        seconds,
    } in samples
    {
        while k < out.len() && out[k].id < run_id {
            k += 1;
        }
        if k < out.len() && out[k].id == run_id {
            out[k].samples.push(StoredSample {
                backend_id,
                backend,
                seconds,
            });
        }
    }
    Ok(out)
}

/// Classifies runs again on an open transaction: each whose class changed is updated and moved
/// into the histograms (now clean) or out of them (now troubled). The runs that changed class.
pub(super) async fn reclassify_on(
    c: &mut Conn<'_>,
    runs: &[StoredRun],
    class_of: impl Fn(&StoredRun) -> Option<String>,
    changed: &mut ChangedCells,
) -> Result<u64> {
    let mut moved_runs = 0;
    for run in runs {
        let new = class_of(run);
        if new == run.class {
            continue;
        }
        // Only if nobody reclassified it meanwhile (another replica opening the same
        // database with the same new rules): the histograms move once, not twice.
        let moved = c
            .execute(
                sql("UPDATE job_runs SET ci_trouble = $1 WHERE id = $2 \
                     AND (ci_trouble = $3 OR (ci_trouble IS NULL AND $4 = 1))")
                .bind(&new)
                .bind(run.id)
                .bind(&run.class)
                .bind(run.class.is_none()),
            )
            .await?;
        if moved == 0 {
            continue;
        }
        if run.class.is_none() != new.is_none() {
            // into the histograms when it became clean, out of them when it became troubled
            let cells: Vec<(i64, i64)> = run
                .samples
                .iter()
                .map(|s| (s.backend_id, s.seconds))
                .collect();
            let day = run.started.div_euclid(DAY);
            super::cells::change_samples(c, day, run.variant_id, &cells, new.is_none(), changed)
                .await?;
        }
        moved_runs += 1;
    }

    Ok(moved_runs)
}

/// Counts every stored run's probes again from scratch and works out every job's broken
/// probes (when the rules changed): the broken probes by job.
pub(super) async fn rebuild(
    c: &mut Conn<'_>,
    rules: &TroubleRules,
) -> Result<std::collections::HashMap<String, BTreeSet<i64>>> {
    if c.is_postgres() {
        // replicas opening together, and runs written meanwhile, wait for one rebuild to commit
        c.execute(sql(
            "LOCK TABLE probe_days, broken_probes IN EXCLUSIVE MODE",
        ))
        .await?;
    }

    c.execute(sql("DELETE FROM broken_probes")).await?;
    c.execute(sql("DELETE FROM probe_days")).await?;
    let backends: Vec<(i64, String)> = c.fetch_all(sql("SELECT id, name FROM backends")).await?;
    let probes: Vec<i64> = backends
        .into_iter()
        .filter(|(_, n)| rules.is_liveness(n))
        .map(|(id, _)| id)
        .collect();

    let mut broken: std::collections::HashMap<String, BTreeSet<i64>> =
        std::collections::HashMap::new();

    if probes.is_empty() {
        return Ok(broken);
    }

    c.execute(
        sql(
            "INSERT INTO probe_days (job_name, backend_id, day, runs, down) \
             SELECT r.job_name, s.backend_id, r.started_at / $1, COUNT(*), \
             SUM(CASE WHEN s.seconds > $2 THEN 1 ELSE 0 END) \
             FROM samples s JOIN job_runs r ON r.id = s.run_id WHERE s.backend_id IN (",
        )
        .bind(DAY)
        .bind(rules.liveness_allowance_seconds)
        .list(probes)
        .push(") GROUP BY r.job_name, s.backend_id, r.started_at / $1"),
    )
    .await?;
    let jobs: Vec<(String,)> = c
        .fetch_all(sql("SELECT DISTINCT job_name FROM probe_days"))
        .await?;
    for (job,) in jobs {
        let now: BTreeSet<i64> = health_of_job(c, &job, rules)
            .await?
            .into_iter()
            .filter(|(_, h)| rules.is_broken(*h))
            .map(|(b, _)| b)
            .collect();
        if now.is_empty() {
            continue;
        }
        let rows: Vec<i64> = now.iter().copied().collect();
        c.execute(
            sql("INSERT INTO broken_probes (job_name, backend_id)")
                .values(&rows, |b| vec![job.as_str().into(), (*b).into()]),
        )
        .await?;
        broken.insert(job, now);
    }
    Ok(broken)
}

/// Takes a stored run's probes out of its job's days (before it is replaced or removed).
pub(super) async fn forget_probes(
    c: &mut Conn<'_>,
    run_id: i64,
    rules: &TroubleRules,
) -> Result<Option<String>> {
    let rows: Vec<JobSample> = c
        .fetch_all(
            sql(
                "SELECT r.job_name, r.started_at, s.backend_id, b.name, s.seconds FROM samples s \
                 JOIN job_runs r ON r.id = s.run_id JOIN backends b ON b.id = s.backend_id \
                 WHERE s.run_id = $1 ORDER BY s.backend_id",
            )
            .bind(run_id),
        )
        .await?;
    let Some(JobSample {
        job_name: job,
        started_at: started,
        ..
    }) = rows.first().cloned()
    else {
        return Ok(None);
    };
    let probes = probes_of(
        rules,
        rows.iter().map(|r| NamedSample {
            backend_id: r.backend_id,
            backend: r.backend.as_str(),
            seconds: r.seconds,
        }),
    );
    count_probes(c, &job, started.div_euclid(DAY), &probes, rules, false).await?;
    Ok((!probes.is_empty()).then_some(job))
}

/// The jobs whose first stored run started in `[$1, $2)`, with that run's start and their runs
/// there: every job name, one index probe each (a skip scan of `(job_name, started_at)`), its
/// first run and its runs in the window read from the same index. A few probes per job name kept
/// (a few hundred; retention drops the runs of jobs that stopped), where grouping the window's
/// runs reads thousands of rows and a scan of every stored run would grow with the history.
const NEW_JOBS: &str = "WITH RECURSIVE jobs (job_name) AS (SELECT MIN(job_name) FROM job_runs \
    UNION ALL SELECT (SELECT MIN(n.job_name) FROM job_runs n \
    WHERE n.job_name > jobs.job_name) FROM jobs WHERE jobs.job_name IS NOT NULL) \
    SELECT job_name, first, (SELECT COUNT(*) FROM job_runs e WHERE e.job_name = w.job_name \
    AND e.started_at >= $1 AND e.started_at < $2) AS runs \
    FROM (SELECT j.job_name, (SELECT MIN(e.started_at) FROM job_runs e \
    WHERE e.job_name = j.job_name) AS first FROM jobs j WHERE j.job_name IS NOT NULL) w \
    WHERE first >= $1 AND first < $2 ORDER BY job_name";

impl Runs<'_> {
    /// Jobs whose first stored run started in `window` and that are new, not sparse: at least 3
    /// runs, and at the rate they have run since (its 95% lower bound) the store's history
    /// before their first run would have held one of their runs with 99% probability. With their
    /// runs there and the dimensions of their latest run (release, platform, architecture,
    /// network, upgrade).
    pub async fn new_jobs_in(self, window: (i64, i64)) -> Result<Vec<crate::model::NewJob>> {
        use crate::model::Dimension;
        let (history_from,): (Option<i64>,) = self
            .store
            .fetch_one(sql("SELECT MIN(started_at) FROM job_runs"))
            .await?;

        let history_from = history_from.unwrap_or(window.0);
        let rows: Vec<FirstRuns> = self
            .store
            .fetch_all(sql(NEW_JOBS).bind(window.0).bind(window.1))
            .await?;

        let mut out = Vec::with_capacity(rows.len());
        for FirstRuns { job, first, runs } in rows {
            let since = (window.1 - first).max(HOUR) as f64;
            let before = (first - history_from).max(0) as f64;
            // fewer than 3 runs cannot tell a new job from a sparse one whose first run fell here
            let rate = crate::domain::evaluate::stats::poisson_lower_95(runs.max(0) as u64) / since;
            if runs < 3 || rate * before < 4.6 {
                continue;
            }
            let dims: Option<LatestDimensions> = self
                .store
                .fetch_optional(
                    sql("SELECT release, platform, architecture, network, upgrade_type FROM job_runs \
                         WHERE job_name = $1 AND started_at < $2 ORDER BY started_at DESC LIMIT 1")
                    .bind(&job)
                    .bind(window.1),
                )
                .await?;
            let mut scope = crate::model::Scope::new();
            if let Some(LatestDimensions {
                release,
                platform,
                architecture,
                network,
                upgrade_type: upgrade,
            }) = dims
            {
                let pairs = [
                    (Dimension::Release, release),
                    (Dimension::Platform, platform),
                    (Dimension::Architecture, architecture),
                    (Dimension::Network, network),
                    (Dimension::UpgradeType, upgrade),
                ];
                for (d, v) in pairs.into_iter().filter(|(_, v)| !v.is_empty()) {
                    scope.set(d, [v]);
                }
            }
            let first_run = chrono::DateTime::from_timestamp(first, 0)
                .map(|t| t.to_rfc3339())
                .unwrap_or_default();
            out.push(crate::model::NewJob {
                job,
                scope,
                runs: runs.max(0) as u64,
                first_run,
            });
        }

        Ok(out)
    }

    /// The probes broken for jobs with runs in `window` (`[from, to)` Unix seconds), one
    /// finding per probe family, release, platform and architecture.
    pub async fn broken_probes_in(
        self,
        window: (i64, i64),
    ) -> Result<Vec<crate::model::BrokenProbe>> {
        let rules = self.store.trouble().rules();
        let rows: Vec<BrokenProbeSample> = self
            .store
            .fetch_all(
                // Led by the few broken probes' jobs (the `IN`), each read by its runs in the
                // window: not every run of the window probed for a broken probe.
                sql("SELECT r.id, r.job_name, r.release, r.platform, r.architecture, b.name, s.seconds \
                     FROM job_runs r JOIN broken_probes p ON p.job_name = r.job_name \
                     JOIN samples s ON s.run_id = r.id AND s.backend_id = p.backend_id \
                     JOIN backends b ON b.id = p.backend_id \
                     WHERE r.job_name IN (SELECT job_name FROM broken_probes) \
                     AND r.started_at >= $1 AND r.started_at < $2")
                .bind(window.0)
                .bind(window.1),
            )
            .await?;

        type Key = (String, String, String, String);
        // per finding: its jobs, and each run's worst probe of the family (new and reused
        // connections are one probe)
        type Runs = std::collections::HashMap<i64, i64>;
        let mut by: std::collections::BTreeMap<Key, (BTreeSet<String>, Runs)> = Default::default();
        for BrokenProbeSample {
            id: run,
            job_name: job,
            release,
            platform,
            architecture,
            backend,
            seconds,
        } in rows
        {
            let family = crate::model::backend_family(&backend).to_string();
            let e = by
                .entry((family, release, platform, architecture))
                .or_default();
            e.0.insert(job);
            let worst = e.1.entry(run).or_insert(seconds);
            *worst = (*worst).max(seconds);
        }

        Ok(by
            .into_iter()
            .map(|((probe, release, platform, architecture), (jobs, runs))| {
                let seconds: Vec<i64> = runs.into_values().collect();
                let h = crate::model::Histogram::from_values(seconds.iter().copied());
                let mut scope = crate::model::Scope::new();
                scope.set(crate::model::Dimension::Release, [release]);
                scope.set(crate::model::Dimension::Platform, [platform]);
                scope.set(crate::model::Dimension::Architecture, [architecture]);
                crate::model::BrokenProbe {
                    probe,
                    scope,
                    jobs: jobs.into_iter().collect(),
                    runs: h.count(),
                    down: seconds.iter().filter(|s| rules.is_down(**s)).count() as u64,
                    median_seconds: h.percentile(0.5).unwrap_or(0.0),
                }
            })
            .collect())
    }
}
