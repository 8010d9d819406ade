// The audit log (table audit_events, docs/operations.md "Audit log"): every change made through the management API,
// recorded by the service that makes it, with the same client and so in the same transaction as the change.
import type pg from 'pg';

/** Who changed what: the key's organization, project and id, `<resource>.<verb>`, the object, and what changed. */
export interface AuditEntry {
  readonly organizationId: number;
  readonly projectId: number;
  readonly apiKeyId: number;
  /** `<resource>.<verb>`, lower case: template.update, suppression.remove, webhook.rotate_secret. */
  readonly action: string;
  /** The object changed: a template's slug, an address, an endpoint's, domain's or key's id. */
  readonly target: string;
  /** What changed (never a secret): the new version, the fields set, the addresses added. */
  readonly detail?: Readonly<Record<string, unknown>>;
}

/** Records one change. Call it with the transaction's client, after the change, so both commit or neither does. */
export async function recordAudit(client: pg.ClientBase, entry: AuditEntry): Promise<void> {
  await client.query({
    name: 'audit-record',
    text: `INSERT INTO audit_events (organization_id, project_id, api_key_id, action, target, detail)
           VALUES ($1, $2, $3, $4, $5, $6)`,
    values: [entry.organizationId, entry.projectId, entry.apiKeyId, entry.action, entry.target, JSON.stringify(entry.detail ?? {})],
  });
}

export interface AuditEvent extends Required<AuditEntry> {
  readonly id: number;
  readonly createdAt: Date;
}

/** An organization's entries newest first, optionally one project's, `limit` at a time below the id `before` (0: from the newest). */
export async function readAuditEvents(
  pool: pg.Pool,
  query: { organizationId: number; projectId: number; before: number; limit: number },
): Promise<AuditEvent[]> {
  const { rows } = await pool.query<AuditEvent>({
    name: 'audit-read',
    text: `SELECT id, organization_id AS "organizationId", project_id AS "projectId", api_key_id AS "apiKeyId", action, target,
                  detail, created_at AS "createdAt"
             FROM audit_events
            WHERE organization_id = $1 AND ($2 = 0 OR project_id = $2) AND ($3 = 0 OR id < $3)
            ORDER BY id DESC LIMIT $4`,
    values: [query.organizationId, query.projectId, query.before, query.limit],
  });
  return rows;
}
