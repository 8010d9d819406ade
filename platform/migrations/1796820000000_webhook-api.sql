-- Up Migration

-- A test event (POST /api/v1/webhooks/{id}/test, type webhook.test) is about no message: it is recorded, published,
-- delivered and logged like any event, with no message_id.
ALTER TABLE webhook_events ALTER COLUMN message_id DROP NOT NULL;

-- Each endpoint of the public API shows its last failed attempt. Failures are few beside successes, so this index
-- holds only them: the latest is one index probe however many attempts succeeded since. Its predicate is the one
-- dispatch-svc's query states (a 2xx answer is a success, as webhook-svc judges it).
CREATE INDEX webhook_attempts_failed_idx ON webhook_attempts (endpoint_id, attempted_at DESC)
  WHERE status_code IS NULL OR status_code NOT BETWEEN 200 AND 299;

-- Down Migration
DROP INDEX webhook_attempts_failed_idx;
DELETE FROM webhook_events WHERE message_id IS NULL;
ALTER TABLE webhook_events ALTER COLUMN message_id SET NOT NULL;
