-- Up Migration

-- Every change made through the management API, and by whom (docs/operations.md, "Audit log"): written in the same
-- transaction as the change it records, so a change is never without its entry nor an entry without its change.
-- `api_key_id` is the key that made the change; `action` is `<resource>.<verb>` (template.update, suppression.remove);
-- `target` names the object (a template's slug, an address, an endpoint's or a key's id); `detail` holds what changed.
-- Rows are only ever inserted; notifyctl reads them newest first, a keyset page at a time.
CREATE TABLE audit_events (
  id              bigserial PRIMARY KEY,
  organization_id bigint NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  project_id      bigint NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  api_key_id      bigint NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
  action          text NOT NULL CHECK (action ~ '^[a-z_]+\.[a-z_]+$'),
  target          text NOT NULL,
  detail          jsonb NOT NULL DEFAULT '{}',
  created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX audit_events_organization_idx ON audit_events (organization_id, id DESC);

-- Down Migration
DROP TABLE audit_events;
