-- A cycle reads only its windows' days, however long the history: PostgreSQL finds a window's
-- cell-days by day (SQLite looks each cell up by its key, backend and variant then day, which
-- needs no index of its own).
CREATE INDEX cell_days_day ON cell_days (day);
