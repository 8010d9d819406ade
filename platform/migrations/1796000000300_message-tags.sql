-- Up Migration

-- The caller's own labels on a message (docs/contract.md, "Tags and metadata"): up to 10 tags, to find messages by and
-- route their events, and a flat object of up to 20 string values, carried back in the status API and every webhook
-- event. Both are NOT NULL with a constant default, so a message sent without them reads `{}` and no existing row is
-- rewritten (PostgreSQL 11+ keeps a constant default in the catalogue).
ALTER TABLE messages ADD COLUMN tags text[] NOT NULL DEFAULT '{}';
ALTER TABLE messages ADD COLUMN metadata jsonb NOT NULL DEFAULT '{}';

-- `?tag=` in the status API and the panel: a GIN index answers "the messages of this project with this tag" without
-- reading others. Its keys are `<project_id>:<tag>`, so one tenant's common tag never makes another's lookups wide (a
-- plain GIN on `tags` holds every tenant's "welcome" under one key). Partial, so a message sent without tags (most of
-- them) costs the send nothing here; the listing's statement repeats the predicate so the planner can use the index.
CREATE FUNCTION message_tag_keys(project_id bigint, tags text[]) RETURNS text[]
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  AS $$ SELECT ARRAY(SELECT project_id::text || ':' || tag FROM unnest(tags) AS tag) $$;
CREATE INDEX messages_tag_keys_idx ON messages USING gin (message_tag_keys(project_id, tags)) WHERE tags <> '{}';
-- The planner keeps no statistics for a partial index's expression; these (PostgreSQL 14+) tell it how common each key
-- is, so it reads a rare tag through the index above and a common one in order through messages_project_created_idx,
-- filtered (EXPLAIN in dispatch-svc/src/messages/message-list.test.ts: on 100,000 messages, a tag on 100 of them reads
-- 100 rows, one on 50,000 reads 101).
CREATE STATISTICS messages_tag_keys_stats ON (message_tag_keys(project_id, tags)) FROM messages;

-- Down Migration
DROP STATISTICS messages_tag_keys_stats;
DROP INDEX messages_tag_keys_idx;
DROP FUNCTION message_tag_keys(bigint, text[]);
ALTER TABLE messages DROP COLUMN metadata;
ALTER TABLE messages DROP COLUMN tags;
