// POST /api/v1/send/ to a gateway other than the stack's own (an extra replica), the way System.send does it.
import type { HttpResult, Tenant } from './system.ts';

export interface TimedResult extends HttpResult {
  readonly elapsedMs: number;
}

export async function sendVia(
  gatewayUrl: string,
  tenant: Pick<Tenant, 'apiKey' | 'organizationId'>,
  body: unknown,
  path = '/api/v1/send/',
): Promise<TimedResult> {
  const started = performance.now();
  const response = await fetch(`${gatewayUrl}${path}`, {
    method: 'POST',
    headers: { authorization: `Api-Key ${tenant.apiKey}`, 'x-organization-id': String(tenant.organizationId), 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  let parsed: Record<string, unknown> = {};
  try {
    parsed = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // asserted on through `text`
  }
  return { status: response.status, headers: response.headers, body: parsed, text, elapsedMs: performance.now() - started };
}
