-- Up Migration

-- Test keys (notifyctl key create --test; their prefix is `nk_test_`, which is how auth-svc tells them apart): a message
-- sent with one goes through every check and the whole lifecycle, but the mailer never hands it to SMTP (it ends `sent`
-- with a synthetic reply) and it is never counted against the monthly quota. Marked here so that the status API and the
-- panel say so, and so that a re-queued test message stays one.
ALTER TABLE messages ADD COLUMN test boolean NOT NULL DEFAULT false;

-- Down Migration
ALTER TABLE messages DROP COLUMN test;
