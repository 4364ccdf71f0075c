//! The checks of the whole configuration, in the order they run: every numeric setting's range in
//! one table, the URLs, each section's own checks; and what a half-configured Slack or Jira lacks.

use super::{ConfigError, DAY, HOUR, JiraApi, Secret, Settings};

/// The error for a setting `key` that is wrong, and why.
fn invalid(key: &str, why: &str) -> Result<(), ConfigError> {
    Err(ConfigError::Invalid(format!("`{key}`: {why}")))
}

impl Settings {
    /// Every number within a range sheriff works with: a value that passes here never makes
    /// a date, a timer or an allocation overflow later.
    // Long: one table of every numeric setting with its range, read in one place.
    fn validate_ranges(&self) -> Result<(), ConfigError> {
        const YEARS: u64 = 36_500;
        let (e, r, o) = (&self.evaluate, &self.retention, &self.outbox);
        let bq = &self.bigquery;
        let whole: [(&str, u64, u64, u64); 49] = [
            (
                "database.max_connections",
                self.database.max_connections.into(),
                1,
                10_000,
            ),
            (
                "database.acquire_timeout_secs",
                self.database.acquire_timeout_secs,
                1,
                HOUR,
            ),
            (
                "database.statement_timeout_secs",
                self.database.statement_timeout_secs,
                1,
                DAY,
            ),
            (
                "ingest.push_store_timeout_secs",
                self.ingest.push_store_timeout_secs,
                1,
                HOUR,
            ),
            (
                "server.max_body_bytes",
                self.server.max_body_bytes as u64,
                1,
                1 << 30,
            ),
            (
                "server.slack_max_body_bytes",
                self.server.slack_max_body_bytes as u64,
                1_024,
                16 << 20,
            ),
            (
                "server.header_timeout_secs",
                self.server.header_timeout_secs,
                1,
                DAY,
            ),
            (
                "server.idle_timeout_secs",
                self.server.idle_timeout_secs,
                1,
                DAY,
            ),
            (
                "server.request_timeout_secs",
                self.server.request_timeout_secs,
                1,
                DAY,
            ),
            (
                "server.max_connection_secs",
                self.server.max_connection_secs,
                1,
                7 * DAY,
            ),
            (
                "server.max_connections",
                self.server.max_connections as u64,
                1,
                100_000,
            ),
            (
                "ingest.max_interval_file_bytes",
                self.ingest.max_interval_file_bytes,
                1,
                1 << 32,
            ),
            (
                "ingest.max_file_bytes",
                self.ingest.max_file_bytes,
                1,
                1 << 32,
            ),
            (
                "ingest.concurrency",
                self.ingest.concurrency as u64,
                1,
                1_024,
            ),
            (
                "ingest.push_concurrency",
                self.ingest.push_concurrency as u64,
                1,
                1_024,
            ),
            ("gcs.concurrency", self.gcs.concurrency as u64, 1, 1_024),
            ("gcs.timeout_secs", self.gcs.timeout_secs, 1, HOUR),
            ("gcs.max_attempts", self.gcs.max_attempts.into(), 1, 100),
            ("bigquery.max_bytes_billed", bq.max_bytes_billed, 1, 1 << 50),
            (
                "bigquery.overlap_hours",
                bq.overlap_hours.into(),
                0,
                24 * 366,
            ),
            ("bigquery.page_rows", bq.page_rows.into(), 1, 100_000),
            (
                "bigquery.max_response_bytes",
                bq.max_response_bytes,
                1_024,
                1 << 31,
            ),
            ("bigquery.timeout_secs", bq.timeout_secs, 1, HOUR),
            ("bigquery.max_attempts", bq.max_attempts.into(), 1, 100),
            (
                "bigquery.max_interval_rows",
                bq.max_interval_rows,
                1,
                10_000_000,
            ),
            (
                "slack.min_post_interval_ms",
                self.slack.min_post_interval_ms,
                0,
                600_000,
            ),
            (
                "jira.max_created_per_cycle",
                self.jira.max_created_per_cycle as u64,
                0,
                10_000,
            ),
            (
                "jira.reopen_window_days",
                self.jira.reopen_window_days.into(),
                0,
                YEARS,
            ),
            (
                "release_controller.timeout_secs",
                self.release_controller.timeout_secs,
                1,
                HOUR,
            ),
            (
                "attribute.evidence_runs",
                self.attribute.evidence_runs as u64,
                0,
                1_000,
            ),
            ("evaluate.window_days", e.window_days.into(), 1, 366),
            ("evaluate.baseline_days", e.baseline_days.into(), 1, 3_660),
            ("evaluate.min_job_runs", e.min_job_runs, 1, 1_000_000),
            ("evaluate.min_recent_runs", e.min_recent_runs, 1, 1_000_000),
            ("evaluate.clear_after", e.clear_after.into(), 0, 10_000),
            (
                "evaluate.historical_min_runs",
                e.historical_min_runs,
                0,
                1_000_000,
            ),
            (
                "evaluate.min_history_days",
                e.min_history_days.into(),
                0,
                3_660,
            ),
            (
                "evaluate.recovery_min_runs",
                e.recovery_min_runs as u64,
                0,
                1_000_000,
            ),
            ("evaluate.fix_min_runs", e.fix_min_runs, 0, 1_000_000),
            (
                "evaluate.reference_lookback_days",
                e.reference_lookback_days.into(),
                0,
                3_660,
            ),
            ("evaluate.sample_worst", e.sample_worst as u64, 0, 1_000),
            ("evaluate.sample_typical", e.sample_typical as u64, 0, 1_000),
            (
                "evaluate.min_support_runs",
                e.min_support_runs,
                0,
                1_000_000,
            ),
            ("retention.samples_days", r.samples_days.into(), 1, YEARS),
            ("outbox.max_attempts", o.max_attempts.into(), 1, 1_000),
            ("outbox.backoff_base_secs", o.backoff_base_secs, 0, DAY),
            ("outbox.backoff_max_secs", o.backoff_max_secs, 0, 7 * DAY),
            ("outbox.lease_secs", o.lease_secs, 1, DAY),
            (
                "outbox.evaluate_timeout_secs",
                o.evaluate_timeout_secs,
                1,
                DAY,
            ),
        ];

        for (key, value, min, max) in whole {
            if !(min..=max).contains(&value) {
                return Err(ConfigError::Invalid(format!(
                    "`{key}`: must be between {min} and {max}"
                )));
            }
        }

        let seconds: [(&str, f64, f64, f64); 4] = [
            ("slack.timeout_secs", self.slack.timeout_secs, 0.01, 600.0),
            ("jira.timeout_secs", self.jira.timeout_secs, 0.01, 600.0),
            (
                "evaluate.min_effect_seconds",
                e.min_effect_seconds,
                0.0,
                DAY as f64,
            ),
            (
                "evaluate.min_effect_ratio",
                e.min_effect_ratio,
                1.0,
                1_000.0,
            ),
        ];

        for (key, value, min, max) in seconds {
            // NaN is in no range
            if !(min..=max).contains(&value) {
                return Err(ConfigError::Invalid(format!(
                    "`{key}`: must be between {min} and {max}"
                )));
            }
        }

        if let Some(d) = self
            .schedule
            .ingest
            .iter()
            .find(|i| u64::from(i.since_days) > YEARS)
        {
            return Err(ConfigError::Invalid(format!(
                "`schedule.ingest.since_days`: {}: must be at most {YEARS}",
                d.source
            )));
        }

        Ok(())
    }

    /// The URLs sheriff links to or calls: http(s) with a host; https where a credential is
    /// sent, except to this machine (a local proxy or a test's fake).
    fn validate_urls(&self) -> Result<(), ConfigError> {
        let credentials = |s: &Option<Secret>| s.is_some();
        let urls: Vec<(String, &str, bool)> = [
            (
                "gcs.api_url".to_string(),
                self.gcs.api_url.as_str(),
                credentials(&self.gcs.token),
            ),
            (
                "bigquery.api_url".to_string(),
                self.bigquery.api_url.as_str(),
                credentials(&self.bigquery.token),
            ),
            (
                "slack.api_url".to_string(),
                self.slack.api_url.as_str(),
                credentials(&self.slack.bot_token),
            ),
            (
                "jira.url".to_string(),
                self.jira.url.as_str(),
                credentials(&self.jira.token),
            ),
            (
                "github.api_url".to_string(),
                self.github.api_url.as_str(),
                credentials(&self.github.token),
            ),
            (
                "server.public_url".to_string(),
                self.server.public_url.as_str(),
                false,
            ),
            (
                "slack.workspace_url".to_string(),
                self.slack.workspace_url.as_str(),
                false,
            ),
        ]
        .into_iter()
        .chain(self.release_controller.urls.iter().map(|(arch, url)| {
            (
                format!("release_controller.urls.{arch}"),
                url.as_str(),
                false,
            )
        }))
        .collect();

        let optional = ["jira.url", "server.public_url", "slack.workspace_url"];
        for (key, url, secret) in urls {
            if url.is_empty() && optional.contains(&key.as_str()) {
                continue;
            }
            if let Err(why) = check_url(url, secret) {
                return Err(ConfigError::Invalid(format!("`{key}`: {why}")));
            }
        }

        Ok(())
    }

    /// Checks what types alone cannot. The first problem found is the error, so the order of
    /// the checks is part of what `config check` says.
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if let Err(why) = crate::config::cron::Schedule::parse("0 0 * * *", &self.schedule.timezone)
        {
            return invalid("schedule.timezone", &why.to_string());
        }
        self.validate_ranges()?;
        self.evaluate.validate_trouble_and_limits()?;
        self.validate_urls()?;
        self.validate_services()?;
        self.retention
            .validate(&self.evaluate, &self.schedule.timezone)?;
        self.github.validate()?;
        self.bigquery.validate_intervals_table()?;
        self.validate_evaluation()?;
        self.validate_schedules()?;
        if let Err(e) = tracing_subscriber::EnvFilter::try_new(&self.log.level) {
            return invalid("log.level", &format!("not a tracing filter: {e}"));
        }
        Ok(())
    }

    /// The database, the server, the ingest and GCS, Jira, the outbox and Slack's routes.
    fn validate_services(&self) -> Result<(), ConfigError> {
        if self.database.max_connections == 0 {
            return invalid("database.max_connections", "must be at least 1");
        }
        if self.server.listen.parse::<std::net::SocketAddr>().is_err() {
            return invalid("server.listen", "must be an address like 127.0.0.1:8080");
        }
        if self.ingest.concurrency == 0 {
            return invalid("ingest.concurrency", "must be at least 1");
        }
        if self.gcs.concurrency == 0 {
            return invalid("gcs.concurrency", "must be at least 1");
        }
        if !self.jira.url.is_empty() && self.jira.project.is_empty() {
            return invalid(
                "jira.project",
                "a project key is needed when jira.url is set",
            );
        }
        for band in self.jira.priorities.keys() {
            if !crate::model::regression::SEVERITY_BANDS.contains(&band.as_str()) {
                return invalid(
                    "jira.priorities",
                    "keys are the severity bands <2x, 2-5x, 5-10x, >=10x",
                );
            }
        }
        if self.outbox.max_attempts == 0 || self.outbox.lease_secs == 0 {
            return invalid(
                "outbox.max_attempts",
                "attempts and lease must be at least 1",
            );
        }
        if self.slack.routes.iter().any(|r| r.channel.is_empty()) {
            return invalid("slack.routes", "every route needs a channel");
        }
        Ok(())
    }

    /// The evaluation's windows, false discovery rate, effect, percentiles and runs.
    fn validate_evaluation(&self) -> Result<(), ConfigError> {
        let e = &self.evaluate;
        if e.window_days == 0 || e.baseline_days == 0 {
            return invalid("evaluate.window_days", "windows must be at least one day");
        }
        e.validate_recent()?;
        if !(e.false_discovery_rate > 0.0 && e.false_discovery_rate < 1.0) {
            return invalid("evaluate.false_discovery_rate", "must be between 0 and 1");
        }
        if e.min_effect_ratio < 1.0 || e.min_effect_seconds < 0.0 {
            return invalid(
                "evaluate.min_effect_ratio",
                "the ratio must be at least 1 and the seconds not negative",
            );
        }
        if e.percentiles.is_empty() {
            return invalid(
                "evaluate.percentiles",
                "name at least one of P50, P75, P95, P99",
            );
        }
        if e.min_job_runs == 0 {
            return invalid("evaluate.min_job_runs", "must be at least 1");
        }
        Ok(())
    }

    /// The cron strings of the evaluation and of each ingest.
    fn validate_schedules(&self) -> Result<(), ConfigError> {
        if let Err(why) =
            crate::config::cron::Schedule::parse(&self.schedule.evaluate, &self.schedule.timezone)
        {
            let key = match why {
                crate::config::cron::CronError::TimeZone(_) => "schedule.timezone",
                _ => "schedule.evaluate",
            };
            return invalid(key, &why.to_string());
        }
        for i in &self.schedule.ingest {
            if let Err(why) = crate::config::cron::Schedule::parse(&i.cron, &self.schedule.timezone)
            {
                return invalid("schedule.ingest.cron", &format!("{}: {why}", i.source));
            }
        }
        Ok(())
    }

    /// What is missing for Slack and Jira to work, when either is half configured: one line
    /// per setting to add, naming it. Nothing configured is fine (messages go to the console,
    /// no issues are filed), and so is everything; between the two, `config check` and `serve`
    /// refuse, rather than post nowhere or refuse every slash command without a word.
    pub fn half_configured(&self) -> Vec<String> {
        let (slack, jira) = (&self.slack, &self.jira);
        let mut missing = Vec::new();
        let mut need = |key: &str, how: &str, because: &str| {
            missing.push(format!("`{key}` is missing ({how}): {because}"));
        };

        let token = slack.bot_token.is_some();
        let channel = !slack.channel.is_empty() || !slack.routes.is_empty();
        let signing = slack.signing_secret.is_some();
        if token && slack.channel.is_empty() {
            need(
                "slack.channel",
                "SHERIFF__SLACK__CHANNEL",
                "a Slack bot token is set, but no channel to post incidents to",
            );
        }

        if !token && (channel || signing) {
            let given = if channel {
                "a Slack channel"
            } else {
                "a Slack signing secret"
            };
            need(
                "slack.bot_token",
                "SHERIFF__SLACK__BOT_TOKEN or slack.bot_token_file",
                &format!("{given} is set, but without a bot token nothing is posted"),
            );
        }

        if token && !signing {
            need(
                "slack.signing_secret",
                "SHERIFF__SLACK__SIGNING_SECRET or slack.signing_secret_file",
                "a Slack bot token is set, and `serve` answers the slash command and buttons, \
                 but refuses every request it cannot verify",
            );
        }

        let url = !jira.url.is_empty();
        if !url && (!jira.project.is_empty() || jira.token.is_some()) {
            let given = if jira.token.is_some() {
                "a Jira token"
            } else {
                "a Jira project"
            };
            need(
                "jira.url",
                "SHERIFF__JIRA__URL",
                &format!("{given} is set, but no Jira to file in"),
            );
        }

        if url && jira.token.is_none() {
            need(
                "jira.token",
                "SHERIFF__JIRA__TOKEN or jira.token_file",
                "jira.url is set, but without a token no issue can be filed",
            );
        }

        if url && jira.api == JiraApi::V3 && jira.user.trim().is_empty() {
            need(
                "jira.user",
                "SHERIFF__JIRA__USER",
                "jira.api is \"v3\" (Jira Cloud), which takes the token with the account's email only",
            );
        }

        missing
    }
}

/// What is wrong with a URL setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
enum UrlProblem {
    #[error("must be an http:// or https:// URL")]
    NotHttp,
    #[error("must be an http:// or https:// URL with a host")]
    NoHost,
    /// Plain http to another machine, with a token or secret sent along.
    #[error("must be https:// (a credential is sent to it), or http:// to this machine")]
    CredentialsInClear,
}

/// Whether `url` is an http(s) URL with a host; with `credentials` (a token travels to it),
/// https, or http to this machine only.
fn check_url(url: &str, credentials: bool) -> Result<(), UrlProblem> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err(UrlProblem::NotHttp);
    };
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return Err(UrlProblem::NotHttp);
    }
    // The host as the HTTP client will read it (a `\` ends the authority as a `/` does, so
    // `http://example.com\@localhost` goes to example.com), not as the text seems to say.
    let parsed = reqwest::Url::parse(url).ok();
    let host = parsed
        .as_ref()
        .and_then(|u| u.host_str())
        .filter(|h| !h.is_empty() && !rest.is_empty());
    let Some(host) = host.filter(|_| !url.chars().any(|c| c.is_whitespace() || c.is_control()))
    else {
        return Err(UrlProblem::NoHost);
    };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let local = bare.eq_ignore_ascii_case("localhost")
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    if credentials && scheme == "http" && !local {
        return Err(UrlProblem::CredentialsInClear);
    }
    Ok(())
}

#[cfg(test)]
mod url_tests {
    use super::{UrlProblem, check_url};

    #[test]
    fn a_credential_goes_over_https_or_to_this_machine_only() {
        assert_eq!(
            check_url("http://jira.example.com", true),
            Err(UrlProblem::CredentialsInClear)
        );
        assert_eq!(check_url("http://jira.example.com", false), Ok(()));
        assert_eq!(check_url("http://127.0.0.1:8080", true), Ok(()));
        assert_eq!(check_url("ftp://x", false), Err(UrlProblem::NotHttp));
        assert_eq!(
            check_url("http://example.com\\@localhost x", true),
            Err(UrlProblem::NoHost)
        );
    }
}
