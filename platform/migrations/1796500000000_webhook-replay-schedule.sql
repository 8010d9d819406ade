-- Up Migration

-- A replayed delivery gets the whole retry schedule again: `replayed_after` is the number of attempts made before its
-- latest replay, and webhook-svc counts the schedule from there (the attempt numbers themselves keep growing, so the
-- attempts log and each publish's Nats-Msg-Id stay unique). 0 for a delivery never replayed.
ALTER TABLE webhook_deliveries ADD COLUMN replayed_after integer NOT NULL DEFAULT 0;

-- Down Migration
ALTER TABLE webhook_deliveries DROP COLUMN replayed_after;
