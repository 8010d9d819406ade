-- Up Migration

-- A project's delivery statistics (docs/contract.md, "Statistics"), counted as the states change rather than read back
-- from messages: each transition that counts adds to its hour's row in the transaction that applies it, so a year of
-- statistics is 8,760 rows per series read through the primary key whatever the retention purge has deleted since
-- (nothing references messages). One row per (project, tag, UTC hour): tag '' is every message of the project, and a
-- message's tags (at most 10) each have a row too. `hour` is the start of the hour, binned from the epoch, so it does
-- not depend on a session's TimeZone. The counters' meanings are in docs/contract.md; `delivered` goes down in the
-- hour a message was accepted when a bounce about it arrives later. Counters are integers (an hour of one series holds
-- far fewer than 2^31): summing integers into bigint is several times cheaper than summing bigints into numeric.
CREATE TABLE message_stats (
  project_id   bigint NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  tag          text NOT NULL,
  hour         timestamptz NOT NULL CHECK (hour = date_bin('1 hour', hour, timestamptz 'epoch')),
  sent         integer NOT NULL DEFAULT 0,
  delivered    integer NOT NULL DEFAULT 0,
  deferred     integer NOT NULL DEFAULT 0,
  bounced_hard integer NOT NULL DEFAULT 0,
  bounced_soft integer NOT NULL DEFAULT 0,
  complained   integer NOT NULL DEFAULT 0,
  unsubscribed integer NOT NULL DEFAULT 0,
  failed       integer NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, tag, hour)
);

-- Down Migration
DROP TABLE message_stats;
