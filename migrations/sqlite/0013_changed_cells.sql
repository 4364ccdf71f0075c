-- Which cells each change touched: a JSON array of [variant_id, day] pairs whose rows in
-- `cell_days` the change may have rewritten (every backend of that variant and day). A reader
-- holding answers from before re-reads only those variant-days, and keeps the answers that
-- select none of them as they are. NULL when a change does not list them (pruning, and every
-- change recorded before this column): such a reader re-reads every day from `first_day` on.
ALTER TABLE data_changes ADD COLUMN cells TEXT;
