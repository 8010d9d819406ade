-- Up Migration

-- Grants an organization up to `wanted` more messages in the current month (UTC, from the transaction's now(), as
-- messages.created_at) under `quota` (0 = unlimited), counts them and returns how many it granted. dispatch-svc
-- accepts concurrent sends in batches and calls this once per organization and batch, in organization order. The row
-- stays locked until the transaction ends, so concurrent batches are counted one after the other and the quota is
-- never overshot.
CREATE FUNCTION notify_grant_usage(organization bigint, wanted integer, quota bigint) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  this_month date := date_trunc('month', now() AT TIME ZONE 'UTC')::date;
  used bigint;
  granted integer;
BEGIN
  INSERT INTO organization_usage (organization_id, month, accepted) VALUES (organization, this_month, 0)
  ON CONFLICT (organization_id, month) DO NOTHING;
  SELECT accepted INTO used FROM organization_usage WHERE organization_id = organization AND month = this_month FOR UPDATE;
  granted := CASE WHEN quota = 0 THEN wanted ELSE least(wanted, greatest(quota - used, 0))::integer END;
  IF granted > 0 THEN
    UPDATE organization_usage SET accepted = accepted + granted WHERE organization_id = organization AND month = this_month;
  END IF;
  RETURN granted;
END
$$;

-- Down Migration
DROP FUNCTION notify_grant_usage(bigint, integer, bigint);
