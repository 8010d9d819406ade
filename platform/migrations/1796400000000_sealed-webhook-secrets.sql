-- Up Migration

-- Webhook signing secrets sealed at rest: a database dump alone must not let anyone sign requests that integrators
-- trust. `sealed_secret` and `sealed_previous_secret` hold them sealed with NOTIFY_DATA_KEY (AES-256-GCM, with
-- `webhook-secret:<endpoint id>` as associated data, so a value copied to another endpoint's row does not open there);
-- dispatch-svc seals them and only webhook-svc opens them. This migration cannot seal (it runs without the data key):
-- the clear columns stay, nullable, for the rows written before it, which dispatch-svc seals once it runs (at start and
-- periodically, clearing the clear column in the same UPDATE) and webhook-svc signs with until then. Each secret is in
-- one form or the other, never both.
ALTER TABLE webhook_endpoints
  ADD COLUMN sealed_secret text,
  ADD COLUMN sealed_previous_secret text,
  ALTER COLUMN secret DROP NOT NULL,
  ADD CONSTRAINT webhook_endpoints_one_secret CHECK ((secret IS NULL) <> (sealed_secret IS NULL)),
  ADD CONSTRAINT webhook_endpoints_one_previous_secret CHECK (previous_secret IS NULL OR sealed_previous_secret IS NULL);

-- Down Migration
-- Sealed secrets cannot be put back in clear without the data key, which migrations never have: going back is refused
-- while any is stored.
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM webhook_endpoints WHERE sealed_secret IS NOT NULL OR sealed_previous_secret IS NOT NULL) THEN
    RAISE EXCEPTION 'webhook secrets are stored sealed; they cannot be unsealed without NOTIFY_DATA_KEY';
  END IF;
END $$;
ALTER TABLE webhook_endpoints
  DROP CONSTRAINT webhook_endpoints_one_previous_secret,
  DROP CONSTRAINT webhook_endpoints_one_secret,
  ALTER COLUMN secret SET NOT NULL,
  DROP COLUMN sealed_previous_secret,
  DROP COLUMN sealed_secret;
