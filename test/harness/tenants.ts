// Arranging tenants beyond System.createTenant: more keys for one project (each key has its own rate budget).
import type { System, Tenant } from './system.ts';

/** A new API key for the tenant's project: the same tenant, another key id and budget; `scopes` as notifyctl takes them. */
export async function anotherKey(system: System, tenant: Tenant, name = 'another', scopes: string[] = []): Promise<Tenant> {
  const created = await system.authAdmin.call('CreateApiKey', { projectId: tenant.projectId, name, scopes });
  return { ...tenant, keyId: created.key?.id ?? 0, apiKey: created.apiKey };
}

/** A send body that passes every field rule. */
export function validBody(template: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { template, to: 'someone@example.com', channel: 'email', data: { name: 'Someone' }, ...overrides };
}
