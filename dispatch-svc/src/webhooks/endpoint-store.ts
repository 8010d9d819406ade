// The webhook_endpoints table as operators change it. Every call takes a scope: the operator's (admin token) reaches
// any endpoint by id, the panel's only those of one project of one organization, so a foreign id reads as absent.
import type { Pool } from '@notify/platform/database';
import type { dispatch } from '@notify/proto';

/** The project and organization a panel user acts in; `null` for the operator's admin surface. */
export type Scope = { readonly projectId: number; readonly organizationId: number } | null;

/** How long a rotated-out secret keeps signing beside the new one (docs/contract.md, "Webhooks"). */
export const previousSecretLifetime = '24 hours';

interface EndpointRow {
  readonly id: number;
  readonly projectId: number;
  readonly organizationId: number;
  readonly url: string;
  readonly eventTypes: string[];
  readonly enabled: boolean;
  readonly disabledReason: string | null;
  readonly failingSince: Date | null;
  readonly previousSecretExpiresAt: Date | null;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

// Never the secrets: only creation and rotation return one, from RETURNING secret.
const columns = `id, project_id AS "projectId", organization_id AS "organizationId", url, event_types AS "eventTypes", enabled,
                 disabled_reason AS "disabledReason", failing_since AS "failingSince",
                 CASE WHEN previous_secret_expires_at > now() THEN previous_secret_expires_at END AS "previousSecretExpiresAt",
                 created_at AS "createdAt", updated_at AS "updatedAt"`;

/** `$n` and `$n+1` are the scope's project and organization: unscoped when both are NULL. */
const inScope = (n: number): string => `($${n}::bigint IS NULL OR (project_id = $${n} AND organization_id = $${n + 1}))`;
const scopeValues = (scope: Scope): [number | null, number | null] => [scope?.projectId ?? null, scope?.organizationId ?? null];

export function toWebhookMessage(row: EndpointRow): dispatch.Webhook__Output {
  return {
    id: row.id,
    projectId: row.projectId,
    organizationId: row.organizationId,
    url: row.url,
    eventTypes: row.eventTypes,
    enabled: row.enabled,
    disabledReason: row.disabledReason ?? '',
    failingSince: row.failingSince?.toISOString() ?? '',
    previousSecretExpiresAt: row.previousSecretExpiresAt?.toISOString() ?? '',
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

/** The new endpoint, or undefined when the project does not exist (in the scope's organization). */
export async function insertEndpoint(
  pool: Pool,
  projectId: number,
  organizationId: number | null,
  endpoint: { url: string; eventTypes: readonly string[]; secret: string },
): Promise<dispatch.Webhook__Output | undefined> {
  const result = await pool.query<EndpointRow>({
    name: 'webhook-endpoint-insert',
    text: `INSERT INTO webhook_endpoints (project_id, organization_id, url, event_types, secret)
           SELECT id, organization_id, $3, $4, $5 FROM projects WHERE id = $1 AND ($2::bigint IS NULL OR organization_id = $2)
           RETURNING ${columns}`,
    values: [projectId, organizationId, endpoint.url, endpoint.eventTypes, endpoint.secret],
  });
  const row = result.rows[0];
  return row && toWebhookMessage(row);
}

export async function listEndpoints(pool: Pool, projectId: number, scope: Scope): Promise<dispatch.Webhook__Output[]> {
  const result = await pool.query<EndpointRow>({
    name: 'webhook-endpoint-list',
    text: `SELECT ${columns} FROM webhook_endpoints WHERE project_id = $1 AND ${inScope(2)} ORDER BY id`,
    values: [projectId, ...scopeValues(scope)],
  });
  return result.rows.map(toWebhookMessage);
}

export async function findEndpoint(pool: Pool, id: number, scope: Scope): Promise<dispatch.Webhook__Output | undefined> {
  const result = await pool.query<EndpointRow>({
    name: 'webhook-endpoint-find',
    text: `SELECT ${columns} FROM webhook_endpoints WHERE id = $1 AND ${inScope(2)}`,
    values: [id, ...scopeValues(scope)],
  });
  const row = result.rows[0];
  return row && toWebhookMessage(row);
}

/**
 * Enabling clears the reason and the run of failures (the endpoint starts its 5 days again); disabling records the
 * operator, unless the endpoint was already disabled for another reason, which stays what is shown.
 */
export async function setEndpointEnabled(pool: Pool, id: number, enabled: boolean, scope: Scope): Promise<dispatch.Webhook__Output | undefined> {
  const result = await pool.query<EndpointRow>({
    name: 'webhook-endpoint-set-enabled',
    text: `UPDATE webhook_endpoints
              SET disabled_reason = CASE WHEN $2 THEN NULL WHEN enabled THEN 'operator' ELSE disabled_reason END,
                  failing_since = CASE WHEN $2 THEN NULL ELSE failing_since END,
                  enabled = $2, updated_at = now()
            WHERE id = $1 AND ${inScope(3)}
            RETURNING ${columns}`,
    values: [id, enabled, ...scopeValues(scope)],
  });
  const row = result.rows[0];
  return row && toWebhookMessage(row);
}

/** Deletes the endpoint; its deliveries and attempts go with it (ON DELETE CASCADE). */
export async function deleteEndpoint(pool: Pool, id: number): Promise<dispatch.Webhook__Output | undefined> {
  const result = await pool.query<EndpointRow>({ name: 'webhook-endpoint-delete', text: `DELETE FROM webhook_endpoints WHERE id = $1 RETURNING ${columns}`, values: [id] });
  const row = result.rows[0];
  return row && toWebhookMessage(row);
}

/**
 * Makes `secret` the signing secret; the current one becomes the previous one, which signs beside it for 24 hours.
 * A second rotation within those hours drops the oldest secret: only two ever sign.
 */
export async function rotateEndpointSecret(pool: Pool, id: number, secret: string): Promise<dispatch.Webhook__Output | undefined> {
  const result = await pool.query<EndpointRow>({
    name: 'webhook-endpoint-rotate',
    text: `UPDATE webhook_endpoints
              SET previous_secret = secret, previous_secret_expires_at = now() + interval '${previousSecretLifetime}', secret = $2, updated_at = now()
            WHERE id = $1
            RETURNING ${columns}`,
    values: [id, secret],
  });
  const row = result.rows[0];
  return row && toWebhookMessage(row);
}
