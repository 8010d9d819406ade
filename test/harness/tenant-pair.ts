// What the management API's suites start from: the system, two tenants of their own (alpha and beta, for tenant
// isolation both ways), each with a `welcome` template when asked, and the check of answers against the OpenAPI
// document the gateway serves.
import { openApiResponseCheck, type ResponseCheck } from './openapi.ts';
import { type System, startSystem, type Tenant } from './system.ts';

export interface TenantPair {
  readonly system: System;
  readonly alpha: Tenant;
  readonly beta: Tenant;
  readonly checkResponse: ResponseCheck;
}

/** Tenants named `<name>-alpha` and `<name>-beta`. */
export async function startTenantPair(name: string, options: { welcome?: boolean } = {}): Promise<TenantPair> {
  const system = await startSystem();
  const alpha = await system.createTenant(`${name}-alpha`);
  const beta = await system.createTenant(`${name}-beta`);
  if (options.welcome) for (const tenant of [alpha, beta]) await system.putTemplate(tenant.projectId, 'welcome');
  const checkResponse = openApiResponseCheck((await system.request('/api/v1/openapi.json', { method: 'GET' })).body);
  return { system, alpha, beta, checkResponse };
}
