-- Up Migration

-- The SMTP relays a project names for itself (notifyctl project update --smtp-url; docs/operations.md, "Relays,
-- failover and routing"): its mail leaves through them instead of the mailers' SMTP_URL, so that transactional and
-- bulk traffic, or two customers, use different relays or IP pools. The list of URLs holds the relays' credentials, so
-- it is stored sealed with NOTIFY_DATA_KEY (AES-256-GCM, `smtp-url:<project id>` as associated data): a database dump
-- alone does not give them away. `relays` is what may be shown of it, each relay's `host:port` in order. A project
-- without a row uses SMTP_URL; clearing its relays deletes the row. dispatch-svc owns the table (auth-svc owns projects).
CREATE TABLE project_relays (
  project_id      bigint PRIMARY KEY REFERENCES projects (id),
  sealed_smtp_url text NOT NULL,
  relays          text[] NOT NULL CHECK (cardinality(relays) > 0),
  updated_at      timestamptz NOT NULL DEFAULT now()
);

-- Down Migration
DROP TABLE project_relays;
