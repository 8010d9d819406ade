-- Up Migration

-- The domains an organization sends from and their DKIM keys (notifyctl domain; docs/integrators.md). A domain belongs
-- to one organization. The RSA private key is stored sealed with NOTIFY_DATA_KEY (AES-256-GCM, `dkim:<domain>` as
-- associated data): a database dump alone cannot sign mail. `public_key` is the base64 SubjectPublicKeyInfo published
-- in DNS as `p=` of the TXT record at `<selector>._domainkey.<domain>`. The mailers look a key up by `domain`.
CREATE TABLE sending_domains (
  id                 bigserial PRIMARY KEY,
  organization_id    bigint NOT NULL REFERENCES organizations (id),
  domain             text NOT NULL UNIQUE CHECK (domain = lower(domain)),
  selector           text NOT NULL CHECK (selector ~ '^[a-z0-9-]{1,63}$'),
  public_key         text NOT NULL,
  sealed_private_key text NOT NULL,
  created_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sending_domains_organization_idx ON sending_domains (organization_id);

-- Down Migration
DROP TABLE sending_domains;
