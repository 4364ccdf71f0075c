-- A cycle reads only its windows' days, however long the history: PostgreSQL finds a window's
-- cell-days by day (SQLite looks each cell up by its key, backend and variant then day, which
-- needs no index of its own).
CREATE INDEX cell_days_day ON cell_days (day);

-- When each variant was first seen, kept by pruning before it deletes old runs (a release's age
-- is told by its first run, which retention may delete).
CREATE TABLE variant_first_seen (
    variant_id BIGINT PRIMARY KEY REFERENCES variants (id),
    started_at BIGINT NOT NULL
);
