-- Up Migration

-- auth-svc owns plans, organizations, projects and api_keys.
CREATE TABLE plans (
  id            bigserial PRIMARY KEY,
  name          text NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 100),
  monthly_quota bigint NOT NULL DEFAULT 0 CHECK (monthly_quota >= 0), -- 0: unlimited
  suspended     boolean NOT NULL DEFAULT false,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE organizations (
  id         bigserial PRIMARY KEY,
  name       text NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 200),
  plan_id    bigint NOT NULL REFERENCES plans (id),
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE projects (
  id              bigserial PRIMARY KEY,
  organization_id bigint NOT NULL REFERENCES organizations (id),
  name            text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  created_at      timestamptz NOT NULL DEFAULT now(),
  UNIQUE (organization_id, name)
);

-- Keys are `prefix.secret`; only SHA-256 of the secret is kept. The prefix is public and indexed for lookup.
CREATE TABLE api_keys (
  id           bigserial PRIMARY KEY,
  project_id   bigint NOT NULL REFERENCES projects (id),
  name         text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  prefix       text NOT NULL UNIQUE,
  secret_hash  bytea NOT NULL CHECK (length(secret_hash) = 32),
  send_rate    text,
  created_at   timestamptz NOT NULL DEFAULT now(),
  revoked_at   timestamptz,
  last_used_at timestamptz
);
CREATE INDEX api_keys_project_idx ON api_keys (project_id);

-- dispatch-svc owns templates, messages, message_events, idempotency_keys and outbox.
CREATE TABLE templates (
  id               bigserial PRIMARY KEY,
  project_id       bigint NOT NULL REFERENCES projects (id),
  slug             text NOT NULL CHECK (slug ~ '^[A-Za-z0-9_-]{1,100}$'),
  version          integer NOT NULL DEFAULT 1 CHECK (version >= 1),
  active           boolean NOT NULL DEFAULT false,
  subject          text NOT NULL,
  html             text NOT NULL,
  text             text NOT NULL,
  variables_schema jsonb,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  UNIQUE (project_id, slug)
);

CREATE TYPE message_state AS ENUM ('queued', 'sending', 'deferred', 'sent', 'failed');

CREATE TABLE messages (
  id                 bigserial PRIMARY KEY,
  project_id         bigint NOT NULL REFERENCES projects (id),
  organization_id    bigint NOT NULL REFERENCES organizations (id),
  api_key_id         bigint NOT NULL REFERENCES api_keys (id),
  template_id        bigint NOT NULL REFERENCES templates (id),
  template_slug      text NOT NULL,
  template_version   integer NOT NULL,
  recipient          text NOT NULL,
  data               jsonb NOT NULL,
  state              message_state NOT NULL DEFAULT 'queued',
  -- Ordering key of the last applied event: (attempt, rank of state). Events with a lower key never apply.
  state_attempt      integer NOT NULL DEFAULT 0,
  celery_task_id     uuid NOT NULL UNIQUE,
  idempotency_key    uuid,
  attempts           integer NOT NULL DEFAULT 0,
  last_smtp_code     integer,
  last_smtp_response text,
  failure_reason     text,
  created_at         timestamptz NOT NULL DEFAULT now(),
  updated_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX messages_project_id_idx ON messages (project_id, id DESC);
CREATE INDEX messages_project_state_idx ON messages (project_id, state, id DESC);

CREATE TABLE message_events (
  id            bigserial PRIMARY KEY,
  message_id    bigint NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
  state         message_state NOT NULL,
  attempt       integer NOT NULL,
  smtp_code     integer,
  smtp_response text,
  reason        text,
  occurred_at   timestamptz NOT NULL,
  recorded_at   timestamptz NOT NULL DEFAULT now(),
  -- An event delivered twice is recorded once.
  UNIQUE (message_id, attempt, state)
);

CREATE TABLE idempotency_keys (
  project_id      bigint NOT NULL REFERENCES projects (id),
  idempotency_key uuid NOT NULL,
  fingerprint     text NOT NULL,
  message_id      bigint NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
  response        jsonb NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  expires_at      timestamptz NOT NULL,
  PRIMARY KEY (project_id, idempotency_key)
);
CREATE INDEX idempotency_keys_expires_idx ON idempotency_keys (expires_at);

-- A row exists until its job is confirmed by JetStream; the relay republishes rows left behind.
CREATE TABLE outbox (
  message_id   bigint PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
  payload      jsonb NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  attempts     integer NOT NULL DEFAULT 0,
  last_error   text
);
CREATE INDEX outbox_created_idx ON outbox (created_at);

-- Down Migration
DROP TABLE outbox;
DROP TABLE idempotency_keys;
DROP TABLE message_events;
DROP TABLE messages;
DROP TYPE message_state;
DROP TABLE templates;
DROP TABLE api_keys;
DROP TABLE projects;
DROP TABLE organizations;
DROP TABLE plans;
