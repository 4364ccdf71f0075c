//! Who did something: the actor an action is recorded as, and how people read it. Pure.

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

/// An actor as people read it: a Slack user by name (`alice`, or `Slack user U012AB` when no
/// name was sent), a command-line user by login (`bob (command line)`), anyone else as
/// recorded (`sheriff`, `jira`).
pub fn person(actor: &str) -> String {
    if let Some(id) = slack_user(actor) {
        let name = actor
            .split_once(" (")
            .map(|(_, n)| n.trim_end_matches(')'))
            .filter(|n| !n.is_empty());
        return name.map_or_else(|| format!("Slack user {id}"), str::to_string);
    }
    match actor.strip_prefix("cli:") {
        Some(login) => format!("{login} (command line)"),
        None => actor.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actors_read_as_people_and_slack_users_keep_their_id() {
        let alice = slack_actor("UTRT1", "alice.smith");
        assert_eq!(alice, "slack:UTRT1 (alice.smith)");
        assert_eq!(
            (slack_user(&alice), person(&alice).as_str()),
            (Some("UTRT1"), "alice.smith")
        );
        assert_eq!(slack_actor("UTRT1", "  "), "slack:UTRT1");
        assert_eq!(person("slack:UTRT1"), "Slack user UTRT1");
        assert_eq!(
            slack_actor("U1", "<@U2> (x)\n"),
            "slack:U1 (U2 x)",
            "no markup or brackets in a name"
        );
        assert_eq!(person("cli:bob"), "bob (command line)");
        assert_eq!(
            (slack_user("cli:bob"), person("sheriff").as_str()),
            (None, "sheriff")
        );
        assert_eq!(slack_user("slack:<!here>"), None);
    }
}
