-- Up Migration
-- An Idempotency-Key on a batch (POST /api/v1/send/batch/) records the batch's whole answer, which belongs to no one
-- message: such a record has no message_id. Keys stay shared with single sends (one primary key), so a key used by a
-- send and by a batch is a mismatch.
ALTER TABLE idempotency_keys ALTER COLUMN message_id DROP NOT NULL;

-- Down Migration
DELETE FROM idempotency_keys WHERE message_id IS NULL;
ALTER TABLE idempotency_keys ALTER COLUMN message_id SET NOT NULL;
