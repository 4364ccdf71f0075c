-- Commits of repositories outside the payload (the CI harness, the step registry, origin's
-- monitor tests) in a regression's onset window, as read from GitHub: fetched once per window,
-- reused (a past window's commits do not change).
CREATE TABLE outside_commits (
    repository TEXT NOT NULL,
    path       TEXT NOT NULL,
    since      BIGINT NOT NULL,
    until      BIGINT NOT NULL,
    body       TEXT NOT NULL,
    fetched_at BIGINT NOT NULL,
    PRIMARY KEY (repository, path, since, until)
);
