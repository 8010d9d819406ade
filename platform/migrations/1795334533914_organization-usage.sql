-- Up Migration

-- dispatch-svc owns organization_usage: messages accepted per organization per calendar month (UTC), the count a
-- plan's monthly quota is enforced against. Incremented in the transaction that accepts the message, so the count and
-- the messages never disagree; replays never count. One row per organization and month keeps the check a key lookup.
CREATE TABLE organization_usage (
  organization_id bigint NOT NULL REFERENCES organizations (id),
  -- First day of the month, in UTC.
  month           date NOT NULL CHECK (extract(day FROM month) = 1),
  accepted        bigint NOT NULL CHECK (accepted >= 0),
  PRIMARY KEY (organization_id, month)
);

-- Messages accepted before this table existed count too, so a quota set on a live system starts from the truth.
INSERT INTO organization_usage (organization_id, month, accepted)
SELECT organization_id, date_trunc('month', created_at AT TIME ZONE 'UTC')::date, count(*)
  FROM messages
 GROUP BY 1, 2;

-- Down Migration
DROP TABLE organization_usage;
