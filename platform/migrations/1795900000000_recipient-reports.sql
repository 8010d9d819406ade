-- Up Migration

-- Reports that arrive after the relay accepted a message (docs/contract.md, "Recipients that must not be mailed"):
-- `sent` → `bounced` (an asynchronous bounce, RFC 3464) or `complained` (a feedback-loop report, RFC 5965). Both come
-- after `sent` in the lifecycle; dispatch-svc's state machine keeps the order forward-only. (ADD VALUE cannot be used
-- in the transaction that adds it: nothing below uses the new values.)
ALTER TYPE message_state ADD VALUE IF NOT EXISTS 'bounced' AFTER 'sent';
ALTER TYPE message_state ADD VALUE IF NOT EXISTS 'complained' AFTER 'bounced';

-- Whether the template's mails carry RFC 8058 one-click unsubscribe headers. On the template row, like `active`: the
-- operator's choice about how its mails are sent, not part of its content, so toggling it makes no new version.
-- Messages keep the value they were accepted with (in their delivery job's template snapshot).
ALTER TABLE templates ADD COLUMN unsubscribe boolean NOT NULL DEFAULT false;

-- dispatch-svc computes each project's bounce and complaint rates over the last day every minute (the alerts' input)
-- from the day's events of the states it counts and the day's hard-bounce suppressions: these indexes keep each read
-- to those rows.
CREATE INDEX message_events_state_occurred_idx ON message_events (state, occurred_at);
CREATE INDEX suppressions_reason_created_idx ON suppressions (reason, created_at);

-- Down Migration
DROP INDEX suppressions_reason_created_idx;
DROP INDEX message_events_state_occurred_idx;
ALTER TABLE templates DROP COLUMN unsubscribe;
-- PostgreSQL cannot drop an enum value: rows in the new states go back to `sent`, and the type keeps the values.
UPDATE messages SET state = 'sent' WHERE state::text IN ('bounced', 'complained');
DELETE FROM message_events WHERE state::text IN ('bounced', 'complained');
