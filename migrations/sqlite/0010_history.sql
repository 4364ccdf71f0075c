-- A cycle reads only its windows' days, however long the history. SQLite looks each cell up by
-- the key of cell_days (backend, variant, then day), so it needs no index of its own (PostgreSQL
-- gets one on day).

-- When each variant was first seen, kept by pruning before it deletes old runs (a release's age
-- is told by its first run, which retention may delete).
CREATE TABLE variant_first_seen (
    variant_id BIGINT PRIMARY KEY REFERENCES variants (id),
    started_at BIGINT NOT NULL
);
