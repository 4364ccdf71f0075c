//! Who did something: the actor an action is recorded as (how people read it is `words`'). Pure.

/// The actor a Slack user's action is recorded as: `slack:<id>`, and their name when Slack
/// sent one (`slack:U012AB (alice)`), cut to what a name is made of.
pub fn slack_actor(id: &str, name: &str) -> String {
    let name: String = name
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '.' | '_' | '-' | ' '))
        .take(60)
        .collect();
    match name.trim() {
        "" => format!("slack:{id}"),
        name => format!("slack:{id} ({name})"),
    }
}

/// The Slack user id of an actor recorded by [`slack_actor`]; None for anyone else.
pub fn slack_user(actor: &str) -> Option<&str> {
    let id = actor.strip_prefix("slack:")?.split(' ').next()?;
    (!id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric())).then_some(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slack_actor_keeps_its_id_and_a_clean_name() {
        let alice = slack_actor("UTRT1", "alice.smith");
        assert_eq!(alice, "slack:UTRT1 (alice.smith)");
        assert_eq!(slack_user(&alice), Some("UTRT1"));
        assert_eq!(slack_actor("UTRT1", "  "), "slack:UTRT1");
        assert_eq!(
            slack_actor("U1", "<@U2> (x)\n"),
            "slack:U1 (U2 x)",
            "no markup or brackets in a name"
        );
        assert_eq!(slack_user("cli:bob"), None);
        assert_eq!(slack_user("slack:<!here>"), None);
    }
}
