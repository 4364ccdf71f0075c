-- A cycle reads only its windows' days, however long the history. SQLite looks each cell up by
-- the key of cell_days (backend, variant, then day), so it needs no index of its own; this
-- version keeps both engines' schema versions in step with PostgreSQL's day index.
SELECT 1;
