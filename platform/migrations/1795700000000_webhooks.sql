-- Up Migration

-- Webhook endpoints of a project (docs/contract.md, "Webhooks"). The secret signs every request (Standard Webhooks,
-- `whsec_<base64>`); it must be kept as is to sign, is shown once at creation, and is never logged. After a rotation
-- the previous secret keeps signing beside the new one until `previous_secret_expires_at` (24 h).
CREATE TABLE webhook_endpoints (
  id                         bigserial PRIMARY KEY,
  project_id                 bigint NOT NULL REFERENCES projects (id),
  organization_id            bigint NOT NULL REFERENCES organizations (id),
  url                        text NOT NULL,
  -- Subset of message.sent, message.deferred, message.failed, message.bounced, message.complained, message.unsubscribed.
  event_types                text[] NOT NULL,
  secret                     text NOT NULL,
  previous_secret            text,
  previous_secret_expires_at timestamptz,
  enabled                    boolean NOT NULL DEFAULT true,
  -- Why it was disabled: by an operator, a 410 Gone, or 5 days of failures.
  disabled_reason            text,
  -- Start of the current run of failed attempts (NULL after a success): 5 days of it disable the endpoint.
  failing_since              timestamptz,
  created_at                 timestamptz NOT NULL DEFAULT now(),
  updated_at                 timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_endpoints_project_idx ON webhook_endpoints (project_id) WHERE enabled;

-- One event per state change of a message that endpoints can subscribe to, written in the transaction that applies the
-- change (so none is lost). `id` is the stable `webhook-id` (`evt_<id>`) across every retry; `payload` is the exact
-- body sent; `sequence` grows with each transition of one message. `published_at` is set once the event is on its way
-- (its JetStream publish was confirmed): until then it is the outbox of webhook deliveries.
CREATE TABLE webhook_events (
  id           bigserial PRIMARY KEY,
  project_id   bigint NOT NULL REFERENCES projects (id),
  message_id   bigint NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
  type         text NOT NULL,
  sequence     integer NOT NULL,
  payload      jsonb NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  published_at timestamptz,
  UNIQUE (message_id, sequence)
);
CREATE INDEX webhook_events_unpublished_idx ON webhook_events (created_at) WHERE published_at IS NULL;

-- Where each event stands for each endpoint it goes to.
CREATE TABLE webhook_deliveries (
  event_id        bigint NOT NULL REFERENCES webhook_events (id) ON DELETE CASCADE,
  endpoint_id     bigint NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  state           text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'succeeded', 'failed')),
  attempts        integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz,
  updated_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (event_id, endpoint_id)
);
CREATE INDEX webhook_deliveries_endpoint_idx ON webhook_deliveries (endpoint_id, state);

-- Every attempt, for the attempts log: status code (NULL when no response), latency, the first KiB of the response or
-- the error.
CREATE TABLE webhook_attempts (
  id            bigserial PRIMARY KEY,
  event_id      bigint NOT NULL REFERENCES webhook_events (id) ON DELETE CASCADE,
  endpoint_id   bigint NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  attempt       integer NOT NULL,
  attempted_at  timestamptz NOT NULL DEFAULT now(),
  status_code   integer,
  latency_ms    integer NOT NULL,
  response_body text,
  error         text
);
CREATE INDEX webhook_attempts_endpoint_idx ON webhook_attempts (endpoint_id, attempted_at DESC);
CREATE INDEX webhook_attempts_event_idx ON webhook_attempts (event_id);

-- Down Migration
DROP TABLE webhook_attempts;
DROP TABLE webhook_deliveries;
DROP TABLE webhook_events;
DROP TABLE webhook_endpoints;
