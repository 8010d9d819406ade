-- Up Migration

-- Every change of a message's state writes a new entry in each of its indexes: PostgreSQL 15 updates a row in place
-- (HOT, no index entry) only when no indexed column, expression or partial-index predicate changes, and every state
-- change moves `state` and `updated_at`. notifyctl's listing (ListMessages, ListDeadLetters) reads through the status
-- API's and the panel's indexes, newest first by (created_at, id) (dispatch-svc/src/messages/message-list.ts), so its
-- own two by id go: 2 index entries fewer per state change, 9 indexes left (docs/benchmark.md, "Indexes written per
-- state change").
--
-- Full HOT is not taken: it would need no index to name `state` or `updated_at`, and three do, each for a promise a
-- scan by created_at cannot keep bounded: messages_project_state_created_idx lets a page of a rare state (failed) read
-- only the rows it shows, messages_project_updated_idx lets the overview find a day's changes among a project's whole
-- history, and messages_retention_idx lets a purge batch read its rows and no more, when a message's last change comes
-- any time after its acceptance (a scheduled send, days of retries, a late bounce report, a re-queued failure). Nor a
-- fillfactor: with no state change HOT, room on the page saves the heap only 9% of its WAL per update (measured at
-- fillfactor 90), for a table a tenth larger at rest.
DROP INDEX messages_project_id_idx;
DROP INDEX messages_project_state_idx;

-- Down Migration
CREATE INDEX messages_project_state_idx ON messages (project_id, state, id DESC);
CREATE INDEX messages_project_id_idx ON messages (project_id, id DESC);
