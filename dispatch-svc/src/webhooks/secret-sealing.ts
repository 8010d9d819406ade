// Webhook signing secrets are stored sealed with NOTIFY_DATA_KEY under their endpoint's id, so that a database dump
// cannot sign webhooks integrators trust; only webhook-svc opens them. Rows written before secrets were sealed (or, in
// a rolling upgrade, by a replica of the previous release) hold them in clear: dispatch-svc seals those at start and
// periodically after, and webhook-svc signs with a clear one until then.
import { type Pool, withTransaction } from '@notify/platform/database';
import { type DataKey, webhookSecretSealContext } from '@notify/platform/mail';

/** `secret` sealed for endpoint `endpointId`: it opens under that endpoint's id only. */
export const sealSecret = (dataKey: DataKey, endpointId: number, secret: string): string => dataKey.seal(secret, webhookSecretSealContext(endpointId));

interface ClearRow {
  readonly id: number;
  readonly secret: string | null;
  readonly previousSecret: string | null;
}

/**
 * Seals every secret still stored in clear, clearing it in the same UPDATE, in one transaction; returns how many
 * endpoints it sealed. Several replicas may run it at once: the rows are locked in id order, and a replica that waited
 * for another's lock finds them sealed (the WHERE is checked again on the row it waited for) and leaves them.
 */
export async function sealClearSecrets(pool: Pool, dataKey: DataKey): Promise<number> {
  return withTransaction(pool, async (client) => {
    const { rows } = await client.query<ClearRow>({
      name: 'webhook-secrets-clear',
      text: `SELECT id, secret, previous_secret AS "previousSecret" FROM webhook_endpoints
              WHERE secret IS NOT NULL OR previous_secret IS NOT NULL ORDER BY id FOR UPDATE`,
    });
    if (rows.length === 0) return 0;
    const sealedOrNull = (row: ClearRow, secret: string | null) => (secret === null ? null : sealSecret(dataKey, row.id, secret));
    await client.query({
      name: 'webhook-secrets-seal',
      text: `UPDATE webhook_endpoints w
                SET sealed_secret = coalesce(s.sealed_secret, w.sealed_secret), secret = NULL,
                    sealed_previous_secret = coalesce(s.sealed_previous_secret, w.sealed_previous_secret), previous_secret = NULL
               FROM unnest($1::bigint[], $2::text[], $3::text[]) AS s (id, sealed_secret, sealed_previous_secret)
              WHERE w.id = s.id`,
      values: [rows.map((row) => row.id), rows.map((row) => sealedOrNull(row, row.secret)), rows.map((row) => sealedOrNull(row, row.previousSecret))],
    });
    return rows.length;
  });
}
