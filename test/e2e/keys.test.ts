// Issue 15 items 3 and 5 against the running system, with two gateway replicas: test keys (`notifyctl key create
// --test`, prefix nk_test_) run every check and create real messages, events and webhook deliveries, but the relay never
// sees them and the quota never counts them; and a key's own send rate (`notifyctl key create|update --rate`, the
// panel's keys page) is enforced by every gateway within a second of the change, RateLimit-Policy included.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { assertAccepted, assertCoded, assertDetailOnly } from '../harness/contract-shapes.ts';
import { type GatewayReplica, startGatewayReplica } from '../harness/gateway-process.ts';
import { openApiResponseCheck, type ResponseCheck } from '../harness/openapi.ts';
import { csrfTokenOf, PanelVisitor } from '../harness/panel-visitor.ts';
import { sendVia, type TimedResult } from '../harness/send-via.ts';
import { type HttpResult, type System, startSystem, type Tenant } from '../harness/system.ts';
import { validBody } from '../harness/tenants.ts';
import { waitFor } from '../harness/wait.ts';
import { subscribedReceiver, type WebhookReceiver, webhooksAbout } from '../harness/webhook-receiver.ts';

/** Every recipient the relay was offered (RCPT TO), in order. */
const offered: string[] = [];
let system: System;
let replica: GatewayReplica;
let gateways: Array<{ name: string; url: string }>;
let checkResponse: ResponseCheck;
let receiver: WebhookReceiver | undefined;
const password = 'keys test panel password';
const operator = 'operator@keys.example';
const viewer = 'viewer@keys.example';
let tenant: Tenant;

before(async () => {
  system = await startSystem({
    // The webhook receiver is a plain http listener on loopback.
    env: { NOTIFY_WEBHOOK_ALLOW_PRIVATE: 'true' },
    smtpReply: (envelope) => {
      offered.push(envelope.to);
      return undefined;
    },
  });
  replica = await startGatewayReplica(system.stack);
  gateways = [
    { name: 'gateway', url: system.gatewayUrl },
    { name: 'replica', url: replica.url },
  ];
  checkResponse = openApiResponseCheck((await system.request('/api/v1/openapi.json', { method: 'GET' })).body);
  tenant = await system.createTenant('keys');
  await system.putTemplate(tenant.projectId, 'welcome');
  const passwordFile = join(mkdtempSync(join(tmpdir(), 'notify-keys-')), 'password');
  writeFileSync(passwordFile, `${password}\n`, { mode: 0o600 });
  for (const [email, role] of [
    [operator, 'operator'],
    [viewer, 'viewer'],
  ] as const) {
    await system.notifyctlOk('panel-user', 'create', '--org', String(tenant.organizationId), '--email', email, '--role', role, '--password-file', passwordFile);
  }
  // Readiness does not wait for NATS (a gateway serves without it); a cached key's change reaches it only through NATS.
  for (const gateway of gateways) {
    await waitFor(
      async () => {
        const answer = (await (await fetch(`${gateway.url}/readyz`)).json()) as { checks?: Record<string, unknown> };
        return answer.checks?.nats === 'ok' ? true : undefined;
      },
      { timeoutMs: 10_000, what: `${gateway.name} to subscribe to key announcements` },
    );
  }
});

after(async () => {
  await receiver?.stop();
  await replica?.stop();
  await system?.stop();
});

/** `notifyctl key create` for the tenant's project, with extra flags; the key it printed once, and its id. */
async function createKey(name: string, ...flags: string[]): Promise<Tenant> {
  const out = await system.notifyctlOk('key', 'create', '--project', String(tenant.projectId), '--name', name, ...flags);
  const apiKey = /API key: (\S+)/.exec(out)?.[1];
  assert.ok(apiKey, out);
  const { keys } = await system.authAdmin.call('ListApiKeys', { projectId: tenant.projectId });
  return { ...tenant, keyId: keys.find((key) => apiKey.startsWith(`${key.prefix}.`))?.id ?? 0, apiKey };
}

async function read(key: Pick<Tenant, 'apiKey' | 'organizationId'>, path: string): Promise<HttpResult> {
  const response = await system.request(path, {
    method: 'GET',
    headers: { authorization: `Api-Key ${key.apiKey}`, 'x-organization-id': String(key.organizationId) },
  });
  const documented = path.split('?')[0] === '/api/v1/messages/' ? '/api/v1/messages' : '/api/v1/messages/{message_id}';
  assert.deepEqual(checkResponse('GET', documented, response), [], `GET ${path}: ${response.status} ${response.text}`);
  return response;
}

async function readOnceSent(key: Pick<Tenant, 'apiKey' | 'organizationId'>, id: number): Promise<HttpResult> {
  return waitFor(
    async () => {
      const response = await read(key, `/api/v1/messages/${id}/`);
      return response.body.status === 'sent' ? response : undefined;
    },
    { timeoutMs: 20_000, what: `message ${id} to be sent` },
  );
}

test('a test key sends through every step but the relay: the message ends sent with the synthetic reply, marked test, while a live send of the same run arrives', async () => {
  const testKey = await createKey('ci', '--test');
  assert.match(testKey.apiKey, /^nk_test_[0-9a-f]{16}\.[A-Za-z0-9_-]{43}$/);
  assert.match(tenant.apiKey, /^nk_[0-9a-f]{16}\./, 'a live key keeps its prefix');
  receiver = await subscribedReceiver(system.db, tenant, ['message.sent']);

  const accepted = await system.send(testKey, validBody('welcome', { to: 'never-mailed@example.com' }));
  assertAccepted(accepted);
  assert.deepEqual(Object.keys(accepted.body).sort(), ['celery_task_id', 'idempotent_replay', 'message_id', 'status'], "the seed's 202, nothing added");
  const live = await system.send(tenant, validBody('welcome', { to: 'mailed@example.com' }));
  assertAccepted(live);
  const testId = accepted.body.message_id as number;
  const liveId = live.body.message_id as number;

  const testMessage = await readOnceSent(testKey, testId);
  assert.equal(testMessage.body.test, true);
  assert.equal(testMessage.body.last_smtp_reply, '250 test mode: not delivered');
  assert.deepEqual(
    (testMessage.body.events as Array<Record<string, unknown>>).map((event) => [event.status, event.smtp_reply]),
    [
      ['queued', null],
      ['sending', null],
      ['sent', '250 test mode: not delivered'],
    ],
  );
  const liveMessage = await readOnceSent(tenant, liveId);
  assert.equal(liveMessage.body.test, false);
  assert.match(String(liveMessage.body.last_smtp_reply), /^250 /);
  assert.notEqual(liveMessage.body.last_smtp_reply, '250 test mode: not delivered');

  // The live one was offered to the relay and stored; the test one was never offered at all.
  assert.ok(offered.includes('mailed@example.com'), JSON.stringify(offered));
  assert.ok(!offered.includes('never-mailed@example.com'), JSON.stringify(offered));

  // Its events reach webhooks like any message's, and the list marks it too.
  const [webhook] = await waitFor(
    () => {
      const about = webhooksAbout(receiver as WebhookReceiver, 'message.sent', testId);
      return about.length > 0 ? about : undefined;
    },
    { timeoutMs: 20_000, what: "the test message's message.sent webhook" },
  );
  assert.equal(webhook?.body.data.smtp_reply, '250 test mode: not delivered');
  const listed = await read(testKey, '/api/v1/messages/?limit=10');
  const results = listed.body.results as Array<Record<string, unknown>>;
  assert.deepEqual(
    results.filter((message) => message.message_id === testId || message.message_id === liveId).map((message) => [message.message_id, message.test]),
    [
      [liveId, false],
      [testId, true],
    ],
  );
});

test('test sends never count against the monthly quota; live sends do, and a used-up quota refuses both', async () => {
  const quota = await system.createTenant('keys-quota');
  await system.putTemplate(quota.projectId, 'welcome');
  await system.authAdmin.call('UpdatePlan', { id: quota.planId, monthlyQuota: 2 });
  const created = await system.authAdmin.call('CreateApiKey', { projectId: quota.projectId, name: 'ci', test: true });
  const testKey = { ...quota, apiKey: created.apiKey };
  for (let sent = 0; sent < 4; sent += 1) assertAccepted(await system.send(testKey, validBody('welcome', { to: `test${sent}@example.com` })));
  for (let sent = 0; sent < 2; sent += 1) assertAccepted(await system.send(quota, validBody('welcome', { to: `live${sent}@example.com` })));
  // Check 5 is the same for every key: the plan's verdict is what a live send would get.
  assertCoded(await system.send(quota, validBody('welcome')), 403, 'plan_blocked');
  assertCoded(await system.send(testKey, validBody('welcome')), 403, 'plan_blocked');
});

test('test sends run the checks: a bad field, an unknown template and the rate refuse them as they would a live send', async () => {
  const created = await system.authAdmin.call('CreateApiKey', { projectId: tenant.projectId, name: 'ci-checks', test: true, sendRate: '2/min' });
  const testKey = { ...tenant, apiKey: created.apiKey };
  assert.equal((await system.send(testKey, validBody('welcome', { to: 'not an address' }))).status, 422);
  assertCoded(await system.send(testKey, validBody('missing')), 404, 'template_not_found');
  const throttled = await system.send(testKey, validBody('welcome'));
  assertDetailOnly(throttled, 429);
  assert.equal(throttled.headers.get('ratelimit-policy'), '"send";q=2;w=60');
});

/** Sends through `gateway` until its RateLimit-Policy is `policy`; fails if it is not within `withinMs` of `since`. */
async function untilPolicy(
  gateway: { name: string; url: string },
  key: Pick<Tenant, 'apiKey' | 'organizationId'>,
  policy: string,
  since: number,
  withinMs: number,
): Promise<TimedResult> {
  let response = await sendVia(gateway.url, key, validBody('welcome'));
  while (response.headers.get('ratelimit-policy') !== policy && performance.now() - since < withinMs) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    response = await sendVia(gateway.url, key, validBody('welcome'));
  }
  assert.equal(response.headers.get('ratelimit-policy'), policy, `${gateway.name}, ${Math.round(performance.now() - since)} ms after the change`);
  return response;
}

test('notifyctl key update --rate is enforced by both gateways within a second, cached keys included, and --rate default goes back', async () => {
  const key = await createKey('bulk', '--rate', '600/min');
  const listed = await system.notifyctlOk('key', 'list', '--project', String(tenant.projectId));
  assert.match(listed, /bulk\s+nk_[0-9a-f]{16}\s+no\s+send,messages:read\s+600\/min/);
  // Each gateway holds the key (and its rate) in its authorization cache.
  for (const gateway of gateways) {
    for (let sent = 0; sent < 2; sent += 1)
      assert.equal((await sendVia(gateway.url, key, validBody('welcome'))).headers.get('ratelimit-policy'), '"send";q=600;w=60');
  }

  await system.notifyctlOk('key', 'update', '--id', String(key.keyId), '--rate', '3/min');
  const changedAt = performance.now();
  for (const gateway of gateways) await untilPolicy(gateway, key, '"send";q=3;w=60', changedAt, 1_000);
  console.log(`new key rate applied by both gateways ${Math.round(performance.now() - changedAt)} ms after UpdateApiKey returned`);
  // The new bucket is shared by both: 3 sends in all (the two above among them), then 429 from each.
  const answers: TimedResult[] = [];
  for (let round = 0; round < 2; round += 1) for (const gateway of gateways) answers.push(await sendVia(gateway.url, key, validBody('welcome')));
  assert.deepEqual(
    answers.map((answer) => answer.status),
    [202, 429, 429, 429],
  );
  for (const answer of answers) assert.equal(answer.headers.get('ratelimit-policy'), '"send";q=3;w=60');

  await system.notifyctlOk('key', 'update', '--id', String(key.keyId), '--rate', 'default');
  const defaultPolicy = (await sendVia(system.gatewayUrl, tenant, validBody('welcome'))).headers.get('ratelimit-policy') ?? '';
  const clearedAt = performance.now();
  for (const gateway of gateways) assertAccepted(await untilPolicy(gateway, key, defaultPolicy, clearedAt, 1_000));
});

test("the panel's keys page shows each key's kind and rate; an operator sets a rate every gateway applies within a second, a viewer cannot", async () => {
  const created = await system.authAdmin.call('CreateApiKey', { projectId: tenant.projectId, name: 'panel-set' });
  const key = { ...tenant, keyId: created.key?.id ?? 0, apiKey: created.apiKey };
  for (const gateway of gateways) assertAccepted(await sendVia(gateway.url, key, validBody('welcome')));
  const keysPath = `/panel/projects/${tenant.projectId}/keys`;

  const viewing = new PanelVisitor(system.gatewayUrl);
  assert.equal((await viewing.signIn(viewer, password)).status, 303);
  const viewed = await viewing.get(keysPath);
  assert.equal(viewed.status, 200);
  assert.match(viewed.text, /<code>nk_test_[0-9a-f]{16}<\/code><\/td>\s*<td><span class="test-mark">test: never mails<\/span>/);
  assert.doesNotMatch(viewed.text, /name="rate"/, 'a viewer gets no rate form');
  const forbidden = await viewing.post(`${keysPath}/${key.keyId}/rate`, { _csrf: csrfTokenOf(viewed.text), rate: '1/min' });
  assert.equal(forbidden.status, 403);

  const operating = new PanelVisitor(system.gatewayUrl, { 'accept-language': 'es' });
  assert.equal((await operating.signIn(operator, password)).status, 303);
  const page = await operating.get(keysPath);
  assert.match(page.text, new RegExp(`action="${keysPath}/${key.keyId}/rate"`));
  const invalid = await operating.post(`${keysPath}/${key.keyId}/rate`, { _csrf: csrfTokenOf(page.text), rate: 'muchos' });
  assert.equal(invalid.status, 400);
  assert.match(invalid.text, /role="alert">No es un ritmo de envío/);

  const changed = await operating.post(`${keysPath}/${key.keyId}/rate`, { _csrf: csrfTokenOf(page.text), rate: '7/hour' });
  const changedAt = performance.now();
  assert.equal(changed.status, 303);
  assert.equal(changed.headers.get('location'), `${keysPath}?rateChanged=${key.keyId}`);
  for (const gateway of gateways) await untilPolicy(gateway, key, '"send";q=7;w=3600', changedAt, 1_000);
  const shown = await operating.get(`${keysPath}?rateChanged=${key.keyId}`);
  assert.match(shown.text, /role="status">El ritmo de envío de la clave nk_[0-9a-f]{16} es ahora 7\/hour/);
  assert.match(shown.text, new RegExp(`id="rate-${key.keyId}" name="rate" value="7/hour"`));
  // Another organization's key, by id, is not found and keeps its rate.
  const stranger = await system.createTenant('keys-stranger');
  const elsewhere = await operating.post(`${keysPath}/${stranger.keyId}/rate`, { _csrf: csrfTokenOf(page.text), rate: '1/min' });
  assert.equal(elsewhere.status, 404);
  const strangerKeys = await system.authAdmin.call('ListApiKeys', { projectId: stranger.projectId });
  assert.equal(strangerKeys.keys[0]?.sendRate, '');
});

test('an operator creates a key with the scopes ticked in the panel, shown once; it works at once, and a viewer cannot create one', async () => {
  const keysPath = `/panel/projects/${tenant.projectId}/keys`;
  const viewing = new PanelVisitor(system.gatewayUrl);
  assert.equal((await viewing.signIn(viewer, password)).status, 303);
  const viewed = await viewing.get(keysPath);
  assert.doesNotMatch(viewed.text, /name="scopes"/, 'a viewer gets no form');
  const refused = await viewing.post(keysPath, [
    ['_csrf', csrfTokenOf(viewed.text)],
    ['name', 'viewer key'],
  ]);
  assert.equal(refused.status, 403);

  const operating = new PanelVisitor(system.gatewayUrl);
  assert.equal((await operating.signIn(operator, password)).status, 303);
  const page = await operating.get(keysPath);
  assert.match(page.text, /<input type="checkbox" id="scope-send" name="scopes" value="send" checked>/, 'sending is ticked to begin with');
  const form = (scopes: string[]): [string, string][] => [
    ['_csrf', csrfTokenOf(page.text)],
    ['name', 'panel deploy'],
    ...scopes.map((scope): [string, string] => ['scopes', scope]),
  ];
  const invalid = await operating.post(keysPath, form(['send', 'root']));
  assert.equal(invalid.status, 400);
  assert.match(invalid.text, /known scopes only/);
  const created = await operating.post(keysPath, form(['keys:manage', 'messages:read']));
  assert.equal(created.status, 200, 'the answer is the page with the key, not a redirect');
  const apiKey = /id="secret" class="secret" type="text" readonly value="(nk_[0-9a-f]{16}\.[A-Za-z0-9_-]{43})"/.exec(created.text)?.[1];
  assert.ok(apiKey, 'the key is on the page');
  assert.match(created.text, /<code>messages:read<\/code>, <code>keys:manage<\/code>/);
  assert.ok(!(await operating.get(keysPath)).text.includes(apiKey), 'shown once: the page does not show it again');

  const headers = { authorization: `Api-Key ${apiKey}`, 'x-organization-id': String(tenant.organizationId) };
  assert.equal((await system.request('/api/v1/api-keys/', { method: 'GET', headers })).status, 200, 'keys:manage works at once');
  const send = await system.send({ apiKey, organizationId: tenant.organizationId }, validBody('welcome'));
  assertCoded(send, 403, 'insufficient_scope');
});

test('the panel marks a test message in the list and on its page', async () => {
  const created = await system.authAdmin.call('CreateApiKey', { projectId: tenant.projectId, name: 'panel-test', test: true });
  const accepted = await system.send({ ...tenant, apiKey: created.apiKey }, validBody('welcome', { to: 'panel-test@example.com' }));
  assertAccepted(accepted);
  const id = accepted.body.message_id as number;
  const visitor = new PanelVisitor(system.gatewayUrl);
  assert.equal((await visitor.signIn(viewer, password)).status, 303);
  const list = await visitor.get(`/panel/projects/${tenant.projectId}/messages?recipient=panel-test%40example.com`);
  assert.equal(list.status, 200);
  assert.match(list.text, /<span class="test-mark">test<\/span>/);
  const page = await visitor.get(`/panel/projects/${tenant.projectId}/messages/${id}`);
  assert.match(page.text, /<span class="test-mark">test<\/span> Sent with a test key: it went through every check/);
});
