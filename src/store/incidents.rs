//! Incidents, their history, silences; and applying a plan (a cycle's, or a person's) with its
//! outbox entries in one transaction. The store decides nothing here: the plan says what
//! changes and what is sent, and this file writes it.

use super::{Arg, Conn, Result, Store, StoreError, sql};
use crate::domain::incidents::Refusal;
use crate::domain::incidents::plan::{
    Action, Delivered, Effect, EffectKind, Known, NewSilence, Plan, Step,
};
use crate::domain::incidents::silence::{Patterns, Silence};
use crate::domain::incidents::{Change, Event, Incident, ResolvedAs, Snapshot, State};
use crate::domain::incidents::{Told, Wording};

const INCIDENT_COLUMNS: &str = "id, fingerprint, state, snapshot, revision, opened_at, updated_at, \
    last_seen_at, resolved_at, acked_by, acked_at, slack_channel, slack_ts, jira_key, jira_commented_at, episodes, \
    merged_into, resolution, fix, allowance, held";

const SILENCE_COLUMNS: &str =
    "id, fingerprint, backend, dimensions, reason, created_by, created_at, expires_at, removed_at";

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
    episodes: String,
    merged_into: Option<i64>,
    resolution: Option<String>,
    fix: Option<String>,
    allowance: Option<String>,
    held: Option<String>,
}

impl IncidentRow {
    fn into_incident(self) -> Result<Incident> {
        let snapshot: Snapshot = serde_json::from_str(&self.snapshot).map_err(|e| {
            StoreError::corrupt(
                "incidents",
                format!("incident {} has an unreadable snapshot", self.id),
                e,
            )
        })?;

        Ok(Incident {
            id: self.id,
            fingerprint: self.fingerprint,
            state: State::parse(&self.state).ok_or_else(|| {
                StoreError::malformed(
                    "incidents",
                    format!("incident {}: unknown state `{}`", self.id, self.state),
                )
            })?,
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
            episodes: serde_json::from_str(&self.episodes).map_err(|e| {
                StoreError::corrupt(
                    "incidents",
                    format!("incident {} has unreadable episodes", self.id),
                    e,
                )
            })?,
            merged_into: self.merged_into,
            resolution: match self.resolution.as_deref() {
                None => None,
                Some(how) => Some(ResolvedAs::parse(how).ok_or_else(|| {
                    StoreError::malformed(
                        "incidents",
                        format!("incident {}: unknown resolution `{how}`", self.id),
                    )
                })?),
            },
            fix: json_column(self.fix.as_deref(), self.id, "fix claim"),
            allowance: json_column(self.allowance.as_deref(), self.id, "accepted level"),
            held: json_column(self.held.as_deref(), self.id, "held notifications")
                .unwrap_or_default(),
        })
    }
}

/// A JSON column's value; an unreadable one is logged and read as none, so one bad value never
/// hides an incident.
fn json_column<T: serde::de::DeserializeOwned>(
    text: Option<&str>,
    id: i64,
    what: &str,
) -> Option<T> {
    let text = text.filter(|t| !t.is_empty())?;
    serde_json::from_str(text)
        .map_err(|e| tracing::warn!(incident = id, "unreadable {what}, ignored: {e}"))
        .ok()
}

/// A row of `incident_events`: what happened to an incident, when (Unix seconds) and by whom.
#[derive(sqlx::FromRow)]
struct EventRow {
    at: i64,
    actor: String,
    kind: String,
    detail: String,
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
        let raw: std::collections::BTreeMap<String, String> =
            match serde_json::from_str(&self.dimensions) {
                Ok(raw) => raw,
                Err(e) => {
                    tracing::warn!(
                        silence = self.id,
                        "silence has unreadable dimensions, ignored: {e}"
                    );
                    return None;
                }
            };
        let mut dimensions = Patterns::new();
        for (k, v) in raw {
            let Some(d) = crate::model::Dimension::parse(&k) else {
                tracing::warn!(silence = self.id, key = %k, "silence names an unknown dimension, ignored");
                return None;
            };
            dimensions.insert(d, v);
        }
        Some(Silence {
            id: self.id,
            fingerprint: self.fingerprint,
            backend: self.backend,
            dimensions,
            reason: self.reason,
            created_by: self.created_by,
            created_at: self.created_at,
            expires_at: self.expires_at,
            removed_at: self.removed_at,
        })
    }
}

async fn load_incidents(c: &mut Conn<'_>) -> Result<Vec<Incident>> {
    let rows: Vec<IncidentRow> = c
        .fetch_all(super::Sql::built(format!(
            "SELECT {INCIDENT_COLUMNS} FROM incidents ORDER BY id"
        )))
        .await?;
    rows.into_iter().map(IncidentRow::into_incident).collect()
}

/// Silences not removed and not expired at `now`.
async fn load_silences(c: &mut Conn<'_>, now: i64) -> Result<Vec<Silence>> {
    let q = super::Sql::built(format!(
        "SELECT {SILENCE_COLUMNS} FROM silences WHERE removed_at IS NULL AND expires_at > $1 ORDER BY id"
    ))
    .bind(now);
    let rows: Vec<SilenceRow> = c.fetch_all(q).await?;
    Ok(rows
        .into_iter()
        .filter_map(SilenceRow::into_silence)
        .collect())
}

/// What the outbox already holds for incidents: parent posts and Jira creations.
async fn load_delivered(c: &mut Conn<'_>, incidents: &[Incident]) -> Result<Delivered> {
    let rows: Vec<(Option<i64>, String)> = c
        .fetch_all(
            sql("SELECT incident_id, kind FROM outbox WHERE kind IN ($1, $2)")
                .bind(EffectKind::SlackPost.as_str())
                .bind(EffectKind::JiraCreate.as_str()),
        )
        .await?;
    let mut d = Delivered::default();
    d.slack_posted.extend(
        incidents
            .iter()
            .filter(|i| i.slack_ts.is_some())
            .map(|i| i.id),
    );
    for (id, kind) in rows {
        let Some(id) = id else { continue };
        if EffectKind::parse(&kind) == Some(EffectKind::SlackPost) {
            d.slack_posted.insert(id);
        } else {
            d.jira_filed.insert(id);
        }
    }
    Ok(d)
}

/// Everything a plan is made from, read inside the transaction that applies it. On
/// PostgreSQL the transaction first takes the incidents' lock, so two plans (two replicas'
/// cycles, a cycle and a button) are made and applied one after the other, as SQLite's write
/// lock does by itself.
async fn load_known(c: &mut Conn<'_>, now: i64) -> Result<Known> {
    if c.is_postgres() {
        c.execute(sql("SELECT pg_advisory_xact_lock(7400713305)"))
            .await?;
    }
    let incidents = load_incidents(c).await?;
    let silences = load_silences(c, now).await?;
    let delivered = load_delivered(c, &incidents).await?;
    Ok(Known {
        incidents,
        silences,
        delivered,
    })
}

async fn insert_event(
    c: &mut Conn<'_>,
    incident: i64,
    at: i64,
    actor: &str,
    kind: &str,
    detail: &str,
) -> Result<()> {
    let q =
        sql("INSERT INTO incident_events (incident_id, at, actor, kind, detail) VALUES ($1, $2, $3, $4, $5)")
            .bind(incident)
            .bind(at)
            .bind(actor)
            .bind(kind)
            .bind(detail);
    c.execute(q).await.map(|_| ())
}

/// An outbox row to insert.
pub(super) struct NewEntry {
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
            Effect::SlackDetails => format!("slack_details:{id}"),
            Effect::JiraCreate => format!("jira_create:{id}"),
            _ => format!("{kind}:{id}:{revision}"),
        };
        NewEntry {
            key,
            lane: format!("{}:{id}", effect.sink().as_str()),
            kind: kind.as_str(),
            incident_id: Some(id),
            payload: effect.payload(),
        }
    }

    /// An effect a delivery queues after itself, keyed by what it delivered (`tag`), so a
    /// delivery made twice queues it once.
    pub(super) fn following(effect: &Effect, id: i64, tag: &str) -> NewEntry {
        NewEntry {
            key: format!("{}:{id}:{tag}", effect.kind()),
            ..NewEntry::for_incident(effect, id, 0)
        }
    }

    fn summary(effect: &Effect, cycle: &str) -> NewEntry {
        let channel = match effect {
            Effect::SlackSummary { channel, .. } => channel.as_str(),
            _ => "",
        };
        NewEntry {
            key: format!("slack_summary:{cycle}:{channel}"),
            lane: format!("summary:{channel}"),
            kind: effect.kind().as_str(),
            incident_id: None,
            payload: effect.payload(),
        }
    }
}

/// Queues an effect unless an entry with the same idempotency key exists.
pub(super) async fn enqueue(c: &mut Conn<'_>, queued_at: i64, e: &NewEntry) -> Result<()> {
    let q = sql("INSERT INTO outbox (idempotency_key, lane, kind, incident_id, payload, state, next_attempt_at, \
             created_at) VALUES ($1, $2, $3, $4, $5, 'pending', $6, $6) ON CONFLICT (idempotency_key) DO NOTHING")
    .bind(&e.key)
    .bind(&e.lane)
    .bind(e.kind)
    .bind(e.incident_id)
    .bind(e.payload.to_string())
    .bind(queued_at);
    c.execute(q).await.map(|_| ())
}

/// A snapshot's columns, `family` to `snapshot`, in table order.
fn snapshot_args(s: &Snapshot) -> Result<Vec<Arg>> {
    let whole = serde_json::to_value(s).map_err(StoreError::Encode)?;
    Ok(vec![
        (&s.family).into(),
        (&s.release).into(),
        serde_json::to_string(&s.backends)
            .map_err(StoreError::Encode)?
            .into(),
        (&s.component).into(),
        whole["scope"].to_string().into(),
        s.percentile.to_string().into(),
        s.observed_seconds.into(),
        s.threshold_seconds.into(),
        (&s.tier).into(),
        (&s.evidence).into(),
        (&s.summary).into(),
        whole.to_string().into(),
    ])
}

fn bind_all(mut q: super::Sql, args: Vec<Arg>) -> super::Sql {
    for a in args {
        q = q.bind(a);
    }
    q
}

/// What applying one step needs besides the step.
struct Applying<'a> {
    now: i64,
    actor: &'a str,
    incidents: &'a [Incident],
    /// The text of the history's lines.
    wording: Wording,
}

impl Applying<'_> {
    fn stored(&self, id: i64) -> Result<&Incident> {
        let unknown = || StoreError::NotFound {
            what: "incident",
            key: format!("{id}, which a plan names"),
        };
        self.incidents
            .iter()
            .find(|i| i.id == id)
            .ok_or_else(unknown)
    }

    /// Writes one step's change and history; the incident's id and new revision.
    async fn step(&self, c: &mut Conn<'_>, action: &Action) -> Result<(i64, i64)> {
        let (now, actor) = (self.now, self.actor);
        match action {
            Action::Open {
                fingerprint,
                snapshot,
                episodes,
            } => self.open(c, fingerprint, snapshot, episodes).await,
            Action::Update {
                id,
                state,
                snapshot,
                changes,
                episodes,
            } => {
                let revision = self.stored(*id)?.revision + i64::from(!changes.is_empty());
                let q = sql("UPDATE incidents SET state = $2, family = $3, release = $4, backends = $5, component = $6, \
                         scope = $7, percentile = $8, observed_seconds = $9, threshold_seconds = $10, tier = $11, \
                         evidence = $12, summary = $13, snapshot = $14, revision = $15, updated_at = $16, \
                         last_seen_at = $16, resolved_at = NULL, resolution = NULL, episodes = $17 WHERE id = $1")
                .bind(*id)
                .bind(state.as_str());
                let q = bind_all(q, snapshot_args(snapshot)?)
                    .bind(revision)
                    .bind(now)
                    .bind(serde_json::to_string(episodes).map_err(StoreError::Encode)?);
                c.execute(q).await?;
                self.record_changes(c, *id, changes).await?;
                Ok((*id, revision))
            }
            Action::Resolve {
                id,
                how,
                episodes,
                snapshot,
            } => {
                self.resolve(c, *id, how, episodes.as_deref(), snapshot.as_ref())
                    .await
            }
            Action::Stale { id } => {
                self.set_state(c, *id, State::Stale, None).await?;
                insert_event(
                    c,
                    *id,
                    now,
                    actor,
                    "stale",
                    &(self.wording)(&Told::Change(&Change::Stale)),
                )
                .await?;
                Ok((*id, self.stored(*id)?.revision + 1))
            }
            Action::CatchUp { id } => Ok((*id, self.stored(*id)?.revision)),
            Action::Acknowledge { id, by } => {
                let q = sql("UPDATE incidents SET acked_by = $2, acked_at = $3, revision = revision + 1 WHERE id = $1")
                    .bind(*id)
                    .bind(by)
                    .bind(now);
                c.execute(q).await?;
                let detail = (self.wording)(&Told::Acknowledged { by });
                insert_event(c, *id, now, actor, "ack", &detail).await?;
                Ok((*id, self.stored(*id)?.revision + 1))
            }
            Action::FileJira { id } => {
                let detail = (self.wording)(&Told::AskedForJira { by: actor });
                insert_event(c, *id, now, actor, "file_jira", &detail).await?;
                Ok((*id, self.stored(*id)?.revision))
            }
            Action::Note { id, kind, detail } => {
                insert_event(c, *id, now, actor, kind, detail).await?;
                Ok((*id, self.stored(*id)?.revision))
            }
        }
    }

    /// Inserts a new incident and its first line of history; its id and revision (1).
    async fn open(
        &self,
        c: &mut Conn<'_>,
        fingerprint: &str,
        snapshot: &Snapshot,
        episodes: &[crate::model::Episode],
    ) -> Result<(i64, i64)> {
        let (now, actor) = (self.now, self.actor);
        let q = sql("INSERT INTO incidents (fingerprint, family, release, backends, component, scope, state, \
                 percentile, observed_seconds, threshold_seconds, tier, evidence, summary, snapshot, revision, \
                 opened_at, updated_at, last_seen_at, episodes) \
                 VALUES ($1, $2, $3, $4, $5, $6, 'new', $7, $8, $9, $10, $11, $12, $13, 1, $14, $14, $14, $15) \
                 RETURNING id")
        .bind(fingerprint);
        let q = bind_all(q, snapshot_args(snapshot)?)
            .bind(now)
            .bind(serde_json::to_string(episodes).map_err(StoreError::Encode)?);
        let id: i64 = c.scalar(q).await?;
        insert_event(c, id, now, actor, "opened", &snapshot.summary).await?;
        Ok((id, 1))
    }

    /// One line of history for each of an incident's `changes`, and the verdicts among them.
    async fn record_changes(&self, c: &mut Conn<'_>, id: i64, changes: &[Change]) -> Result<()> {
        for change in changes {
            insert_event(
                c,
                id,
                self.now,
                self.actor,
                change.kind(),
                &(self.wording)(&Told::Change(change)),
            )
            .await?;
            if let Change::Verdict { verdict, text } = change {
                self.record_verdict(c, id, *verdict, text).await?;
            }
        }
        Ok(())
    }

    async fn resolve(
        &self,
        c: &mut Conn<'_>,
        id: i64,
        how: &crate::domain::incidents::plan::Resolution,
        episodes: Option<&[crate::model::Episode]>,
        snapshot: Option<&Snapshot>,
    ) -> Result<(i64, i64)> {
        let now = self.now;
        self.set_state(c, id, State::Resolved, Some(now)).await?;
        if let Some(episodes) = episodes {
            let q = sql("UPDATE incidents SET episodes = $2 WHERE id = $1")
                .bind(id)
                .bind(serde_json::to_string(episodes).map_err(StoreError::Encode)?);
            c.execute(q).await?;
        }

        if let Some(snapshot) = snapshot {
            let q =
                sql("UPDATE incidents SET snapshot = $2, summary = $3, observed_seconds = $4 WHERE id = $1")
                    .bind(id)
                    .bind(serde_json::to_string(snapshot).map_err(StoreError::Encode)?)
                    .bind(&snapshot.summary)
                    .bind(snapshot.observed_seconds);
            c.execute(q).await?;
        }

        if let crate::domain::incidents::plan::Resolution::Merged { into } = how {
            c.execute(
                sql("UPDATE incidents SET merged_into = $2 WHERE id = $1")
                    .bind(id)
                    .bind(*into),
            )
            .await?;
        }

        c.execute(
            sql("UPDATE incidents SET resolution = $2 WHERE id = $1")
                .bind(id)
                .bind(how.kind().as_str()),
        )
        .await?;

        if let crate::domain::incidents::plan::Resolution::Fixed { text } = how {
            self.record_verdict(c, id, crate::model::FixVerdict::Fixed, text)
                .await?;
        }

        insert_event(
            c,
            id,
            now,
            self.actor,
            "resolved",
            &(self.wording)(&Told::Resolved(how)),
        )
        .await?;

        Ok((id, self.stored(id)?.revision + 1))
    }

    /// Keeps a verdict told with the incident's fix claim, so it is told once.
    async fn record_verdict(
        &self,
        c: &mut Conn<'_>,
        id: i64,
        verdict: crate::model::FixVerdict,
        text: &str,
    ) -> Result<()> {
        let Some(mut claim) = self.stored(id)?.fix.clone() else {
            return Ok(());
        };
        claim.verdicts.push(crate::model::ToldVerdict {
            verdict,
            at: self.now,
            text: text.to_string(),
        });
        let q = sql("UPDATE incidents SET fix = $2 WHERE id = $1")
            .bind(id)
            .bind(serde_json::to_string(&claim).map_err(StoreError::Encode)?);
        c.execute(q).await.map(|_| ())
    }

    async fn set_state(
        &self,
        c: &mut Conn<'_>,
        id: i64,
        state: State,
        resolved_at: Option<i64>,
    ) -> Result<()> {
        let q = sql(
            "UPDATE incidents SET state = $2, revision = revision + 1, updated_at = $3, resolved_at = $4 \
                 WHERE id = $1",
        )
        .bind(id)
        .bind(state.as_str())
        .bind(self.now)
        .bind(resolved_at);
        c.execute(q).await.map(|_| ())
    }

    /// One step: its change, then its outbox entries.
    async fn apply(&self, c: &mut Conn<'_>, step: &Step, queued_at: i64) -> Result<()> {
        let (id, mut revision) = self.step(c, &step.action).await?;
        if !step.effects.is_empty()
            && self
                .incidents
                .iter()
                .any(|i| i.id == id && i.revision == revision)
        {
            // Effects are keyed by revision: a step that tells something has one of its own.
            c.execute(sql("UPDATE incidents SET revision = revision + 1 WHERE id = $1").bind(id))
                .await?;
            revision += 1;
        }

        if let Some(silence) = step.silenced_by
            && !matches!(step.action, Action::CatchUp { .. })
        {
            let detail = (self.wording)(&Told::Held { silence });
            insert_event(c, id, self.now, self.actor, "held", &detail).await?;
        }

        if let Some(held) = &step.held {
            let value = (!held.is_empty())
                .then(|| serde_json::to_string(held))
                .transpose()
                .map_err(StoreError::Encode)?;
            c.execute(
                sql("UPDATE incidents SET held = $2 WHERE id = $1")
                    .bind(id)
                    .bind(value),
            )
            .await?;
        }

        for effect in &step.effects {
            enqueue(c, queued_at, &NewEntry::for_incident(effect, id, revision)).await?;
            if matches!(effect, Effect::JiraComment { .. }) {
                c.execute(
                    sql("UPDATE incidents SET jira_commented_at = $2 WHERE id = $1")
                        .bind(id)
                        .bind(self.now),
                )
                .await?;
            }
        }

        Ok(())
    }
}

async fn insert_silence(
    c: &mut Conn<'_>,
    now: i64,
    actor: &str,
    s: &NewSilence,
    wording: Wording,
) -> Result<i64> {
    let q = sql(
        "INSERT INTO silences (fingerprint, backend, dimensions, reason, created_by, created_at, expires_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
    )
    .bind(&s.target.fingerprint)
    .bind(&s.target.backend)
    .bind(serde_json::to_string(&s.target.dimensions).map_err(StoreError::Encode)?)
    .bind(&s.reason)
    .bind(actor)
    .bind(now)
    .bind(s.expires_at);
    let id: i64 = c.scalar(q).await?;
    if let Some(incident) = s.incident {
        let detail = wording(&Told::Silenced { silence: s, id });
        insert_event(c, incident, now, actor, "silenced", &detail).await?;
    }
    Ok(id)
}

/// What applying a plan made that the caller needs: the new silences' numbers.
#[derive(Debug, Clone, Default)]
pub struct Applied {
    pub silences: Vec<i64>,
}

/// Writes a plan (its steps with their outbox entries, summaries, silences) inside an open
/// transaction. `cycle` names the summaries' idempotency keys.
async fn apply_plan(
    c: &mut Conn<'_>,
    now: i64,
    cycle: &str,
    actor: &str,
    plan: &Plan,
    known: &Known,
    wording: Wording,
) -> Result<Applied> {
    // Outbox entries are due by the wall clock, whatever time the cycle evaluated.
    let queued_at = chrono::Utc::now().timestamp();
    // silences first: a silence that comes with a resolution ("not a regression") is not the
    // last thing done, which the parent message shows
    let mut applied = Applied::default();
    for s in &plan.silences {
        applied
            .silences
            .push(insert_silence(c, now, actor, s, wording).await?);
    }

    let applying = Applying {
        now,
        actor,
        incidents: &known.incidents,
        wording,
    };

    for step in &plan.steps {
        applying.apply(c, step, queued_at).await?;
    }

    for summary in &plan.summaries {
        enqueue(c, queued_at, &NewEntry::summary(summary, cycle)).await?;
    }

    for a in &plan.allowances {
        let value = a
            .allowance
            .as_ref()
            .map(serde_json::to_string)
            .transpose()
            .map_err(StoreError::Encode)?;
        c.execute(
            sql("UPDATE incidents SET allowance = $2 WHERE id = $1")
                .bind(a.incident)
                .bind(value),
        )
        .await?;
        if let Some((kind, detail)) = &a.event {
            insert_event(c, a.incident, now, actor, kind, detail).await?;
        }
    }

    for id in &plan.unsilence {
        let q =
            sql("UPDATE silences SET removed_at = $2, removed_by = $3 WHERE id = $1 AND removed_at IS NULL")
                .bind(*id)
                .bind(now)
                .bind(actor);
        c.execute(q).await?;
    }

    Ok(applied)
}

/// The incidents, their events and silences: plans applied with their outbox entries.
/// Reached through [`Store::incidents`].
#[derive(Clone, Copy)]
pub struct Incidents<'a> {
    pub(super) store: &'a Store,
}

impl Incidents<'_> {
    /// Replaces the stored group states, records the cycle, and applies the incident plan with
    /// its outbox entries: all in one transaction (when it fails, nothing of the cycle is
    /// recorded; the caller records it as failed). `words` gives the history's lines their text.
    pub async fn finish_cycle(
        self,
        states: &[(String, crate::domain::evaluate::GroupState)],
        cycle: &super::evaluations::CycleRecord,
        planner: impl FnOnce(&Known) -> Plan,
        wording: Wording,
    ) -> Result<(i64, Plan)> {
        let result: Result<(i64, Plan)> = async {
            let now = cycle.evaluated_at;
            let mut tx = self.store.begin_write().await?;
            let mut c = tx.conn();
            let cycle_id = super::evaluations::write_cycle(&mut c, states, cycle).await?;
            let known = load_known(&mut c, now).await?;
            let plan = planner(&known);
            apply_plan(
                &mut c,
                now,
                &cycle_id.to_string(),
                "sheriff",
                &plan,
                &known,
                wording,
            )
            .await?;
            tx.commit().await?;
            Ok((cycle_id, plan))
        }
        .await;
        self.store.tracked(result)
    }

    /// Applies a plan a person asked for, attributed to `actor`, made from the state inside
    /// the transaction; a refusal changes nothing. Returns only after the commit. `words` gives
    /// the history's lines their text.
    pub(crate) async fn apply_manual<T>(
        self,
        now: i64,
        actor: &str,
        planner: impl FnOnce(&Known) -> Result<(Plan, T), Refusal>,
        wording: Wording,
    ) -> Result<Result<(Applied, T), Refusal>> {
        let result: Result<Result<(Applied, T), Refusal>> = async {
            let mut tx = self.store.begin_write().await?;
            let mut c = tx.conn();
            let known = load_known(&mut c, now).await?;
            let (plan, extra) = match planner(&known) {
                Ok(planned) => planned,
                Err(refusal) => {
                    tx.rollback().await?;
                    return Ok(Err(refusal));
                }
            };
            let applied = apply_plan(
                &mut c,
                now,
                &format!("manual-{now}-{actor}"),
                actor,
                &plan,
                &known,
                wording,
            )
            .await?;
            tx.commit().await?;
            Ok(Ok((applied, extra)))
        }
        .await;
        self.store.tracked(result)
    }

    pub async fn all(self) -> Result<Vec<Incident>> {
        load_incidents(&mut self.store.acquire().await?.conn()).await
    }

    /// An incident by number (`12`, `#12`) or fingerprint.
    pub async fn find(self, reference: &str) -> Result<Option<Incident>> {
        let r = reference.trim().trim_start_matches('#');
        let id: i64 = r.parse().unwrap_or(-1);
        let q = super::Sql::built(format!(
            "SELECT {INCIDENT_COLUMNS} FROM incidents WHERE id = $1 OR fingerprint = $2"
        ))
        .bind(id)
        .bind(r);
        let rows: Vec<IncidentRow> = self.store.fetch_all(q).await?;
        rows.into_iter()
            .next()
            .map(IncidentRow::into_incident)
            .transpose()
    }

    pub async fn events(self, incident: i64) -> Result<Vec<Event>> {
        let rows: Vec<EventRow> = self
            .store
            .fetch_all(
                sql("SELECT at, actor, kind, detail FROM incident_events WHERE incident_id = $1 ORDER BY id")
                    .bind(incident),
            )
            .await?;
        Ok(rows
            .into_iter()
            .map(
                |EventRow {
                     at,
                     actor,
                     kind,
                     detail,
                 }| Event {
                    at,
                    actor,
                    kind,
                    detail,
                },
            )
            .collect())
    }

    /// Records an incident's fix claim as the Jira watch found it (None: withdrawn), with the
    /// line of its history, in one transaction.
    pub async fn record_fix(
        self,
        incident: i64,
        claim: Option<&crate::model::FixClaim>,
        now: i64,
        event: (&str, String),
    ) -> Result<()> {
        let result: Result<()> = async {
            let mut tx = self.store.begin_write().await?;
            let mut c = tx.conn();
            let value = claim
                .map(serde_json::to_string)
                .transpose()
                .map_err(StoreError::Encode)?;
            c.execute(
                sql("UPDATE incidents SET fix = $2 WHERE id = $1")
                    .bind(incident)
                    .bind(value),
            )
            .await?;
            insert_event(&mut c, incident, now, "jira", event.0, &event.1).await?;
            tx.commit().await
        }
        .await;
        self.store.tracked(result)
    }

    /// Active silences at `now`.
    pub async fn silences(self, now: i64) -> Result<Vec<Silence>> {
        load_silences(&mut self.store.acquire().await?.conn(), now).await
    }
}
