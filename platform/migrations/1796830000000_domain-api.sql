-- Up Migration

-- Sending domains over the public API (docs/contract.md, "Sending domains over the API"). Each DKIM record has a
-- verification state, set by dispatch-svc's verifier when it looks the record up in DNS: `pending` until then,
-- `verified` when the published key is the one stored, `failed` with why. `verify_requested_at` is the verifier's
-- queue: set by POST .../verify, cleared when the look-up ran. A rotation keeps its new key in the `next_` columns
-- beside the signing one (sealed like it, `dkim:<domain>` as associated data) until its record verifies; then it
-- replaces the signing key, so mail is never signed with a key receivers cannot find.
ALTER TABLE sending_domains
  ADD COLUMN dkim_status             text NOT NULL DEFAULT 'pending' CHECK (dkim_status IN ('pending', 'verified', 'failed')),
  ADD COLUMN dkim_checked_at         timestamptz,
  ADD COLUMN dkim_failure            text CHECK (dkim_failure IN ('record_missing', 'key_mismatch', 'lookup_failed')),
  ADD COLUMN next_selector           text CHECK (next_selector ~ '^[a-z0-9-]{1,63}$' AND next_selector <> selector),
  ADD COLUMN next_public_key         text,
  ADD COLUMN next_sealed_private_key text,
  ADD COLUMN next_status             text CHECK (next_status IN ('pending', 'verified', 'failed')),
  ADD COLUMN next_checked_at         timestamptz,
  ADD COLUMN next_failure            text CHECK (next_failure IN ('record_missing', 'key_mismatch', 'lookup_failed')),
  ADD COLUMN verify_requested_at     timestamptz,
  ADD CONSTRAINT sending_domains_next_complete CHECK (
    (next_selector IS NULL) = (next_public_key IS NULL) AND (next_selector IS NULL) = (next_sealed_private_key IS NULL)
    AND (next_selector IS NULL) = (next_status IS NULL)
  );
CREATE INDEX sending_domains_verify_requested_idx ON sending_domains (verify_requested_at) WHERE verify_requested_at IS NOT NULL;

-- Down Migration
DROP INDEX sending_domains_verify_requested_idx;
ALTER TABLE sending_domains
  DROP CONSTRAINT sending_domains_next_complete,
  DROP COLUMN dkim_status,
  DROP COLUMN dkim_checked_at,
  DROP COLUMN dkim_failure,
  DROP COLUMN next_selector,
  DROP COLUMN next_public_key,
  DROP COLUMN next_sealed_private_key,
  DROP COLUMN next_status,
  DROP COLUMN next_checked_at,
  DROP COLUMN next_failure,
  DROP COLUMN verify_requested_at;
