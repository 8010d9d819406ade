-- Up Migration

-- Templates over the public API (docs/contract.md, "Templates over the API"). The row still holds the content of the
-- version sends use (`version`); a version can now be uploaded without being used, so the newest number is kept apart
-- (`latest_version`) and every new version is numbered from it, never reusing one (record_template_version would
-- silently keep an older content under a reused number).
ALTER TABLE templates ADD COLUMN latest_version integer NOT NULL DEFAULT 1;
UPDATE templates SET latest_version = version;
ALTER TABLE templates ADD CONSTRAINT templates_latest_version_check CHECK (latest_version >= version);

-- The ETag counts the row's changes: a trigger, so that no writer (notifyctl, the panel, the API) can forget it.
ALTER TABLE templates ADD COLUMN revision bigint NOT NULL DEFAULT 1;
CREATE FUNCTION count_template_revision() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.revision := OLD.revision + 1;
  RETURN NEW;
END
$$;
CREATE TRIGGER templates_count_revision BEFORE UPDATE ON templates FOR EACH ROW EXECUTE FUNCTION count_template_revision();

-- A deleted template keeps its row: messages reference it (messages.template_id) and their view reads its versions.
-- Only a live slug is unique, so a deleted one can be created again, as a new template.
ALTER TABLE templates ADD COLUMN deleted_at timestamptz;
ALTER TABLE templates DROP CONSTRAINT templates_project_id_slug_key;
CREATE UNIQUE INDEX templates_project_slug_live_idx ON templates (project_id, slug) WHERE deleted_at IS NULL;

-- Down Migration
DELETE FROM templates t WHERE deleted_at IS NOT NULL AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.template_id = t.id);
DROP INDEX templates_project_slug_live_idx;
ALTER TABLE templates ADD CONSTRAINT templates_project_id_slug_key UNIQUE (project_id, slug);
ALTER TABLE templates DROP COLUMN deleted_at;
DROP TRIGGER templates_count_revision ON templates;
DROP FUNCTION count_template_revision();
ALTER TABLE templates DROP COLUMN revision;
ALTER TABLE templates DROP CONSTRAINT templates_latest_version_check;
ALTER TABLE templates DROP COLUMN latest_version;
