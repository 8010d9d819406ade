-- Up Migration

-- Scheduled sends (docs/contract.md, "Message lifecycle"): a send with `send_at` is accepted as `scheduled`, and moves to
-- `queued` when it is due, or to `canceled` on the caller's request. `scheduled` comes before `queued` in the
-- lifecycle, `canceled` ends it; dispatch-svc's state machine keeps the order forward-only. (ADD VALUE cannot be used
-- in the transaction that adds it: nothing below uses the new values.)
ALTER TYPE message_state ADD VALUE IF NOT EXISTS 'scheduled' BEFORE 'queued';
ALTER TYPE message_state ADD VALUE IF NOT EXISTS 'canceled' AFTER 'complained';

-- When the caller asked the message to be sent; NULL for a message sent at once. Kept after release, so the status
-- API still shows it. Adding a nullable column without a default rewrites nothing.
ALTER TABLE messages ADD COLUMN send_at timestamptz;

-- A row per scheduled message not yet due: its delivery job as accepted (the template version it was accepted with),
-- like an outbox row that must wait. The releaser (dispatch-svc, scheduled/releaser.ts) moves due rows to the outbox
-- in the transaction that queues their messages; a cancel deletes the row in the one that cancels. No row, no job.
CREATE TABLE scheduled_messages (
  message_id  bigint PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
  send_at     timestamptz NOT NULL,
  payload     jsonb NOT NULL
);
CREATE INDEX scheduled_messages_send_at_idx ON scheduled_messages (send_at);

-- Down Migration
DROP TABLE scheduled_messages;
ALTER TABLE messages DROP COLUMN send_at;
-- PostgreSQL cannot drop an enum value: canceled messages, and scheduled ones (whose jobs went with the table), end
-- `failed` with the reason; the type keeps the values.
UPDATE messages SET state = 'failed', failure_reason = 'canceled' WHERE state::text = 'canceled';
UPDATE messages SET state = 'failed', failure_reason = 'scheduled send dropped by a migration rollback' WHERE state::text = 'scheduled';
DELETE FROM message_events WHERE state::text IN ('scheduled', 'canceled');
