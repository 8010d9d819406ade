// The webhook_endpoints table as operators and integrators change it. Every call takes a scope: the operator's (admin
// token) reaches any endpoint by id, the panel's and the public API's only those of one project of one organization,
// so a foreign id reads as absent. Secrets reach it only sealed (secret-sealing.ts); it neither opens nor returns them.
// The changes run on a pool or on a transaction's client, so the public API records each with its audit entry.
import { type Pool, type PoolClient, withTransaction } from '@notify/platform/database';
import type { dispatch } from '@notify/proto';

/** The project and organization a panel user or an API key acts in; `null` for the operator's admin surface. */
export type Scope = { readonly projectId: number; readonly organizationId: number } | null;

/** Where a statement runs: the pool, or the client of a transaction it is part of. */
export type Queryable = Pool | PoolClient;

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

// Never the secrets: creation and rotation return the new one as it was made, not from here.
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

/** The id of an endpoint about to be inserted: its secret is sealed under it before the row is written. */
export async function newEndpointId(pool: Pool): Promise<number> {
  const result = await pool.query<{ id: number }>({
    name: 'webhook-endpoint-new-id',
    text: `SELECT nextval(pg_get_serial_sequence('webhook_endpoints', 'id')) AS id`,
  });
  const id = result.rows[0]?.id;
  if (id === undefined) throw new Error('nextval returned no row');
  return id;
}

/** What inserting an endpoint did: the endpoint, or why there is none (and how many endpoints its project has). */
export type Inserted =
  | { readonly kind: 'created'; readonly webhook: dispatch.Webhook__Output }
  | { readonly kind: 'project_not_found' }
  | { readonly kind: 'limit_reached'; readonly endpoints: number };

/** More work in the transaction that made a change (the audit entry of it), given what the change made. */
export type Within = (client: PoolClient, webhook: dispatch.Webhook__Output) => Promise<void>;

/**
 * Inserts the endpoint, unless the project does not exist (in the scope's organization) or already has `maxPerProject`
 * endpoints, enabled or not. The project's row is locked first, so two creations at once cannot both take its last place.
 * `within` runs in the same transaction, after the insert.
 */
export async function insertEndpoint(
  pool: Pool,
  projectId: number,
  organizationId: number | null,
  endpoint: { id: number; url: string; eventTypes: readonly string[]; sealedSecret: string },
  maxPerProject: number,
  within?: Within,
): Promise<Inserted> {
  return withTransaction(pool, async (client) => {
    const project = await client.query<{ organizationId: number }>({
      name: 'webhook-endpoint-lock-project',
      text: 'SELECT organization_id AS "organizationId" FROM projects WHERE id = $1 AND ($2::bigint IS NULL OR organization_id = $2) FOR NO KEY UPDATE',
      values: [projectId, organizationId],
    });
    const owner = project.rows[0];
    if (!owner) return { kind: 'project_not_found' };
    const counted = await client.query<{ endpoints: number }>({
      name: 'webhook-endpoint-count',
      text: 'SELECT count(*)::int AS endpoints FROM webhook_endpoints WHERE project_id = $1',
      values: [projectId],
    });
    const endpoints = counted.rows[0]?.endpoints ?? 0;
    if (endpoints >= maxPerProject) return { kind: 'limit_reached', endpoints };
    const result = await client.query<EndpointRow>({
      name: 'webhook-endpoint-insert',
      text: `INSERT INTO webhook_endpoints (id, project_id, organization_id, url, event_types, sealed_secret) VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${columns}`,
      values: [endpoint.id, projectId, owner.organizationId, endpoint.url, endpoint.eventTypes, endpoint.sealedSecret],
    });
    const webhook = toWebhookMessage(result.rows[0] as EndpointRow);
    await within?.(client, webhook);
    return { kind: 'created', webhook };
  });
}

export async function listEndpoints(pool: Pool, projectId: number, scope: Scope): Promise<dispatch.Webhook__Output[]> {
  const result = await pool.query<EndpointRow>({
    name: 'webhook-endpoint-list',
    text: `SELECT ${columns} FROM webhook_endpoints WHERE project_id = $1 AND ${inScope(2)} ORDER BY id`,
    values: [projectId, ...scopeValues(scope)],
  });
  return result.rows.map(toWebhookMessage);
}

export async function findEndpoint(pool: Queryable, id: number, scope: Scope): Promise<dispatch.Webhook__Output | undefined> {
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
export async function setEndpointEnabled(pool: Queryable, id: number, enabled: boolean, scope: Scope): Promise<dispatch.Webhook__Output | undefined> {
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

/**
 * Sets the URL and the event types given (undefined: unchanged). Deliveries already recorded keep going to the endpoint
 * at its URL of the moment they are attempted; events recorded from now on follow the new types.
 */
export async function updateEndpoint(
  db: Queryable,
  id: number,
  change: { url?: string | undefined; eventTypes?: readonly string[] | undefined },
  scope: Scope,
): Promise<dispatch.Webhook__Output | undefined> {
  const result = await db.query<EndpointRow>({
    name: 'webhook-endpoint-update',
    text: `UPDATE webhook_endpoints SET url = coalesce($2, url), event_types = coalesce($3, event_types), updated_at = now()
            WHERE id = $1 AND ${inScope(4)}
            RETURNING ${columns}`,
    values: [id, change.url ?? null, change.eventTypes ?? null, ...scopeValues(scope)],
  });
  const row = result.rows[0];
  return row && toWebhookMessage(row);
}

/**
 * Deletes the endpoint; its deliveries and attempts go with it (ON DELETE CASCADE), and so do its test events, which
 * went to it alone (an event about a message stays, for the message's other endpoints and its retention).
 */
export async function deleteEndpoint(db: Queryable, id: number, scope: Scope): Promise<dispatch.Webhook__Output | undefined> {
  const result = await db.query<EndpointRow>({
    name: 'webhook-endpoint-delete',
    text: `WITH endpoint AS (DELETE FROM webhook_endpoints WHERE id = $1 AND ${inScope(2)} RETURNING ${columns}),
                tests AS (DELETE FROM webhook_events e USING webhook_deliveries d, endpoint
                           WHERE e.message_id IS NULL AND d.event_id = e.id AND d.endpoint_id = endpoint.id)
           SELECT * FROM endpoint`,
    values: [id, ...scopeValues(scope)],
  });
  const row = result.rows[0];
  return row && toWebhookMessage(row);
}

/**
 * Makes `sealedSecret` the signing secret; the current one becomes the previous one, which signs beside it for 24
 * hours. A second rotation within those hours drops the oldest secret: only two ever sign. The current one moves as it
 * is stored, clear if it was not sealed yet (secret-sealing.ts seals it there): both are sealed under the endpoint's id.
 */
export async function rotateEndpointSecret(db: Queryable, id: number, sealedSecret: string, scope: Scope): Promise<dispatch.Webhook__Output | undefined> {
  const result = await db.query<EndpointRow>({
    name: 'webhook-endpoint-rotate',
    text: `UPDATE webhook_endpoints
              SET previous_secret = secret, sealed_previous_secret = sealed_secret, previous_secret_expires_at = now() + interval '${previousSecretLifetime}',
                  secret = NULL, sealed_secret = $2, updated_at = now()
            WHERE id = $1 AND ${inScope(3)}
            RETURNING ${columns}`,
    values: [id, sealedSecret, ...scopeValues(scope)],
  });
  const row = result.rows[0];
  return row && toWebhookMessage(row);
}
