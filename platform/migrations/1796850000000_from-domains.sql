-- Up Migration

-- Sending from the organization's own domains (docs/contract.md, "Sending from your own domains"). A send may name
-- its From; the message keeps it, so that a scheduled send, a retry or a requeue goes out From the same address. A key
-- may be limited to some of the organization's domains: an empty list is no limit (every key made before).
ALTER TABLE messages
  ADD COLUMN from_address text,
  ADD COLUMN from_name    text,
  ADD CONSTRAINT messages_from_named CHECK (from_name IS NULL OR from_address IS NOT NULL);
ALTER TABLE api_keys
  ADD COLUMN from_domains text[] NOT NULL DEFAULT '{}' CHECK (from_domains::text = lower(from_domains::text));

-- Down Migration

ALTER TABLE api_keys DROP COLUMN from_domains;
ALTER TABLE messages DROP CONSTRAINT messages_from_named, DROP COLUMN from_name, DROP COLUMN from_address;
