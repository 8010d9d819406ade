// docs/contract.md "Tags and metadata" against the running system: a send's own labels are validated (422 in English
// and Spanish, nothing written), stored, read back by the status API ([] and {} when absent), filtered on with ?tag=,
// part of the idempotency fingerprint, and carried in the message's webhook events to a real receiver; the 202 body
// stays the seed's four fields; the panel shows them on the message's page and finds messages by tag. Every status API
// response is checked against the served OpenAPI document.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { assertAccepted, assertFieldErrors } from '../harness/contract-shapes.ts';
import { openApiResponseCheck, type ResponseCheck } from '../harness/openapi.ts';
import { PanelVisitor } from '../harness/panel-visitor.ts';
import { type HttpResult, type System, startSystem, type Tenant } from '../harness/system.ts';
import { validBody } from '../harness/tenants.ts';
import { waitFor } from '../harness/wait.ts';
import { subscribedReceiver, type WebhookReceiver, webhooksAbout } from '../harness/webhook-receiver.ts';

let system: System;
let checkResponse: ResponseCheck;
let tenant: Tenant;
let receiver: WebhookReceiver;

before(async () => {
  system = await startSystem({ env: { NOTIFY_PUBLIC_SEND_RATE: '100000/min', NOTIFY_PUBLIC_READ_RATE: '100000/min', NOTIFY_WEBHOOK_ALLOW_PRIVATE: 'true' } });
  checkResponse = openApiResponseCheck((await system.request('/api/v1/openapi.json', { method: 'GET' })).body);
  tenant = await system.createTenant(`tags-${randomUUID().slice(0, 6)}`);
  await system.putTemplate(tenant.projectId, 'welcome');
  receiver = await subscribedReceiver(system.db, tenant, ['message.sent']);
});

after(async () => {
  await receiver?.stop();
  await system?.stop();
  rmSync(secrets, { recursive: true, force: true });
});

const secrets = mkdtempSync(join(tmpdir(), 'notify-tags-e2e-'));

async function read(path: string, headers: Record<string, string> = {}): Promise<HttpResult> {
  const response = await system.request(path, {
    method: 'GET',
    headers: { authorization: `Api-Key ${tenant.apiKey}`, 'x-organization-id': String(tenant.organizationId), ...headers },
  });
  const documented = /^\/api\/v1\/messages\/\d+/.test(path) ? '/api/v1/messages/{message_id}' : '/api/v1/messages';
  assert.deepEqual(checkResponse('GET', documented, response), [], `GET ${path}: ${response.status} ${response.text}`);
  return response;
}

async function sendLabelled(labels: Record<string, unknown>, headers: Record<string, string> = {}): Promise<number> {
  const response = await system.send(tenant, validBody('welcome', labels), headers);
  assertAccepted(response);
  return response.body.message_id as number;
}

const messageCount = async (): Promise<number> =>
  (await system.db.query<{ n: number }>('SELECT count(*)::int AS n FROM messages WHERE project_id = $1', [tenant.projectId])).rows[0]?.n ?? -1;

test('tags and metadata are stored and read back by GET one and the list; a send without them reads [] and {}', async () => {
  const metadata = { order_id: 'A-1001', customer: 'Ada Lovelace' };
  const labelled = await sendLabelled({ tags: ['receipt', 'spring-2026'], metadata });
  const plain = await sendLabelled({});
  const one = await read(`/api/v1/messages/${labelled}/`);
  assert.deepEqual([one.body.tags, one.body.metadata], [['receipt', 'spring-2026'], metadata]);
  const none = await read(`/api/v1/messages/${plain}/`);
  assert.deepEqual([none.body.tags, none.body.metadata], [[], {}]);
  const listed = (await read('/api/v1/messages/?limit=2')).body.results as Array<Record<string, unknown>>;
  assert.deepEqual(
    listed.map((message) => [message.message_id, message.tags, message.metadata]),
    [
      [plain, [], {}],
      [labelled, ['receipt', 'spring-2026'], metadata],
    ],
  );
});

test('?tag= lists exactly the messages sent with that tag, case-sensitively, a page at a time', async () => {
  const tag = `t-${randomUUID().slice(0, 8)}`;
  const first = await sendLabelled({ tags: [tag] });
  await sendLabelled({ tags: [tag.toUpperCase()] });
  const second = await sendLabelled({ tags: ['other', tag] });
  const page = await read(`/api/v1/messages/?tag=${tag}&limit=1`);
  assert.equal(page.status, 200);
  const ids = [(page.body.results as Array<Record<string, unknown>>)[0]?.message_id];
  const next = await read(`/api/v1/messages/?tag=${tag}&limit=1&cursor=${String(page.body.next)}`);
  ids.push((next.body.results as Array<Record<string, unknown>>)[0]?.message_id);
  assert.deepEqual(ids, [second, first]);
  assert.equal(next.body.next, null);
  assert.deepEqual((await read(`/api/v1/messages/?tag=${tag.slice(0, -1)}`)).body.results, [], 'exact match, not a prefix');
});

test("a malformed ?tag= is 422 on tag, in the caller's language", async () => {
  const english = await read('/api/v1/messages/?tag=a%20b');
  assertFieldErrors(english, ['tag']);
  assert.deepEqual(english.body.tag, ['A tag is 1 to 64 letters, digits, underscores or hyphens.']);
  const spanish = await read(`/api/v1/messages/?tag=${'x'.repeat(65)}`, { 'accept-language': 'es' });
  assert.deepEqual(spanish.body, { tag: ['Una etiqueta tiene de 1 a 64 letras, dígitos, guiones bajos o guiones.'] });
});

test('labels that break a rule are 422 on tags and metadata, every rule at once, translated, and nothing is written', async () => {
  const before = await messageCount();
  const body = validBody('welcome', { tags: ['dup', 'dup'], metadata: { order_id: 7 } });
  const english = await system.send(tenant, body);
  assertFieldErrors(english, ['tags', 'metadata']);
  assert.deepEqual(english.body, { tags: ['Each tag may appear only once.'], metadata: ['Each value must be a string.'] });
  const spanish = await system.send(
    tenant,
    validBody('welcome', { tags: Array.from({ length: 11 }, (_, index) => `t${index}`), metadata: { 'bad key': 'v' } }),
    { 'accept-language': 'es' },
  );
  assert.deepEqual(spanish.body, {
    tags: ['Se permiten como máximo 10 etiquetas.'],
    metadata: ['Cada clave debe tener de 1 a 40 letras, dígitos, guiones bajos o guiones.'],
  });
  assert.equal(await messageCount(), before);
});

test('labels are part of the idempotency fingerprint: the same ones replay, other ones are a mismatch', async () => {
  const key = randomUUID();
  const labels = { tags: ['retry'], metadata: { attempt: 'first' } };
  const first = await sendLabelled(labels, { 'Idempotency-Key': key });
  const replay = await system.send(tenant, validBody('welcome', { metadata: labels.metadata, tags: labels.tags }), { 'Idempotency-Key': key });
  assertAccepted(replay);
  assert.deepEqual([replay.body.message_id, replay.body.idempotent_replay], [first, true]);
  const other = await system.send(tenant, validBody('welcome', { ...labels, metadata: { attempt: 'second' } }), { 'Idempotency-Key': key });
  assertFieldErrors(other, ['Idempotency-Key']);
});

test('the message.sent webhook carries data.tags and data.metadata; a message without labels carries [] and {}', async () => {
  const metadata = { order_id: 'A-1002' };
  const labelled = await sendLabelled({ tags: ['hooked'], metadata });
  const plain = await sendLabelled({});
  const [labelledHook, plainHook] = await waitFor(
    () => {
      const got = [webhooksAbout(receiver, 'message.sent', labelled)[0], webhooksAbout(receiver, 'message.sent', plain)[0]];
      return got.every(Boolean) ? got : undefined;
    },
    { timeoutMs: 20_000, what: 'the message.sent webhooks' },
  );
  assert.deepEqual([labelledHook?.body.data.tags, labelledHook?.body.data.metadata], [['hooked'], metadata]);
  assert.deepEqual([plainHook?.body.data.tags, plainHook?.body.data.metadata], [[], {}]);
});

test("the panel shows a message's tags and metadata, escaped, and its message search filters by tag", async () => {
  const password = 'tags panel password, long enough';
  const passwordFile = join(secrets, 'password');
  writeFileSync(passwordFile, `${password}\n`, { mode: 0o600 });
  const email = `viewer-${randomUUID().slice(0, 6)}@tags.example`;
  const created = await system.notifyctl(
    'panel-user',
    'create',
    '--org',
    String(tenant.organizationId),
    '--email',
    email,
    '--role',
    'viewer',
    '--password-file',
    passwordFile,
  );
  assert.equal(created.code, 0, created.stderr);
  const visitor = new PanelVisitor(system.gatewayUrl);
  assert.equal((await visitor.signIn(email, password)).status, 303);

  const tag = `panel-${randomUUID().slice(0, 8)}`;
  const tagged = await sendLabelled({ tags: [tag, 'second'], metadata: { note: '<b>bold</b> & co' } });
  const untagged = await sendLabelled({});
  const page = await visitor.get(`/panel/projects/${tenant.projectId}/messages/${tagged}`);
  assert.equal(page.status, 200, page.text);
  assert.match(
    page.text,
    new RegExp(`<dt>Tags</dt><dd><ul class="tags"><li><a href="/panel/projects/${tenant.projectId}/messages\\?tag=${tag}"><code>${tag}</code></a></li><li>`),
  );
  assert.match(page.text, /<dt>Metadata<\/dt><dd><dl class="metadata"><dt><code>note<\/code><\/dt><dd>&lt;b&gt;bold&lt;\/b&gt; &amp; co<\/dd><\/dl><\/dd>/);
  assert.match((await visitor.get(`/panel/projects/${tenant.projectId}/messages/${untagged}`)).text, /<dt>Tags<\/dt><dd>none<\/dd>/);

  const filtered = await visitor.get(`/panel/projects/${tenant.projectId}/messages?tag=${tag}`);
  assert.equal(filtered.status, 200, filtered.text);
  assert.match(filtered.text, new RegExp(`messages/${tagged}"`));
  assert.doesNotMatch(filtered.text, new RegExp(`messages/${untagged}"`));
  assert.match(filtered.text, new RegExp(`<input id="tag" name="tag" type="text" maxlength="64" value="${tag}"`));
  const mistaken = await visitor.get(`/panel/projects/${tenant.projectId}/messages?tag=a%20b`);
  assert.equal(mistaken.status, 400);
  assert.match(mistaken.text, /A tag is 1 to 64 letters, digits, underscores or hyphens\./);
});
