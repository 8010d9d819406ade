-- Up Migration

-- The public API lists a project's suppressions newest first, a keyset page at a time (created_at, address); this
-- index reads a page in order, without a sort, however long the list.
CREATE INDEX suppressions_project_created_idx ON suppressions (project_id, created_at DESC, address DESC);

-- Down Migration
DROP INDEX suppressions_project_created_idx;
