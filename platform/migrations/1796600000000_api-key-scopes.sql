-- Up Migration

-- What a key may do (auth-svc/src/keys/scopes.ts): every key made before scopes existed keeps what it could do, the
-- `sending` preset (send, and read its project's messages). The scopes are stored expanded, never as a preset's name.
ALTER TABLE api_keys ADD COLUMN scopes text[] NOT NULL DEFAULT '{send,messages:read}';
ALTER TABLE api_keys ADD CONSTRAINT api_keys_scopes_known CHECK (
  scopes <@ ARRAY['send', 'messages:read', 'templates:read', 'templates:write', 'suppressions:read', 'suppressions:write',
                  'suppressions:reactivate', 'webhooks:write', 'domains:write', 'stats:read', 'keys:manage']::text[]
  AND cardinality(scopes) > 0
);

-- Down Migration
ALTER TABLE api_keys DROP COLUMN scopes;
