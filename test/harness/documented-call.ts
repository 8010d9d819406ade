// A call of the public API as one key, its answer checked against the gateway's own OpenAPI document (openapi.ts):
// how the suites of the management routes call them.
import assert from 'node:assert/strict';
import type { ResponseCheck } from './openapi.ts';
import type { HttpResult, System, Tenant } from './system.ts';

export interface DocumentedCall {
  readonly method: string;
  readonly path: string;
  /** The path as the document names it (`/api/v1/api-keys/{id}`). */
  readonly documented: string;
  /** Sent as JSON when present. */
  readonly body?: unknown;
  readonly headers?: Record<string, string>;
}

export async function documentedCall(
  system: System,
  check: ResponseCheck,
  caller: Pick<Tenant, 'apiKey' | 'organizationId'>,
  call: DocumentedCall,
): Promise<HttpResult> {
  const response = await system.request(call.path, {
    method: call.method,
    headers: {
      authorization: `Api-Key ${caller.apiKey}`,
      'x-organization-id': String(caller.organizationId),
      ...(call.body === undefined ? {} : { 'content-type': 'application/json' }),
      ...call.headers,
    },
    ...(call.body === undefined ? {} : { body: JSON.stringify(call.body) }),
  });
  const problems = check(call.method, call.documented, response);
  assert.deepEqual(problems, [], `${call.method} ${call.path}: ${response.status} ${response.text}: ${problems.join('; ')}`);
  return response;
}
