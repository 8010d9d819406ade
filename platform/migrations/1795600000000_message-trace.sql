-- Up Migration

-- The W3C traceparent of the span that created the message's delivery job (dispatch-svc, in the accepting request's
-- trace). Whoever publishes the job later (the outbox relay after a crash or a NATS outage, a re-queue) continues that
-- trace from here, the mailer's spans are its children, and the panel links the message to it. NULL for messages
-- accepted before tracing was carried past the queue. Adding a nullable column without a default rewrites nothing.
ALTER TABLE messages ADD COLUMN traceparent text;

-- Down Migration
ALTER TABLE messages DROP COLUMN traceparent;
