//! What people do to incidents, from the command line or Slack: acknowledge, silence and
//! unsilence, resolve, "not a regression", file Jira now. Each is planned by the incidents'
//! manual plans (`domain::incidents::manual`) from the state inside one transaction and applied
//! by the store; the answer is given only after the commit. Each takes the [`Operator`] it is
//! done for, so none runs without the check.

use std::fmt;

use crate::clients::slack::SlackClient;
use crate::config::{Settings, SlackSettings};
use crate::domain::incidents::Incident;
use crate::domain::incidents::Refusal;
use crate::domain::incidents::manual;
use crate::domain::incidents::plan::{Known, Plan, Policy, Resolution};
use crate::domain::incidents::silence::Target;
use crate::store::Store;
use crate::words;

/// Why an action did not happen.
#[derive(Debug)]
pub enum ActionError {
    /// The request cannot be carried out as asked: said plainly to the person.
    Refused(Refusal),
    /// sheriff's own trouble (the database, say): logged in full, answered generically.
    Internal(anyhow::Error),
}

impl ActionError {
    /// What the person who asked is told. Internal errors are logged with a reference the
    /// answer names, and their text never reaches the answer.
    pub(crate) fn for_people(&self) -> String {
        match self {
            ActionError::Refused(r) => r.to_string(),
            ActionError::Internal(e) => {
                let reference = crate::support::process::random_suffix();
                tracing::error!(reference, "an action failed: {e:#}");
                crate::words::failed_on_our_side(&reference)
            }
        }
    }
}

impl fmt::Display for ActionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ActionError::Refused(r) => write!(f, "{r}"),
            ActionError::Internal(e) => write!(f, "{e:#}"),
        }
    }
}

impl std::error::Error for ActionError {}

impl From<anyhow::Error> for ActionError {
    fn from(e: anyhow::Error) -> ActionError {
        ActionError::Internal(e)
    }
}

impl From<crate::store::StoreError> for ActionError {
    fn from(e: crate::store::StoreError) -> ActionError {
        ActionError::Internal(e.into())
    }
}

impl From<Refusal> for ActionError {
    fn from(r: Refusal) -> ActionError {
        ActionError::Refused(r)
    }
}

/// Someone sheriff lets change incidents: a Slack user who is one of `slack.authorized_users`
/// or a member of one of `slack.authorized_groups` ([`Operator::authorize`]), or the local user
/// of the command line ([`Operator::local`], [`Operator::local_named`]). Nothing else makes one,
/// and every action that changes something takes one, so no change is made for anybody else.
#[derive(Debug)]
pub struct Operator {
    user: String,
    /// Who they are as the history records them: `slack:<user> (<name>)` for a Slack user
    /// (`slack:<user>` when their name holds nothing a name is made of), `cli:<name>` for the
    /// local one.
    actor: String,
}

impl Operator {
    /// Slack's `user`, whom Slack calls `name`, as an operator, or None when they are not one
    /// (or no group could be read through `client`). The history records them as
    /// `slack:<user> (<name>)`, the name cut to the characters a name is made of (`slack:<user>`
    /// when none is left); made here, so no caller words who did a change.
    pub async fn authorize(
        slack: &SlackSettings,
        client: Option<&SlackClient>,
        user: &str,
        name: &str,
    ) -> Option<Operator> {
        let operator = || {
            Some(Operator {
                user: user.to_string(),
                actor: crate::model::actor::slack_actor(user, name),
            })
        };
        if slack.authorized_users.iter().any(|u| u == user) {
            return operator();
        }
        let client = client.filter(|_| !slack.authorized_groups.is_empty())?;
        for g in &slack.authorized_groups {
            match client.group_members(g).await {
                Ok(members) if members.iter().any(|m| m == user) => return operator(),
                Ok(_) => {}
                Err(e) => tracing::warn!(group = %g, "cannot read the user group: {e}"),
            }
        }
        None
    }

    /// The local user of the command line, who may change anything the database lets them:
    /// recorded as `cli:$USER`, else `cli:<host name>`.
    pub fn local() -> Operator {
        let user = std::env::var("USER").ok().filter(|u| !u.trim().is_empty());
        Operator::local_named(&user.unwrap_or_else(crate::support::process::hostname))
    }

    /// The command line's local user known as `name`: recorded as `cli:<name>`.
    pub fn local_named(name: &str) -> Operator {
        Operator {
            user: name.to_string(),
            actor: format!("cli:{name}"),
        }
    }

    /// Their Slack user id, or the local user's name.
    pub fn user(&self) -> &str {
        &self.user
    }

    /// Who they are in the history: what every change they make is recorded as.
    pub fn actor(&self) -> &str {
        &self.actor
    }
}

/// The incident as it is after an action.
async fn reread(store: &Store, id: i64) -> Result<Incident, ActionError> {
    store
        .incidents()
        .find(&id.to_string())
        .await?
        .ok_or_else(|| Refusal::no_incident(&id).into())
}

/// The id of the incident a reference names, as stored now.
async fn id_of(store: &Store, reference: &str) -> Result<i64, ActionError> {
    match store.incidents().find(reference).await? {
        Some(i) => Ok(i.id),
        None => Err(Refusal::no_incident(reference).into()),
    }
}

/// Acknowledges an incident; the bool says whether this person had not already.
pub(crate) async fn acknowledge(
    store: &Store,
    reference: &str,
    operator: &Operator,
    now: i64,
) -> Result<(Incident, bool), ActionError> {
    let actor = operator.actor();
    let (_, fresh) = store
        .incidents()
        .apply_manual(
            now,
            actor,
            |k| manual::acknowledge(k, reference, actor),
            words::line,
        )
        .await??;
    Ok((reread(store, id_of(store, reference).await?).await?, fresh))
}

/// A silence made (or found made moments ago).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SilenceMade {
    /// The silence's number.
    pub id: i64,
    /// The open incidents it holds now, by number; empty when it matches none (yet).
    pub holds: Vec<i64>,
}

impl SilenceMade {
    /// `; it holds #3 and #5` or a warning that it holds no open incident.
    pub fn holds_words(&self) -> String {
        crate::words::silence_holds(&self.holds)
    }
}

/// Silences an incident or a matcher for `seconds`; the silence's number (an equal one made
/// moments ago by the same person is that one) and the open incidents it holds.
pub async fn silence(
    store: &Store,
    target: &Target,
    seconds: i64,
    reason: &str,
    operator: &Operator,
    now: i64,
) -> Result<SilenceMade, ActionError> {
    let actor = operator.actor();
    let (applied, (same, holds)) = store
        .incidents()
        .apply_manual(
            now,
            actor,
            |k| {
                let holds = manual::open_incidents_held(k, target);
                manual::silence(k, target, seconds, reason, actor, now)
                    .map(|(plan, same)| (plan, (same, holds)))
            },
            words::line,
        )
        .await??;
    let id = same
        .or(applied.silences.first().copied())
        .ok_or_else(|| ActionError::Internal(anyhow::anyhow!("the silence was not recorded")))?;
    Ok(SilenceMade { id, holds })
}

/// Ends silences by number, of an incident, or of a matcher; how many.
pub async fn unsilence(
    store: &Store,
    settings: &Settings,
    reference: &str,
    operator: &Operator,
    now: i64,
) -> Result<usize, ActionError> {
    let actor = operator.actor();
    let policy = Policy::from_settings(settings, words::line);
    let (_, n) = store
        .incidents()
        .apply_manual(
            now,
            actor,
            |k| {
                let plan = manual::unsilence(k, reference, &policy, now)?;
                let n = plan.unsilence.len();
                Ok((plan, n))
            },
            words::line,
        )
        .await??;
    Ok(n)
}

/// Resolves an incident by hand, with a reason.
pub async fn resolve(
    store: &Store,
    settings: &Settings,
    reference: &str,
    reason: &str,
    operator: &Operator,
    now: i64,
) -> Result<Incident, ActionError> {
    let actor = operator.actor();
    let policy = Policy::from_settings(settings, words::line);
    let how = Resolution::ByHand {
        reason: reason.to_string(),
        by: actor.to_string(),
    };
    plan_and_reread(store, reference, (actor, now), |k| {
        manual::resolve(k, reference, how, &policy, now)
    })
    .await
}

/// Applies the plan one action makes of the incident `reference` names; the incident as it is
/// after.
async fn plan_and_reread(
    store: &Store,
    reference: &str,
    (actor, now): (&str, i64),
    planner: impl FnOnce(&Known) -> Result<Plan, Refusal>,
) -> Result<Incident, ActionError> {
    store
        .incidents()
        .apply_manual(now, actor, |k| Ok((planner(k)?, ())), words::line)
        .await??;
    reread(store, id_of(store, reference).await?).await
}

/// "Not a regression": resolved with the reason and silenced for 30 days.
pub async fn not_a_regression(
    store: &Store,
    settings: &Settings,
    reference: &str,
    reason: &str,
    operator: &Operator,
    now: i64,
) -> Result<Incident, ActionError> {
    let actor = operator.actor();
    let policy = Policy::from_settings(settings, words::line);
    plan_and_reread(store, reference, (actor, now), |k| {
        manual::not_a_regression(k, reference, reason, &policy, now)
    })
    .await
}

/// Accepts a level for an incident (planned by `manual::accept`); the incident as it is after.
pub async fn accept(
    store: &Store,
    reference: &str,
    a: &manual::Accept,
    operator: &Operator,
    now: i64,
) -> Result<Incident, ActionError> {
    let actor = operator.actor();
    plan_and_reread(store, reference, (actor, now), |k| {
        manual::accept(k, reference, a, actor, now, words::line)
    })
    .await
}

/// Files the incident's Jira issue now, ignoring the per-cycle cap.
pub(crate) async fn file_now(
    store: &Store,
    settings: &Settings,
    reference: &str,
    operator: &Operator,
    now: i64,
) -> Result<Incident, ActionError> {
    let actor = operator.actor();
    let enabled = settings.jira.enabled();
    plan_and_reread(store, reference, (actor, now), |k| {
        manual::file_now(k, reference, enabled)
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::Operator;
    use crate::config::SlackSettings;

    #[tokio::test]
    async fn a_slack_operator_is_recorded_by_their_id_and_name_and_no_one_else_is_one() {
        let slack = SlackSettings {
            authorized_users: vec!["UOPS".into()],
            ..Default::default()
        };

        let op = Operator::authorize(&slack, None, "UOPS", "alice.smith")
            .await
            .expect("a configured user is an operator");
        assert_eq!(op.user(), "UOPS");
        assert_eq!(op.actor(), "slack:UOPS (alice.smith)");
        let nameless = Operator::authorize(&slack, None, "UOPS", " ")
            .await
            .unwrap();
        assert_eq!(nameless.actor(), "slack:UOPS");

        assert!(
            Operator::authorize(&slack, None, "UOTHER", "alice.smith")
                .await
                .is_none()
        );
        assert_eq!(Operator::local_named("bob").actor(), "cli:bob");
    }
}
