//! `sheriff backtest`: what sheriff would have said. Replays evaluation cycles at their
//! schedule's times over the stored runs — each cycle seeing only the runs that had finished by
//! then — into a store of its own, never the live incidents, silences or outbox, and tells each
//! incident's story: when it opened, its onset, how its scope moved, when it resolved, and the
//! notifications it would have sent.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::application::cycle::replay::Replay;
use crate::application::cycle::{CycleError, CycleOptions, Unrecorded, Window, run_cycle_on};
use crate::config::cron::Schedule;
use crate::config::{DatabaseSettings, DatabaseUrl, DatabaseUrlError, Settings};
use crate::domain::incidents::plan::{EffectKind, Policy};
use crate::model::{DAY, HOUR, Onset, Scope};
use crate::store::outbox::EntryState;
use crate::store::{Store, StoreError};

/// The result of the backtest's functions.
pub type Result<T, E = BacktestError> = std::result::Result<T, E>;

/// Why a backtest stopped: its text is what `sheriff backtest` prints. A variant that wraps the
/// replay's error says that error's text as its own and hands on its sources; one with words of
/// its own (the store's, so that [`crate::store::is_storage_error`] finds it) hands the error it
/// wraps on as its source: the chain (`{:#}`) tells the words, then why.
#[derive(Debug, thiserror::Error)]
pub enum BacktestError {
    /// The span to replay is empty or backwards.
    #[error("--from must be before --to")]
    Span,
    /// The runs to replay could not be read into memory.
    #[error(transparent)]
    Replay(CycleError),
    /// No temporary folder could be made for the backtest's own store.
    #[error("a folder for the backtest's own store")]
    ScratchFolder(#[source] std::io::Error),
    /// The backtest's own store's address is not one the store takes.
    #[error(transparent)]
    ScratchUrl(#[from] DatabaseUrlError),
    /// The store failed: opening the backtest's own, or reading its incidents and outbox. The
    /// store's error is this one's source ([`crate::store::is_storage_error`] finds it).
    #[error("the backtest's own store")]
    Store(#[from] StoreError),
    /// A replayed cycle failed.
    #[error("the cycle at {at}")]
    Cycle {
        /// The time the cycle was replayed at.
        at: DateTime<Utc>,
        /// Why it failed.
        #[source]
        source: CycleError,
    },
}

/// When the replayed cycles run.
#[derive(Debug, Clone)]
pub enum Cadence {
    /// Every so many seconds from the start.
    Every(i64),
    /// At the ticks of a cron expression.
    Cron(Box<Schedule>),
}

impl Cadence {
    /// The cycle times in `[from, to)`.
    pub fn times(&self, from: DateTime<Utc>, to: DateTime<Utc>) -> Vec<DateTime<Utc>> {
        let mut out = Vec::new();
        match self {
            Cadence::Every(step) => {
                let mut t = from;
                while t < to {
                    out.push(t);
                    t += chrono::Duration::seconds((*step).max(60));
                }
            }
            Cadence::Cron(schedule) => {
                let mut t = from - chrono::Duration::seconds(1);
                while let Some(next) = schedule.next_after(t) {
                    if next >= to {
                        break;
                    }
                    out.push(next);
                    t = next;
                }
            }
        }
        out
    }
}

/// One change of an incident's state.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct StateChange {
    pub at: DateTime<Utc>,
    pub state: String,
    pub detail: String,
}

/// What an incident would have told people.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct Notifications {
    pub slack_posts: usize,
    pub slack_replies: usize,
    pub slack_updates: usize,
    pub jira_creates: usize,
    pub jira_comments: usize,
    pub jira_transitions: usize,
}

/// One incident of a backtest.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Story {
    pub fingerprint: String,
    pub family: String,
    pub backends: Vec<String>,
    pub release: String,
    pub scope: Scope,
    pub opened_at: DateTime<Utc>,
    /// None while it is open at the end.
    pub resolved_at: Option<DateTime<Utc>>,
    pub onset: Option<Onset>,
    pub states: Vec<StateChange>,
    pub notifications: Notifications,
}

/// The totals of a backtest.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Summary {
    pub incidents: usize,
    pub open_at_end: usize,
    pub resolved: usize,
    /// Incidents opened per week of the replayed span.
    pub alerts_per_week: f64,
    /// From each incident's onset to its opening, the median, in hours.
    pub median_hours_onset_to_opened: Option<f64>,
    pub notifications: Notifications,
}

/// What `sheriff backtest` prints.
#[derive(Debug, Clone, Serialize)]
pub struct Backtest {
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub cycles: usize,
    pub seconds: f64,
    /// Runs and samples replayed.
    pub runs: usize,
    pub samples: usize,
    pub incidents: Vec<Story>,
    pub summary: Summary,
}

/// Replays the cycles of `cadence` in `[from, to)` over `store`'s runs with `settings`.
pub async fn backtest(
    store: Arc<Store>,
    settings: &Settings,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    cadence: &Cadence,
) -> Result<Backtest> {
    backtest_observed(store, settings, from, to, cadence, &mut |_| {}).await
}

/// [`backtest`], handing each replayed cycle's report to `observe` as it finishes (the quality
/// scorecard judges every cycle's regressions, not only the incidents they leave).
pub async fn backtest_observed(
    store: Arc<Store>,
    settings: &Settings,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    cadence: &Cadence,
    observe: &mut (dyn FnMut(&crate::application::cycle::CycleReport) + Send),
) -> Result<Backtest> {
    if from >= to {
        return Err(BacktestError::Span);
    }

    let started = Instant::now();
    let es = &settings.evaluate;
    let reach = i64::from(es.window_days + es.baseline_days)
        .max(i64::from(es.reference_lookback_days))
        * DAY;

    let replay = Replay::load(store, from.timestamp() - reach, to.timestamp())
        .await
        .map_err(BacktestError::Replay)?;

    let replay = Arc::new(replay);
    let scratch_dir = tempfile::tempdir().map_err(BacktestError::ScratchFolder)?;
    let url = format!(
        "sqlite://{}",
        scratch_dir.path().join("backtest.db").display()
    );

    let scratch = Store::open(&DatabaseSettings {
        url: url.parse::<DatabaseUrl>()?,
        ..Default::default()
    })
    .await?;

    // Everything a cycle would send is counted, whether or not this configuration can send it.
    let mut policy = Policy::from_settings(settings, crate::words::line);
    policy.jira = true;
    // the scratch store is the backtest's own: a cycle it cannot record fails the backtest
    let unrecorded = Unrecorded::default();
    let times = cadence.times(from, to);
    for (k, at) in times.iter().enumerate() {
        if let Some(next) = times.get(k + 1) {
            let (window, baseline) = Window::of_cycle(*next, es);
            let recent = Window::recent_starts(*next, es);
            replay.prefetch(window.secs(), baseline.secs(), recent, next.timestamp());
        }
        let report = run_cycle_on(
            &*replay,
            &scratch,
            &unrecorded,
            settings,
            &policy,
            CycleOptions {
                at: *at,
                dry_run: false,
            },
        )
        .await
        .map_err(|source| BacktestError::Cycle { at: *at, source })?;
        observe(&report);
    }

    let incidents = stories(&scratch).await?;
    scratch.close().await;
    let summary = summarize(&incidents, from, to);
    Ok(Backtest {
        from,
        to,
        cycles: times.len(),
        seconds: started.elapsed().as_secs_f64(),
        runs: replay.runs(),
        samples: replay.samples(),
        incidents,
        summary,
    })
}

/// Each incident of the backtest's store, with its history and its outbox.
async fn stories(scratch: &Store) -> Result<Vec<Story>> {
    let mut by_incident: BTreeMap<i64, Notifications> = BTreeMap::new();
    for state in EntryState::ALL {
        for e in scratch.outbox().entries(state, i64::MAX).await? {
            let Some(id) = e.incident_id else { continue };
            let n = by_incident.entry(id).or_default();
            match e.effect_kind() {
                Some(EffectKind::SlackPost) => n.slack_posts += 1,
                Some(EffectKind::SlackReply) => n.slack_replies += 1,
                Some(EffectKind::SlackUpdate) => n.slack_updates += 1,
                Some(EffectKind::JiraCreate) => n.jira_creates += 1,
                Some(EffectKind::JiraComment) => n.jira_comments += 1,
                Some(EffectKind::JiraResolve | EffectKind::JiraReopen) => n.jira_transitions += 1,
                _ => {}
            }
        }
    }

    let time = |t: i64| DateTime::from_timestamp(t, 0).unwrap_or_default();
    let mut out = Vec::new();
    for i in scratch.incidents().all().await? {
        let states = scratch
            .incidents()
            .events(i.id)
            .await?
            .into_iter()
            .map(|e| StateChange {
                at: time(e.at),
                state: e.kind,
                detail: e.detail,
            })
            .collect();
        out.push(Story {
            fingerprint: i.fingerprint.clone(),
            family: i.snapshot.family.clone(),
            backends: i.snapshot.backends.clone(),
            release: i.snapshot.release.clone(),
            scope: i.snapshot.scope.clone(),
            opened_at: time(i.opened_at),
            resolved_at: if i.state.is_open() {
                None
            } else {
                i.resolved_at.map(time)
            },
            onset: i.episodes.first().map(|e| e.onset.clone()),
            states,
            notifications: by_incident.remove(&i.id).unwrap_or_default(),
        });
    }

    Ok(out)
}

fn summarize(incidents: &[Story], from: DateTime<Utc>, to: DateTime<Utc>) -> Summary {
    let weeks = ((to - from).num_seconds() as f64 / (7 * DAY) as f64).max(1e-9);
    let mut lags: Vec<f64> = incidents
        .iter()
        .filter_map(|s| {
            Some((s.opened_at - s.onset.as_ref()?.at).num_seconds() as f64 / HOUR as f64)
        })
        .collect();
    lags.sort_by(f64::total_cmp);
    let median = (!lags.is_empty()).then(|| {
        let n = lags.len();
        if n % 2 == 1 {
            lags[n / 2]
        } else {
            (lags[n / 2 - 1] + lags[n / 2]) / 2.0
        }
    });
    let mut notifications = Notifications::default();
    for s in incidents {
        let n = &s.notifications;
        notifications.slack_posts += n.slack_posts;
        notifications.slack_replies += n.slack_replies;
        notifications.slack_updates += n.slack_updates;
        notifications.jira_creates += n.jira_creates;
        notifications.jira_comments += n.jira_comments;
        notifications.jira_transitions += n.jira_transitions;
    }
    Summary {
        incidents: incidents.len(),
        open_at_end: incidents.iter().filter(|s| s.resolved_at.is_none()).count(),
        resolved: incidents.iter().filter(|s| s.resolved_at.is_some()).count(),
        alerts_per_week: incidents.len() as f64 / weeks,
        median_hours_onset_to_opened: median,
        notifications,
    }
}

/// How two backtests differ: incidents only in one, and the same incident at other times.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct Difference {
    pub only_in_a: Vec<String>,
    pub only_in_b: Vec<String>,
    /// The same problem (family, release, overlapping scope) opened or resolved at other times.
    pub different_timing: Vec<Timing>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct Timing {
    pub incident: String,
    pub opened: (DateTime<Utc>, DateTime<Utc>),
    pub resolved: (Option<DateTime<Utc>>, Option<DateTime<Utc>>),
}

fn label(s: &Story) -> String {
    format!(
        "{} {} ({}) [{}]",
        s.family,
        s.release,
        s.scope.describe(),
        s.fingerprint
    )
}

/// Matches the incidents of two backtests by family, release and overlapping scope.
pub(crate) fn compare(a: &Backtest, b: &Backtest) -> Difference {
    let same = |x: &Story, y: &Story| {
        x.family == y.family && x.release == y.release && x.scope.same_problem(&y.scope)
    };
    let mut d = Difference::default();
    let mut matched_b = vec![false; b.incidents.len()];
    for x in &a.incidents {
        match b
            .incidents
            .iter()
            .enumerate()
            .find(|(k, y)| !matched_b[*k] && same(x, y))
        {
            Some((k, y)) => {
                matched_b[k] = true;
                if x.opened_at != y.opened_at || x.resolved_at != y.resolved_at {
                    d.different_timing.push(Timing {
                        incident: label(x),
                        opened: (x.opened_at, y.opened_at),
                        resolved: (x.resolved_at, y.resolved_at),
                    });
                }
            }
            None => d.only_in_a.push(label(x)),
        }
    }
    d.only_in_b = b
        .incidents
        .iter()
        .zip(matched_b)
        .filter(|(_, m)| !m)
        .map(|(y, _)| label(y))
        .collect();
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cadences_list_their_ticks() {
        let from = crate::synth::day(2026, 11, 1);
        let to = from + chrono::Duration::days(1);
        assert_eq!(Cadence::Every(6 * 3_600).times(from, to).len(), 4);
        let cron = Schedule::parse("0 */6 * * *", "UTC").unwrap();
        let ticks = Cadence::Cron(Box::new(cron)).times(from, to);
        assert_eq!(ticks.len(), 4);
        assert_eq!(ticks[0], from, "a tick at the start counts");
    }

    #[test]
    fn a_failed_cycle_says_when_before_why() {
        let at = crate::synth::day(2026, 11, 1);
        let e = BacktestError::Cycle {
            at,
            source: CycleError::WindowsPanicked,
        };
        assert_eq!(
            crate::support::error::with_sources(&e),
            "the cycle at 2026-11-01 00:00:00 UTC: computing the windows panicked"
        );
        assert_eq!(
            format!("{:#}", anyhow::Error::from(e)),
            "the cycle at 2026-11-01 00:00:00 UTC: computing the windows panicked"
        );
    }

    #[test]
    fn a_refused_span_and_a_missing_folder_say_so() {
        assert_eq!(
            BacktestError::Span.to_string(),
            "--from must be before --to"
        );
        let e = BacktestError::ScratchFolder(std::io::Error::other("no space left"));
        assert_eq!(
            format!("{:#}", anyhow::Error::from(e)),
            "a folder for the backtest's own store: no space left"
        );
    }
}
