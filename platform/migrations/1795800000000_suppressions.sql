-- Up Migration

-- Each project's addresses that must not be mailed (docs/contract.md, "Recipients that must not be mailed"): why
-- (hard_bounce, complaint, unsubscribed, manual), since when, and the message that caused it when one did. `address`
-- is normalized as it is compared: the local part as given, the domain in lower case. A send's check is one lookup of
-- this primary key, inside the transaction that accepts it.
CREATE TABLE suppressions (
  project_id bigint NOT NULL REFERENCES projects (id),
  address    text NOT NULL,
  reason     text NOT NULL CHECK (reason IN ('hard_bounce', 'complaint', 'unsubscribed', 'manual')),
  message_id bigint REFERENCES messages (id) ON DELETE SET NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (project_id, address)
);

-- Down Migration
DROP TABLE suppressions;
