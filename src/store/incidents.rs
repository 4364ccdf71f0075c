//! Incidents, their history, silences; and applying a cycle's plan with its outbox entries in
//! one transaction.

use anyhow::{Context, Result, bail};

use super::{Store, with_pool};
use crate::incidents::plan::{self, Action, Delivered, Effect, Plan, Step};
use crate::incidents::silence::{Silence, Target};
use crate::incidents::{Event, Incident, Snapshot, State};

macro_rules! incident_columns {
    () => {
        "id, fingerprint, state, snapshot, revision, opened_at, updated_at, last_seen_at, \
         resolved_at, acked_by, acked_at, slack_channel, slack_ts, jira_key, jira_commented_at"
    };
}

#[derive(sqlx::FromRow)]
struct IncidentRow {
    id: i64,
    fingerprint: String,
    state: String,
    snapshot: String,
    revision: i64,
    opened_at: i64,
    updated_at: i64,
    last_seen_at: i64,
    resolved_at: Option<i64>,
    acked_by: Option<String>,
    acked_at: Option<i64>,
    slack_channel: Option<String>,
    slack_ts: Option<String>,
    jira_key: Option<String>,
    jira_commented_at: Option<i64>,
}

impl IncidentRow {
    fn into_incident(self) -> Result<Incident> {
        let snapshot: Snapshot = serde_json::from_str(&self.snapshot)
            .with_context(|| format!("incident {} has an unreadable snapshot", self.id))?;
        Ok(Incident {
            id: self.id,
            fingerprint: self.fingerprint,
            state: State::parse(&self.state)
                .with_context(|| format!("incident {}: unknown state", self.id))?,
            snapshot,
            revision: self.revision,
            opened_at: self.opened_at,
            updated_at: self.updated_at,
            last_seen_at: self.last_seen_at,
            resolved_at: self.resolved_at,
            acked_by: self.acked_by,
            acked_at: self.acked_at,
            slack_channel: self.slack_channel,
            slack_ts: self.slack_ts,
            jira_key: self.jira_key,
            jira_commented_at: self.jira_commented_at,
        })
    }
}

#[derive(sqlx::FromRow)]
struct SilenceRow {
    id: i64,
    fingerprint: Option<String>,
    backend: Option<String>,
    dimensions: String,
    reason: String,
    created_by: String,
    created_at: i64,
    expires_at: i64,
    removed_at: Option<i64>,
}

impl SilenceRow {
    /// The silence, or None (logged) when its dimensions cannot be read: an unreadable matcher
    /// holds nothing, rather than everything of its backend. Keys written in a short form
    /// (`upgrade`) by earlier versions read as their dimension.
    fn into_silence(self) -> Option<Silence> {
        let r = self;
        let raw: std::collections::BTreeMap<String, String> = match serde_json::from_str(&r.dimensions) {
            Ok(raw) => raw,
            Err(e) => {
                tracing::warn!(silence = r.id, "silence has unreadable dimensions, ignored: {e}");
                return None;
            }
        };
        let mut dimensions = crate::incidents::silence::Patterns::new();
        for (k, v) in raw {
            let Some(d) = crate::model::Dimension::parse(&k) else {
                tracing::warn!(silence = r.id, key = %k, "silence names an unknown dimension, ignored");
                return None;
            };
            dimensions.insert(d, v);
        }
        Some(Silence {
            id: r.id,
            fingerprint: r.fingerprint,
            backend: r.backend,
            dimensions,
            reason: r.reason,
            created_by: r.created_by,
            created_at: r.created_at,
            expires_at: r.expires_at,
            removed_at: r.removed_at,
        })
    }
}

macro_rules! silence_columns {
    () => {
        "id, fingerprint, backend, dimensions, reason, created_by, created_at, expires_at, removed_at"
    };
}

/// Every incident, through any executor.
macro_rules! load_incidents {
    ($executor:expr) => {{
        let rows: Vec<IncidentRow> =
            sqlx::query_as(concat!("SELECT ", incident_columns!(), " FROM incidents ORDER BY id"))
                .fetch_all($executor)
                .await?;
        rows.into_iter().map(IncidentRow::into_incident).collect::<Result<Vec<_>>>()?
    }};
}

/// Silences not removed and not expired at `$now`.
macro_rules! load_silences {
    ($executor:expr, $now:expr) => {{
        let rows: Vec<SilenceRow> = sqlx::query_as(concat!(
            "SELECT ",
            silence_columns!(),
            " FROM silences WHERE removed_at IS NULL AND expires_at > $1 ORDER BY id"
        ))
        .bind($now)
        .fetch_all($executor)
        .await?;
        rows.into_iter().filter_map(SilenceRow::into_silence).collect::<Vec<_>>()
    }};
}

/// What the outbox already holds for incidents: parent posts and Jira creations.
macro_rules! load_delivered {
    ($executor:expr, $incidents:expr) => {{
        let rows: Vec<(Option<i64>, String)> = sqlx::query_as(
            "SELECT incident_id, kind FROM outbox WHERE kind IN ('slack_post', 'jira_create')",
        )
        .fetch_all($executor)
        .await?;
        let incidents: &[Incident] = $incidents;
        let mut d = Delivered::default();
        d.slack_posted.extend(incidents.iter().filter(|i| i.slack_ts.is_some()).map(|i| i.id));
        for (id, kind) in rows {
            let Some(id) = id else { continue };
            if kind == "slack_post" {
                d.slack_posted.insert(id);
            } else {
                d.jira_filed.insert(id);
            }
        }
        d
    }};
}

macro_rules! insert_event {
    ($executor:expr, $incident:expr, $at:expr, $actor:expr, $kind:expr, $detail:expr) => {{
        sqlx::query(
            "INSERT INTO incident_events (incident_id, at, actor, kind, detail) VALUES ($1, $2, $3, $4, $5)",
        )
        .bind($incident)
        .bind($at)
        .bind($actor)
        .bind($kind)
        .bind($detail)
        .execute($executor)
        .await?;
    }};
}

/// Queues an effect unless an entry with the same idempotency key exists.
macro_rules! enqueue {
    ($executor:expr, $now:expr, $entry:expr) => {{
        let e: &NewEntry = $entry;
        sqlx::query(
            "INSERT INTO outbox (idempotency_key, lane, kind, incident_id, payload, state, next_attempt_at, created_at) \
             VALUES ($1, $2, $3, $4, $5, 'pending', $6, $6) ON CONFLICT (idempotency_key) DO NOTHING",
        )
        .bind(&e.key)
        .bind(&e.lane)
        .bind(e.kind)
        .bind(e.incident_id)
        .bind(e.payload.to_string())
        .bind($now)
        .execute($executor)
        .await?;
    }};
}

/// Binds a snapshot's columns, `family` to `snapshot`, in table order.
macro_rules! bind_snapshot {
    ($query:expr, $snapshot:expr) => {{
        let s: &Snapshot = $snapshot;
        $query
            .bind(&s.family)
            .bind(&s.release)
            .bind(serde_json::to_string(&s.backends)?)
            .bind(&s.component)
            .bind(serde_json::to_value(s)?["scope"].to_string())
            .bind(s.percentile.to_string())
            .bind(s.observed_seconds)
            .bind(s.threshold_seconds)
            .bind(&s.tier)
            .bind(&s.evidence)
            .bind(&s.summary)
            .bind(serde_json::to_string(s)?)
    }};
}

/// Writes the steps of a plan (and their outbox entries) inside an open transaction `$tx`.
macro_rules! apply_plan {
    ($tx:expr, $now:expr, $cycle:expr, $actor:expr, $plan:expr, $incidents:expr) => {{
        let now: i64 = $now;
        // Outbox entries are due by the wall clock, whatever time the cycle evaluated.
        let queued_at = chrono::Utc::now().timestamp();
        let plan: &Plan = $plan;
        let incidents: &[Incident] = $incidents;
        for step in &plan.steps {
            let (id, revision) = match &step.action {
                Action::Open { fingerprint, snapshot } => {
                    let insert = sqlx::query_scalar(
                        "INSERT INTO incidents (fingerprint, family, release, backends, component, scope, state, \
                         percentile, observed_seconds, threshold_seconds, tier, evidence, summary, snapshot, revision, \
                         opened_at, updated_at, last_seen_at) \
                         VALUES ($1, $2, $3, $4, $5, $6, 'new', $7, $8, $9, $10, $11, $12, $13, 1, $14, $14, $14) RETURNING id",
                    )
                    .bind(fingerprint);
                    let id: i64 = bind_snapshot!(insert, snapshot).bind(now).fetch_one(&mut *$tx).await?;
                    insert_event!(&mut *$tx, id, now, $actor, "opened", snapshot.summary.clone());
                    (id, 1)
                }
                Action::Update { id, state, snapshot, changes } => {
                    let old = incidents.iter().find(|i| i.id == *id).context("planned an unknown incident")?;
                    let revision = old.revision + i64::from(!changes.is_empty());
                    let update = sqlx::query(
                        "UPDATE incidents SET state = $2, family = $3, release = $4, backends = $5, component = $6, \
                         scope = $7, percentile = $8, observed_seconds = $9, threshold_seconds = $10, tier = $11, \
                         evidence = $12, summary = $13, snapshot = $14, revision = $15, updated_at = $16, \
                         last_seen_at = $16, resolved_at = NULL WHERE id = $1",
                    )
                    .bind(id)
                    .bind(state.as_str());
                    bind_snapshot!(update, snapshot).bind(revision).bind(now).execute(&mut *$tx).await?;
                    for c in changes {
                        let kind = serde_json::to_value(c)?["kind"].as_str().unwrap_or("changed").to_string();
                        insert_event!(&mut *$tx, *id, now, $actor, kind, c.describe());
                    }
                    (*id, revision)
                }
                Action::Resolve { id, .. } | Action::Stale { id } => {
                    let old = incidents.iter().find(|i| i.id == *id).context("planned an unknown incident")?;
                    let (state, kind, detail) = match &step.action {
                        Action::Resolve { .. } => ("resolved", "resolved", crate::incidents::Change::Resolved.describe()),
                        _ => ("stale", "stale", crate::incidents::Change::Stale.describe()),
                    };
                    let resolved_at = (state == "resolved").then_some(now);
                    sqlx::query(
                        "UPDATE incidents SET state = $2, revision = revision + 1, updated_at = $3, resolved_at = $4 \
                         WHERE id = $1",
                    )
                    .bind(id)
                    .bind(state)
                    .bind(now)
                    .bind(resolved_at)
                    .execute(&mut *$tx)
                    .await?;
                    insert_event!(&mut *$tx, *id, now, $actor, kind, detail);
                    (*id, old.revision + 1)
                }
                Action::Catch { id } => {
                    let old = incidents.iter().find(|i| i.id == *id).context("planned an unknown incident")?;
                    (*id, old.revision)
                }
            };
            if let Some(silence) = step.silenced_by
                && !matches!(step.action, Action::Catch { .. })
            {
                insert_event!(&mut *$tx, id, now, $actor, "held", format!("notifications held by silence #{silence}"));
            }
            for effect in &step.effects {
                let entry = NewEntry::for_incident(effect, id, revision);
                enqueue!(&mut *$tx, queued_at, &entry);
                if matches!(effect, Effect::JiraComment { .. }) {
                    sqlx::query("UPDATE incidents SET jira_commented_at = $2 WHERE id = $1")
                        .bind(id)
                        .bind(now)
                        .execute(&mut *$tx)
                        .await?;
                }
            }
        }
        for summary in &plan.summaries {
            enqueue!(&mut *$tx, queued_at, &NewEntry::summary(summary, $cycle));
        }
    }};
}

/// An outbox row to insert.
struct NewEntry {
    key: String,
    lane: String,
    kind: &'static str,
    incident_id: Option<i64>,
    payload: serde_json::Value,
}

impl NewEntry {
    fn for_incident(effect: &Effect, id: i64, revision: i64) -> NewEntry {
        let kind = effect.kind();
        let key = match effect {
            Effect::SlackPost { .. } => format!("slack_post:{id}"),
            Effect::JiraCreate => format!("jira_create:{id}"),
            _ => format!("{kind}:{id}:{revision}"),
        };
        let lane = if effect.is_jira() { format!("jira:{id}") } else { format!("slack:{id}") };
        NewEntry { key, lane, kind, incident_id: Some(id), payload: plan::payload(effect) }
    }

    fn summary(effect: &Effect, cycle: &str) -> NewEntry {
        let channel = match effect {
            Effect::SlackSummary { channel, .. } => channel.as_str(),
            _ => "",
        };
        NewEntry {
            key: format!("slack_summary:{cycle}:{channel}"),
            lane: format!("summary:{channel}"),
            kind: effect.kind(),
            incident_id: None,
            payload: plan::payload(effect),
        }
    }
}

/// Decides a plan from the incidents, silences and outbox as they are in the transaction.
pub type Planner<'a> = &'a (dyn Fn(&[Incident], &[Silence], &Delivered) -> Plan + Send + Sync);

impl Store {
    /// Replaces the stored group states, records the cycle, and applies the incident plan with
    /// its outbox entries: all in one transaction.
    pub async fn finish_cycle(
        &self,
        states: &[(String, crate::evaluate::GroupState)],
        cycle: &super::evaluations::CycleRecord,
        planner: Planner<'_>,
    ) -> Result<(i64, Plan)> {
        let now = cycle.evaluated_at;
        Ok(with_pool!(self, pool, dialect => {
            let mut tx = pool.begin_with(dialect.begin_write).await?;
            let cycle_id = super::evaluations::write_cycle!(&mut tx, states, cycle);
            let incidents = load_incidents!(&mut *tx);
            let silences = load_silences!(&mut *tx, now);
            let delivered = load_delivered!(&mut *tx, &incidents);
            let plan = planner(&incidents, &silences, &delivered);
            apply_plan!(tx, now, &cycle_id.to_string(), "sheriff", &plan, &incidents);
            tx.commit().await?;
            (cycle_id, plan)
        }))
    }

    /// Applies a plan that a person caused (resolve, ack …), attributed to `actor`.
    async fn apply_manual(
        &self,
        now: i64,
        actor: &str,
        planner: impl Fn(&[Incident], &[Silence], &Delivered) -> Result<Plan>,
    ) -> Result<Plan> {
        Ok(with_pool!(self, pool, dialect => {
            let mut tx = pool.begin_with(dialect.begin_write).await?;
            let incidents = load_incidents!(&mut *tx);
            let silences = load_silences!(&mut *tx, now);
            let delivered = load_delivered!(&mut *tx, &incidents);
            let plan = planner(&incidents, &silences, &delivered)?;
            apply_plan!(tx, now, &format!("manual-{now}-{actor}"), actor, &plan, &incidents);
            tx.commit().await?;
            plan
        }))
    }

    pub async fn incidents(&self) -> Result<Vec<Incident>> {
        Ok(with_pool!(self, pool => { load_incidents!(pool) }))
    }

    /// An incident by number (`12`, `#12`) or fingerprint.
    pub async fn find_incident(&self, reference: &str) -> Result<Option<Incident>> {
        let r = reference.trim().trim_start_matches('#');
        let id: i64 = r.parse().unwrap_or(-1);
        let rows: Vec<IncidentRow> = with_pool!(self, pool => {
            sqlx::query_as(concat!("SELECT ", incident_columns!(), " FROM incidents WHERE id = $1 OR fingerprint = $2"))
                .bind(id)
                .bind(r)
                .fetch_all(pool)
                .await?
        });
        rows.into_iter().next().map(IncidentRow::into_incident).transpose()
    }

    pub async fn incident_events(&self, incident: i64) -> Result<Vec<Event>> {
        let rows: Vec<(i64, String, String, String)> = with_pool!(self, pool => {
            sqlx::query_as("SELECT at, actor, kind, detail FROM incident_events WHERE incident_id = $1 ORDER BY id")
                .bind(incident)
                .fetch_all(pool)
                .await?
        });
        Ok(rows.into_iter().map(|(at, actor, kind, detail)| Event { at, actor, kind, detail }).collect())
    }

    /// Resolves an incident by hand; Slack and Jira hear of it like any resolution.
    pub async fn resolve_incident(
        &self,
        reference: &str,
        actor: &str,
        reason: &str,
        policy: &plan::Policy,
    ) -> Result<Incident> {
        let incident =
            self.find_incident(reference).await?.with_context(|| format!("no incident {reference}"))?;
        if !incident.state.is_open() {
            bail!("incident #{} is already resolved", incident.id);
        }
        let now = chrono::Utc::now().timestamp();
        let id = incident.id;
        self.apply_manual(now, actor, |incidents, silences, delivered| {
            let step = Step {
                action: Action::Resolve { id, snapshot: None },
                effects: Vec::new(),
                silenced_by: None,
            };
            Ok(plan::with_effects(now, vec![step], incidents, silences, delivered, policy))
        })
        .await?;
        if !reason.is_empty() {
            self.record_action(id, actor, "note", reason).await?;
        }
        self.find_incident(&id.to_string()).await?.context("the incident vanished")
    }

    /// Records that `actor` did something to an incident (`ack`, `not_a_regression`, …).
    pub async fn record_action(&self, incident: i64, actor: &str, kind: &str, detail: &str) -> Result<()> {
        let now = chrono::Utc::now().timestamp();
        with_pool!(self, pool => {
            insert_event!(pool, incident, now, actor, kind, detail);
        });
        Ok(())
    }

    /// Acknowledges an incident; its Slack message is edited to say who.
    pub async fn ack_incident(&self, reference: &str, actor: &str) -> Result<Incident> {
        let incident =
            self.find_incident(reference).await?.with_context(|| format!("no incident {reference}"))?;
        let now = chrono::Utc::now().timestamp();
        with_pool!(self, pool, dialect => {
            let mut tx = pool.begin_with(dialect.begin_write).await?;
            sqlx::query("UPDATE incidents SET acked_by = $2, acked_at = $3 WHERE id = $1")
                .bind(incident.id)
                .bind(actor)
                .bind(now)
                .execute(&mut *tx)
                .await?;
            insert_event!(&mut *tx, incident.id, now, actor, "ack", format!("acknowledged by {actor}"));
            if incident.slack_ts.is_some() || incident.slack_channel.is_some() {
                let entry = NewEntry {
                    key: format!("slack_update:{}:ack:{now}:{actor}", incident.id),
                    lane: format!("slack:{}", incident.id),
                    kind: "slack_update",
                    incident_id: Some(incident.id),
                    payload: serde_json::json!({}),
                };
                enqueue!(&mut *tx, now, &entry);
            }
            tx.commit().await?;
        });
        self.find_incident(&incident.id.to_string()).await?.context("the incident vanished")
    }

    /// Files a Jira issue for an incident now, ignoring the per-cycle cap.
    pub async fn file_now(&self, reference: &str, actor: &str) -> Result<Incident> {
        let incident =
            self.find_incident(reference).await?.with_context(|| format!("no incident {reference}"))?;
        if incident.jira_key.is_some() {
            bail!(
                "incident #{} already has {}",
                incident.id,
                incident.jira_key.as_deref().unwrap_or_default()
            );
        }
        let now = chrono::Utc::now().timestamp();
        with_pool!(self, pool, dialect => {
            let mut tx = pool.begin_with(dialect.begin_write).await?;
            let entry = NewEntry::for_incident(&Effect::JiraCreate, incident.id, incident.revision);
            enqueue!(&mut *tx, now, &entry);
            insert_event!(&mut *tx, incident.id, now, actor, "file_jira", format!("{actor} asked for a Jira issue"));
            tx.commit().await?;
        });
        Ok(incident)
    }

    pub async fn add_silence(
        &self,
        target: &Target,
        expires_at: i64,
        reason: &str,
        actor: &str,
    ) -> Result<i64> {
        let now = chrono::Utc::now().timestamp();
        let mut target = target.clone();
        if let Some(reference) = &target.fingerprint {
            let incident =
                self.find_incident(reference).await?.with_context(|| format!("no incident {reference}"))?;
            target.fingerprint = Some(incident.fingerprint.clone());
            self.record_action(
                incident.id,
                actor,
                "silenced",
                &format!("silenced until {expires_at}: {reason}"),
            )
            .await?;
        }
        Ok(with_pool!(self, pool => {
            sqlx::query_scalar::<_, i64>(
                "INSERT INTO silences (fingerprint, backend, dimensions, reason, created_by, created_at, expires_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
            )
            .bind(&target.fingerprint)
            .bind(&target.backend)
            .bind(serde_json::to_string(&target.dimensions)?)
            .bind(reason)
            .bind(actor)
            .bind(now)
            .bind(expires_at)
            .fetch_one(pool)
            .await?
        }))
    }

    /// Ends silences: by number, or every active one targeting an incident or matcher.
    pub async fn remove_silences(&self, reference: &str, actor: &str) -> Result<usize> {
        let now = chrono::Utc::now().timestamp();
        let active = self.silences(now).await?;
        let incident = self.find_incident(reference).await.ok().flatten();
        let wanted: Vec<i64> = active
            .iter()
            .filter(|s| {
                s.id.to_string() == reference.trim_start_matches('#')
                    || incident
                        .as_ref()
                        .is_some_and(|i| s.fingerprint.as_deref() == Some(i.fingerprint.as_str()))
                    || s.target().describe() == reference
            })
            .map(|s| s.id)
            .collect();
        for id in &wanted {
            with_pool!(self, pool => {
                sqlx::query("UPDATE silences SET removed_at = $2, removed_by = $3 WHERE id = $1")
                    .bind(id)
                    .bind(now)
                    .bind(actor)
                    .execute(pool)
                    .await?;
            });
        }
        Ok(wanted.len())
    }

    /// Active silences at `now`.
    pub async fn silences(&self, now: i64) -> Result<Vec<Silence>> {
        Ok(with_pool!(self, pool => { load_silences!(pool, now) }))
    }
}
