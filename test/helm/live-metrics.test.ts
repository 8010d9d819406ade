// Against a running system (test/harness): the `helm test` smoke script delivers a message end to end, every
// service's /metrics passes `promtool check metrics`, and every dashboard and alert query names a metric the
// services really export.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { notifyMessageId, readMails } from '../harness/mailbox.ts';
import { type System, startSystem, type Tenant } from '../harness/system.ts';
import { waitFor } from '../harness/wait.ts';
import { chartDir, productionValues, render } from './chart.ts';
import { dashboardExpressions, exposedNames, metricNames } from './promql.ts';
import { ensureHelm, ensurePromtool, repoRoot, runTool, type Tool } from './tools.ts';

/** Series the alerts read from outside Notify, and where they come from. */
const external: Readonly<Record<string, string>> = {
  kube_pod_container_status_waiting_reason: 'kube-state-metrics (part of kube-prometheus-stack)',
};

let system: System;
let tenant: Tenant;
let helm: Tool;
let promtool: Tool;
const pages = new Map<string, string>();

// The tools are fetched here, beside the system's start: in a fresh clone helm is compiled first, which may take
// minutes that no test's own timeout is meant to cover.
before(async () => {
  [system, helm, promtool] = await Promise.all([
    startSystem({
      mailerReplicas: 1,
      // A domain with limits of its own: the per-destination gauges have its series from the start.
      serviceEnv: {
        'dispatch-svc': { DELIVERABILITY_INTERVAL: '1s', RETENTION_PURGE_INTERVAL: '1s' },
        'mailer-svc': { MAILER_DESTINATION_LIMITS: 'example.com=20:1000/s' },
      },
    }),
    ensureHelm(),
    ensurePromtool(),
  ]);
  tenant = await system.createTenant('helm-smoke');
  await system.putTemplate(tenant.projectId, 'welcome', {
    subject: 'Hello {{ name }}',
    schema: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } },
  });
});

after(async () => {
  await system?.stop();
});

function smokeTest(env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(chartDir, 'files', 'smoke-test.ts')],
      {
        cwd: repoRoot,
        timeout: 60_000,
        env: {
          PATH: process.env.PATH ?? '',
          GATEWAY_URL: system.gatewayUrl,
          DISPATCH_SVC_ADDR: system.stack.env.DISPATCH_SVC_ADDR,
          ADMIN_TOKEN: system.stack.env.ADMIN_TOKEN,
          API_KEY: tenant.apiKey,
          ORGANIZATION_ID: String(tenant.organizationId),
          PROJECT_ID: String(tenant.projectId),
          TEMPLATE: 'welcome',
          TO: 'smoke@example.com',
          DATA: '{"name": "helm test"}',
          TIMEOUT_SECONDS: '30',
          NOTIFYCTL: 'cli/src/main.ts',
          ...env,
        },
      },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** Every page after the traffic that creates labelled series: a delivery (the smoke test), its deliverability and retention passes and a key revocation. */
async function metricsPages(): Promise<Map<string, string>> {
  if (pages.size > 0) return pages;
  const ports = system.stack.ports.metrics;
  const revoked = await system.createTenant('helm-revoked');
  await system.authAdmin.call('RevokeApiKey', { id: revoked.keyId });
  await waitFor(
    async () => ((await (await fetch(`http://127.0.0.1:${ports.auth}/metrics`)).text()).includes('notify_auth_cache_invalidations_total{') ? true : undefined),
    {
      timeoutMs: 10_000,
      what: 'the revocation to reach the key cache',
    },
  );
  await waitFor(
    async () => ((await (await fetch(`http://127.0.0.1:${ports.dispatch}/metrics`)).text()).includes('notify_project_delivered_last_day{') ? true : undefined),
    {
      timeoutMs: 10_000,
      what: "the deliverability gauges to count the smoke test's delivery",
    },
  );
  // The purge leader's gauges: set by a purge pass once an organization has a final message (the smoke test's).
  await waitFor(
    async () =>
      (await (await fetch(`http://127.0.0.1:${ports.dispatch}/metrics`)).text()).includes('notify_retention_oldest_final_message_age_seconds{')
        ? true
        : undefined,
    {
      timeoutMs: 10_000,
      what: 'the retention gauges of the purge leader',
    },
  );
  const targets: [string, number][] = [
    ['gateway', ports.gateway],
    ['auth-svc', ports.auth],
    ['dispatch-svc', ports.dispatch],
    ['webhook-svc', ports.webhook],
    ['bounce-svc', ports.bounce],
    ...ports.mailer.map((port, index): [string, number] => [`mailer-svc-${index}`, port]),
  ];
  for (const [service, port] of targets) {
    const response = await fetch(`http://127.0.0.1:${port}/metrics`);
    assert.equal(response.status, 200, service);
    pages.set(service, await response.text());
  }
  return pages;
}

describe('a running system', () => {
  test('the helm test smoke script sends a message and follows it until the relay accepted it', { timeout: 90_000 }, async () => {
    const result = await smokeTest({});
    assert.equal(result.code, 0, result.stdout + result.stderr);
    const messageId = Number(/accepted: message (\d+)/.exec(result.stdout)?.[1]);
    assert.match(result.stdout, new RegExp(`message ${messageId}: sent\n`));
    const mails = (await readMails(system.resources.mailDir)).filter((mail) => notifyMessageId(mail) === messageId);
    assert.equal(mails.length, 1);
    assert.equal(mails[0]?.subject, 'Hello helm test');
  });

  test('the smoke script fails, saying why, when the send is refused', { timeout: 30_000 }, async () => {
    const result = await smokeTest({ TEMPLATE: 'no-such-template' });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /smoke test failed: POST \/api\/v1\/send\/ answered 404/);
  });

  test('promtool check metrics accepts the /metrics page of every service', { timeout: 60_000 }, async (t) => {
    if ('skip' in promtool) return t.skip(promtool.skip);
    for (const [service, page] of await metricsPages()) {
      const result = await runTool(promtool.path, ['check', 'metrics'], { input: page });
      const problems = `${result.stdout}${result.stderr}`
        .split('\n')
        .map((line) => line.trim())
        .filter(Boolean);
      assert.deepEqual(problems, [], service);
      if (problems.length === 0) assert.equal(result.code, 0, service);
    }
  });

  test('every dashboard and alert query names only metrics the services export', { timeout: 60_000 }, async (t) => {
    const exported = new Set<string>();
    for (const page of (await metricsPages()).values()) for (const name of exposedNames(page)) exported.add(name);
    const queries: { where: string; expr: string }[] = [];
    for (const file of readdirSync(join(chartDir, 'dashboards'))) {
      for (const query of dashboardExpressions(JSON.parse(readFileSync(join(chartDir, 'dashboards', file), 'utf8'))))
        queries.push({ ...query, where: `${file}: ${query.where}` });
    }
    if ('skip' in helm) t.diagnostic(`alerts not checked: ${helm.skip}`);
    else {
      const rule = (await render(helm.path, { valuesFiles: [productionValues] })).get('PrometheusRule', 'notify');
      for (const group of (rule.spec as { groups: { rules: { alert: string; expr: string }[] }[] }).groups)
        for (const r of group.rules) queries.push({ where: `alert ${r.alert}`, expr: r.expr });
    }
    assert.ok(queries.length > 30, `only ${queries.length} queries found`);
    const unknown = queries.flatMap(({ where, expr }) =>
      metricNames(expr)
        .filter((name) => !exported.has(name) && !external[name])
        .map((name) => `${where}: ${name}`),
    );
    assert.deepEqual(unknown, []);
  });
});
