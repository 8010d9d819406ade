// The send requests the scenarios make: the same valid body for every tenant, each tenant's own API key, so
// consecutive requests rotate over the keys (each key has its own rate-limit counter and auth cache entry).
import type { ClosedLoopRequest } from '../generators/closed-loop.ts';
import type { PacedRequest } from '../generators/paced-load.ts';
import type { BenchTenant } from '../system/system-under-test.ts';

export const benchTemplate = 'bench-receipt';
export const sendPath = '/api/v1/send/';

export function sendBody(index: number): string {
  return JSON.stringify({ template: benchTemplate, to: `customer-${index}@example.com`, channel: 'email', data: { name: 'Ada Lovelace', code: 'N-1843' } });
}

export function sendHeaders(tenant: BenchTenant, idempotencyKey?: string): Record<string, string> {
  return {
    authorization: `Api-Key ${tenant.apiKey}`,
    'x-organization-id': String(tenant.organizationId),
    'content-type': 'application/json',
    ...(idempotencyKey === undefined ? {} : { 'idempotency-key': idempotencyKey }),
  };
}

/** One request per tenant, for autocannon to cycle through. */
export function closedLoopRequests(tenants: readonly BenchTenant[]): ClosedLoopRequest[] {
  return tenants.map((tenant, index) => ({ path: sendPath, headers: sendHeaders(tenant), body: sendBody(index) }));
}

/** The i-th paced request goes to tenant i mod n. */
export function pacedRequests(tenants: readonly BenchTenant[]): (index: number) => PacedRequest {
  const prepared = tenants.map((tenant, index) => ({ path: sendPath, headers: sendHeaders(tenant), body: Buffer.from(sendBody(index)) }));
  return (index) => prepared[index % prepared.length] as PacedRequest;
}
