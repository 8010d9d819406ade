// Template updates: PUT /api/v1/templates/{slug}/ at saturation (management-calls.ts), as deploys from CI would make
// them: each call makes a new immutable version, activates it and records the change in the audit log, in one
// transaction. One template per connection, so the calls contend on the tables, not on one row; `If-Match: *` (an
// unconditional update, which the contract allows) keeps them from refusing each other with 412.
import type { BenchContext } from './context.ts';
import { type ManagementCallsResult, managementHeaders, runManagementCalls } from './management-calls.ts';

export interface TemplateUpdateResult extends ManagementCallsResult {
  /** Templates the updates cycle through. */
  readonly templates: number;
}

export async function runTemplateUpdates(context: BenchContext): Promise<TemplateUpdateResult> {
  const { plan, system } = context;
  const [tenant] = system.tenants;
  if (!tenant) throw new Error('no tenant');
  const headers = await managementHeaders(context, tenant, ['templates:write']);
  const slugs = Array.from({ length: plan.connections }, (_, index) => `bench-deploy-${index}`);
  const content = { subject: 'Your order {{ order }}', html: '<p>Hello {{ name }}, order {{ order }} is on its way.</p>', text: 'Hello {{ name }}' };
  for (const slug of slugs) {
    const created = await fetch(`${system.gatewayUrl}/api/v1/templates/`, { method: 'POST', headers, body: JSON.stringify({ slug, ...content }) });
    if (created.status !== 201) throw new Error(`template updates: creating ${slug} answered ${created.status}: ${await created.text()}`);
  }
  context.progress(`template updates: ${slugs.length} templates, closed-loop over ${plan.connections} connections`);
  const body = JSON.stringify(content);
  const result = await runManagementCalls(context, {
    name: 'template updates',
    requests: slugs.map((slug) => ({ method: 'PUT', path: `/api/v1/templates/${slug}/`, headers: { ...headers, 'if-match': '*' }, body })),
    amount: plan.templateUpdatesSaturated,
  });
  return { ...result, templates: slugs.length };
}
