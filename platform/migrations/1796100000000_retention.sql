-- Up Migration

-- Message retention (docs/operations.md, "Retention"): dispatch-svc's purge deletes messages in a final state whose
-- last change is older than their organization's retention. An organization's own retention, in whole hours (written
-- `90d` or `36h` by notifyctl); NULL keeps the deployment's NOTIFY_MESSAGE_RETENTION. Nullable without a default:
-- adding it rewrites nothing.
ALTER TABLE organizations ADD COLUMN message_retention_hours integer CHECK (message_retention_hours BETWEEN 1 AND 87600);

-- The purge's batch and the oldest-kept gauge: an organization's final messages, oldest last change first, read in
-- index order so a batch reads its 1,000 rows and no more however large the table (EXPLAIN in
-- dispatch-svc/src/retention/purge.test.ts). Partial: messages still on their way are never candidates, and a final
-- message only enters it once.
CREATE INDEX messages_retention_idx ON messages (organization_id, updated_at)
  WHERE state IN ('sent', 'failed', 'canceled', 'bounced', 'complained');

-- Deleting a message looks up the rows that reference it. Every other such column leads an index already; without
-- these two, each purged message would cost a scan of the idempotency records and of the suppression list.
CREATE INDEX idempotency_keys_message_idx ON idempotency_keys (message_id) WHERE message_id IS NOT NULL;
CREATE INDEX suppressions_message_idx ON suppressions (message_id) WHERE message_id IS NOT NULL;

-- Down Migration
DROP INDEX suppressions_message_idx;
DROP INDEX idempotency_keys_message_idx;
DROP INDEX messages_retention_idx;
ALTER TABLE organizations DROP COLUMN message_retention_hours;
