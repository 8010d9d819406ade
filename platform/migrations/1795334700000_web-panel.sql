-- Up Migration

-- auth-svc owns panel_users: the people of an organization who sign in to the web panel. The password is kept as an
-- scrypt hash (memory-hard) with its own random salt and the cost parameters it was made with, so the parameters can
-- be raised later and old hashes still verify (and are upgraded at the next sign-in). The email is what a person signs
-- in with, so it is unique across organizations, stored lower-cased.
CREATE TABLE panel_users (
  id                  bigserial PRIMARY KEY,
  organization_id     bigint NOT NULL REFERENCES organizations (id),
  email               text NOT NULL UNIQUE CHECK (email = lower(email) AND length(email) BETWEEN 3 AND 254),
  role                text NOT NULL CHECK (role IN ('viewer', 'operator')),
  password_hash       bytea NOT NULL CHECK (length(password_hash) >= 32),
  password_salt       bytea NOT NULL CHECK (length(password_salt) >= 16),
  scrypt_n            integer NOT NULL CHECK (scrypt_n >= 16384),
  scrypt_r            integer NOT NULL CHECK (scrypt_r >= 8),
  scrypt_p            integer NOT NULL CHECK (scrypt_p >= 1),
  created_at          timestamptz NOT NULL DEFAULT now(),
  -- Sessions opened before this time are refused: a new password signs the user out everywhere.
  password_changed_at timestamptz NOT NULL DEFAULT now(),
  disabled_at         timestamptz
);
CREATE INDEX panel_users_organization_idx ON panel_users (organization_id);

-- dispatch-svc: the content of every template version. `templates` holds only the current version, but a message
-- keeps the version it was accepted with, and the panel renders that message's subject from exactly that version.
-- A trigger records each version as it is written, so no writer of `templates` can forget to; versions are immutable.
CREATE TABLE template_versions (
  template_id      bigint NOT NULL REFERENCES templates (id) ON DELETE CASCADE,
  version          integer NOT NULL,
  subject          text NOT NULL,
  html             text NOT NULL,
  text             text NOT NULL,
  variables_schema jsonb,
  created_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (template_id, version)
);

CREATE FUNCTION record_template_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO template_versions (template_id, version, subject, html, text, variables_schema, created_at)
  VALUES (NEW.id, NEW.version, NEW.subject, NEW.html, NEW.text, NEW.variables_schema, NEW.updated_at)
  ON CONFLICT (template_id, version) DO NOTHING;
  RETURN NULL;
END
$$;

CREATE TRIGGER templates_record_version
  AFTER INSERT OR UPDATE OF version ON templates
  FOR EACH ROW EXECUTE FUNCTION record_template_version();

-- Versions written before this migration: only the current one's content still exists.
INSERT INTO template_versions (template_id, version, subject, html, text, variables_schema, created_at)
SELECT id, version, subject, html, text, variables_schema, updated_at FROM templates;

-- The panel's message list: newest first by (created_at, id), a page at a time by keyset, each filter with an index
-- that starts with the project and the filtered column, so a page reads only the rows it shows.
CREATE INDEX messages_project_created_idx ON messages (project_id, created_at DESC, id DESC);
CREATE INDEX messages_project_state_created_idx ON messages (project_id, state, created_at DESC, id DESC);
CREATE INDEX messages_project_template_created_idx ON messages (project_id, template_slug, created_at DESC, id DESC);
CREATE INDEX messages_project_recipient_created_idx ON messages (project_id, lower(recipient), created_at DESC, id DESC);
-- The panel's overview counts what happened to a project's messages in the last day: every message that moved in
-- that time has its updated_at in it, and its deferrals (a message can be deferred several times, so they are
-- counted from its events) are found through a small partial index.
CREATE INDEX messages_project_updated_idx ON messages (project_id, updated_at);
CREATE INDEX message_events_deferred_idx ON message_events (occurred_at) WHERE state = 'deferred';

-- Down Migration
DROP INDEX message_events_deferred_idx;
DROP INDEX messages_project_updated_idx;
DROP INDEX messages_project_recipient_created_idx;
DROP INDEX messages_project_template_created_idx;
DROP INDEX messages_project_state_created_idx;
DROP INDEX messages_project_created_idx;
DROP TRIGGER templates_record_version ON templates;
DROP FUNCTION record_template_version();
DROP TABLE template_versions;
DROP TABLE panel_users;
