// Scheduled sends (docs/contract.md, "Scheduled sends") against the running system: `send_at` on a send (202 scheduled,
// 422 on send_at in both languages), the message read back and listed as scheduled, released within a second of its
// time and delivered, canceled with DELETE /api/v1/messages/{id}/ (200, 409 not_cancelable, 404 for another tenant),
// idempotent replays, the quota, and a releaser SIGKILLed while it releases. Every response is checked against the
// OpenAPI document the gateway serves.
import assert from 'node:assert/strict';
import { hash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { assertAccepted, assertCoded, assertFieldErrors, assertScheduled, writtenRows } from '../harness/contract-shapes.ts';
import { audit, waitForStates } from '../harness/delivery-audit.ts';
import { openApiResponseCheck, type ResponseCheck } from '../harness/openapi.ts';
import { csrfTokenOf, PanelVisitor } from '../harness/panel-visitor.ts';
import { gatewayReachesServices } from '../harness/service-waits.ts';
import { type HttpResult, type System, startSystem, type Tenant } from '../harness/system.ts';
import { validBody } from '../harness/tenants.ts';
import { waitFor } from '../harness/wait.ts';

let system: System;
let tenant: Tenant;
let checkResponse: ResponseCheck;

before(async () => {
  system = await startSystem({
    env: { NOTIFY_PUBLIC_SEND_RATE: '100000/min', NOTIFY_PUBLIC_READ_RATE: '100000/min', OUTBOX_RELAY_INTERVAL: '200ms', OUTBOX_RELAY_MIN_AGE: '1s' },
  });
  tenant = await system.createTenant('scheduled');
  await system.putTemplate(tenant.projectId, 'welcome');
  checkResponse = openApiResponseCheck((await system.request('/api/v1/openapi.json', { method: 'GET' })).body);
});

after(async () => {
  await system?.stop();
});

const inSeconds = (seconds: number): string => new Date(Date.now() + seconds * 1_000).toISOString();
const messagePath = '/api/v1/messages/{message_id}';

async function send(as: Tenant, body: unknown, headers: Record<string, string> = {}): Promise<HttpResult> {
  const response = await system.send(as, body, headers);
  assert.deepEqual(checkResponse('POST', '/api/v1/send/', response), [], `${response.status} ${response.text}`);
  return response;
}

async function call(as: Tenant, method: 'GET' | 'DELETE', path: string, headers: Record<string, string> = {}): Promise<HttpResult> {
  const response = await system.request(path, {
    method,
    headers: { authorization: `Api-Key ${as.apiKey}`, 'x-organization-id': String(as.organizationId), ...headers },
  });
  const documented = path.startsWith('/api/v1/messages?') ? '/api/v1/messages' : messagePath;
  assert.deepEqual(checkResponse(method, documented, response), [], `${method} ${path}: ${response.status} ${response.text}`);
  return response;
}

async function schedule(sendAt: string, to = 'later@example.com', as = tenant): Promise<number> {
  const response = await send(as, validBody('welcome', { to, send_at: sendAt }));
  assertScheduled(response);
  return response.body.message_id as number;
}

const statuses = (body: Record<string, unknown>): unknown[] => (body.events as Array<Record<string, unknown>>).map((event) => event.status);

test('a scheduled send is 202 scheduled with send_at, reads back and lists as scheduled, is queued within 1 s of its time, and is delivered', async () => {
  const sendAt = inSeconds(2);
  const accepted = await send(tenant, validBody('welcome', { to: 'on-time@example.com', send_at: sendAt.replace('Z', '+00:00') }));
  assertScheduled(accepted);
  assert.equal(accepted.body.send_at, sendAt);
  const id = accepted.body.message_id as number;

  const read = await call(tenant, 'GET', `/api/v1/messages/${id}/`);
  assert.equal(read.body.status, 'scheduled');
  assert.equal(read.body.send_at, sendAt);
  assert.deepEqual(statuses(read.body), ['scheduled']);
  const listed = await call(tenant, 'GET', '/api/v1/messages?status=scheduled');
  assert.ok(
    (listed.body.results as Array<Record<string, unknown>>).some((message) => message.message_id === id),
    listed.text,
  );

  const sent = await waitFor(
    async () => {
      const response = await call(tenant, 'GET', `/api/v1/messages/${id}/`);
      return response.body.status === 'sent' && response;
    },
    { timeoutMs: 20_000, what: 'the scheduled message to be sent' },
  );
  assert.deepEqual(statuses(sent.body), ['scheduled', 'queued', 'sending', 'sent']);
  const queuedAt = Date.parse(String((sent.body.events as Array<Record<string, unknown>>)[1]?.at));
  const late = queuedAt - Date.parse(sendAt);
  assert.ok(late >= 0 && late < 1_000, `queued ${late} ms after its send_at`);
  assert.equal(sent.body.send_at, sendAt, 'send_at stays readable after the release');
  assert.equal((await audit(system.db, system.resources.mailDir, [id])).delivered, 1);
});

test('a send without send_at is answered exactly as before', async () => {
  assertAccepted(await send(tenant, validBody('welcome')));
});

test('send_at in the past, malformed or more than 30 days ahead is 422 on send_at, in English and Spanish, writing nothing', async () => {
  const before = await writtenRows(system.db);
  const cases: Array<[unknown, string, string]> = [
    [inSeconds(-5), 'This time has already passed; omit send_at to send at once.', 'Esta hora ya pasó; omita send_at para enviar de inmediato.'],
    [
      '2030-01-01 10:00',
      'Enter an RFC 3339 time with its offset, such as 2026-01-31T09:30:00Z or 2026-01-31T10:30:00+01:00.',
      'Indique una hora RFC 3339 con su desfase, como 2026-01-31T09:30:00Z o 2026-01-31T10:30:00+01:00.',
    ],
    [inSeconds(31 * 86_400), 'A send can be scheduled at most 30 days ahead.', 'Un envío puede programarse como máximo con 30 días de antelación.'],
  ];
  for (const [sendAt, english, spanish] of cases) {
    const refused = await send(tenant, validBody('welcome', { send_at: sendAt }));
    assertFieldErrors(refused, ['send_at']);
    assert.deepEqual(refused.body.send_at, [english]);
    const enSpanish = await send(tenant, validBody('welcome', { send_at: sendAt }), { 'accept-language': 'es' });
    assert.deepEqual(enSpanish.body.send_at, [spanish]);
    assert.equal(enSpanish.headers.get('content-language'), 'es');
  }
  assert.deepEqual(await writtenRows(system.db), before);
});

test('DELETE cancels a scheduled message: 200 canceled with the transition, its job gone; then 409 not_cancelable, on the read bucket', async () => {
  const id = await schedule(inSeconds(3_600));
  const canceled = await call(tenant, 'DELETE', `/api/v1/messages/${id}/`);
  assert.equal(canceled.status, 200, canceled.text);
  assert.equal(canceled.body.message_id, id);
  assert.equal(canceled.body.status, 'canceled');
  assert.deepEqual(statuses(canceled.body), ['scheduled', 'canceled']);
  assert.match(canceled.headers.get('ratelimit-policy') ?? '', /^"read";q=\d+;w=60$/);
  const { rows } = await system.db.query<{ pending: number }>(
    'SELECT (SELECT count(*) FROM scheduled_messages WHERE message_id = $1) + (SELECT count(*) FROM outbox WHERE message_id = $1) AS pending',
    [id],
  );
  assert.equal(Number(rows[0]?.pending), 0, 'no job waits for a canceled message');

  const again = await call(tenant, 'DELETE', `/api/v1/messages/${id}`, { 'accept-language': 'es' });
  assertCoded(again, 409, 'not_cancelable');
  assert.match(String(again.body.detail), /ya no se puede cancelar/);
  assert.equal((await call(tenant, 'GET', `/api/v1/messages/${id}/`)).body.status, 'canceled');
});

test("a message sent at once, or already queued, is 409 not_cancelable; another tenant's scheduled message is 404 and stays scheduled", async () => {
  const queued = await send(tenant, validBody('welcome'));
  assertCoded(await call(tenant, 'DELETE', `/api/v1/messages/${String(queued.body.message_id)}/`), 409, 'not_cancelable');

  const other = await system.createTenant('scheduled-other');
  await system.putTemplate(other.projectId, 'welcome');
  const theirs = await schedule(inSeconds(3_600), 'theirs@example.com', other);
  assertCoded(await call(tenant, 'DELETE', `/api/v1/messages/${theirs}/`), 404, 'message_not_found');
  assertCoded(await call(tenant, 'DELETE', '/api/v1/messages/0/'), 404, 'message_not_found');
  assert.equal((await call(other, 'GET', `/api/v1/messages/${theirs}/`)).body.status, 'scheduled');
});

test('an idempotent replay of a scheduled send answers the first 202 with its send_at and creates nothing', async () => {
  const key = randomUUID();
  const body = validBody('welcome', { to: 'replay@example.com', send_at: inSeconds(3_600) });
  const first = await send(tenant, body, { 'idempotency-key': key });
  assertScheduled(first);
  const before = await writtenRows(system.db);
  const replay = await send(tenant, body, { 'idempotency-key': key });
  assertScheduled(replay);
  assert.deepEqual(replay.body, { ...first.body, idempotent_replay: true });
  assert.equal(replay.headers.get('idempotent-replayed'), 'true');
  assert.deepEqual(await writtenRows(system.db), before);
});

test('a scheduled send uses quota when it is accepted, and a cancel does not give it back', async () => {
  const limited = await system.createTenant('scheduled-quota');
  await system.putTemplate(limited.projectId, 'welcome');
  await system.notifyctlOk('plan', 'update', '--id', String(limited.planId), '--monthly-quota', '1');
  const id = await schedule(inSeconds(3_600), 'quota@example.com', limited);
  assert.equal((await call(limited, 'DELETE', `/api/v1/messages/${id}/`)).status, 200);
  assertCoded(await send(limited, validBody('welcome')), 403, 'plan_blocked');
});

/** A panel user of the tenant's organization, signed in. */
async function panelUser(role: 'operator' | 'viewer'): Promise<PanelVisitor> {
  const secrets = mkdtempSync(join(tmpdir(), 'notify-scheduled-'));
  const password = randomBytes(12).toString('base64url');
  const email = `${role}-${randomUUID().slice(0, 8)}@scheduled.example`;
  try {
    writeFileSync(join(secrets, 'password'), `${password}\n`, { mode: 0o600 });
    await system.notifyctlOk(
      'panel-user',
      'create',
      '--org',
      String(tenant.organizationId),
      '--email',
      email,
      '--role',
      role,
      '--password-file',
      join(secrets, 'password'),
    );
  } finally {
    rmSync(secrets, { recursive: true, force: true });
  }
  const visitor = new PanelVisitor(system.gatewayUrl);
  assert.equal((await visitor.signIn(email, password)).status, 303);
  return visitor;
}

test('the panel shows a scheduled message with its time and, to an operator, a cancel button that cancels it (CSRF-checked)', async () => {
  const id = await schedule(inSeconds(3_600), 'panel@example.com');
  const path = `/panel/projects/${tenant.projectId}/messages/${id}`;

  const viewer = await panelUser('viewer');
  const seen = await viewer.get(path);
  assert.equal(seen.status, 200);
  assert.match(seen.text, /data-state="scheduled"/);
  assert.match(seen.text, /Scheduled for/);
  assert.doesNotMatch(seen.text, /Cancel the send/);
  assert.equal((await viewer.post(`${path}/cancel`, { _csrf: csrfTokenOf(seen.text) })).status, 403);
  const listed = await viewer.get(`/panel/projects/${tenant.projectId}/messages?state=scheduled`);
  assert.match(listed.text, new RegExp(`${path}"`), 'the scheduled filter lists it');

  const operator = await panelUser('operator');
  const page = await operator.get(path);
  assert.match(page.text, new RegExp(`action="${path}/cancel"`));
  assert.equal((await operator.post(`${path}/cancel`, { _csrf: 'not the token' })).status, 403, 'a post without the session token is refused');
  assert.equal((await call(tenant, 'GET', `/api/v1/messages/${id}/`)).body.status, 'scheduled');
  const canceled = await operator.post(`${path}/cancel`, { _csrf: csrfTokenOf(page.text) });
  assert.equal(canceled.status, 303);
  assert.equal(canceled.headers.get('location'), `${path}?cancel=done&message=${id}`);
  const after = await operator.get(canceled.headers.get('location') ?? '');
  assert.match(after.text, new RegExp(`Message ${id} was canceled: it will not be sent\\.`));
  assert.match(after.text, /data-state="canceled"/);
  const read = await call(tenant, 'GET', `/api/v1/messages/${id}/`);
  assert.equal(read.body.status, 'canceled');
  assert.equal((read.body.events as Array<Record<string, unknown>>).at(-1)?.reason, 'canceled in the web panel');
  const again = await operator.post(`${path}/cancel`, { _csrf: csrfTokenOf(after.text) });
  assert.equal(again.headers.get('location'), `${path}?cancel=not_cancelable&message=${id}`);
  const canceledList = await operator.get(`/panel/projects/${tenant.projectId}/messages?state=canceled`);
  assert.match(canceledList.text, new RegExp(`${path}"`), 'the canceled filter lists it');
});

/** The releasers' advisory lock as pg_locks shows a bigint key: its high and low 32 bits (dispatch-svc's scheduled/schedule-store.ts). */
const releaseLock = ((): { classid: string; objid: string } => {
  const key = BigInt.asUintN(64, hash('sha256', 'notify.schedule:releaser', 'buffer').readBigInt64BE(0));
  return { classid: String(key >> 32n), objid: String(key & 0xffffffffn) };
})();

test('dispatch-svc SIGKILLed while it releases: after a restart every due message is queued once and delivered as exactly one email', {
  timeout: 90_000,
}, async () => {
  // Many messages due at one instant make one long release transaction. The lead time covers scheduling them on a busy machine.
  const sendAt = inSeconds(8);
  const ids: number[] = [];
  for (let start = 0; start < 120; start += 40) {
    ids.push(...(await Promise.all(Array.from({ length: 40 }, (_, index) => schedule(sendAt, `due-${start + index}@example.com`)))));
  }
  assert.ok(Date.now() < Date.parse(sendAt), 'scheduling took longer than the lead time; raise it');
  // The releaser holds its advisory lock only inside a release transaction, and runs its release statement in it:
  // the moment to kill it.
  const probe = await system.db.connect();
  try {
    await waitFor(
      async () => {
        const { rows } = await probe.query(
          `SELECT 1 FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
            WHERE l.locktype = 'advisory' AND l.classid::text = $1 AND l.objid::text = $2 AND l.objsubid = 1 AND l.granted
              AND a.application_name = 'dispatch-svc' AND a.state = 'active' AND a.query LIKE '%DELETE FROM scheduled_messages%'`,
          [releaseLock.classid, releaseLock.objid],
        );
        return Date.now() >= Date.parse(sendAt) && rows.length > 0;
      },
      { timeoutMs: 15_000, intervalMs: 1, what: 'the releaser to hold its lock once the messages are due' },
    );
    system.stack.kill('dispatch-svc', 'SIGKILL');
  } finally {
    probe.release();
  }
  const { rows } = await system.db.query<{ state: string; n: number }>(
    'SELECT state::text, count(*)::int AS n FROM messages WHERE id = ANY($1::bigint[]) GROUP BY state',
    [ids],
  );
  console.log(`killed while releasing; states then: ${JSON.stringify(rows)}`);

  const killedAt = performance.now();
  await system.stack.restart('dispatch-svc');
  await gatewayReachesServices(() => system.send(tenant, validBody('no-such-template')));
  const restartedAt = performance.now();
  await waitForStates(system.db, ids, { timeoutMs: 60_000, what: 'every due message to be delivered after the restart' });
  console.log(
    `dispatch-svc back ${Math.round(restartedAt - killedAt)} ms after the kill; all ${ids.length} delivered ${Math.round(performance.now() - restartedAt)} ms later`,
  );
  const result = await audit(system.db, system.resources.mailDir, ids);
  assert.deepEqual({ delivered: result.delivered, duplicates: result.duplicates, broken: result.broken }, { delivered: ids.length, duplicates: 0, broken: [] });
  const queuedTwice = await system.db.query(
    'SELECT message_id FROM message_events WHERE message_id = ANY($1::bigint[]) AND state = $2 GROUP BY message_id HAVING count(*) > 1',
    [ids, 'queued'],
  );
  assert.equal(queuedTwice.rowCount, 0, 'each message was released once');
});
