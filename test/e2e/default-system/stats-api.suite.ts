// The statistics over the public API against the running system (issue 53, item 6): messages sent through the system
// and accepted by its SMTP sink count as sent and delivered, bounce and complaint reports delivered to bounce-svc over
// SMTP at a message's return path count as hard and soft bounces and complaints (a bounce taking the message back
// from delivered), a one-click unsubscribe counts once, per tag too, read by UTC day and hour with empty buckets as zeros. Another project's counts never
// appear, both ways; a key without stats:read is refused; bad ranges are 422 per field in English and Spanish; every
// answer matches the OpenAPI document.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { parseDataKey, returnPathFor, unsubscribeToken } from '@notify/platform/mail';
import nodemailer from 'nodemailer';
import { assertCoded } from '../../harness/contract-shapes.ts';
import { documentedCall } from '../../harness/documented-call.ts';
import type { ResponseCheck } from '../../harness/openapi.ts';
import { arf, dsn } from '../../harness/report-samples.ts';
import type { HttpResult, System, Tenant } from '../../harness/system.ts';
import { startTenantPair } from '../../harness/tenant-pair.ts';
import { anotherKey, validBody } from '../../harness/tenants.ts';
import { waitFor } from '../../harness/wait.ts';

let system: System;
let alpha: Tenant;
let beta: Tenant;
let checkResponse: ResponseCheck;

before(async () => {
  ({ system, alpha, beta, checkResponse } = await startTenantPair('stats', { welcome: true }));
});

after(async () => {
  await system?.stop();
});

const call = (caller: Tenant, query: string, headers?: Record<string, string>): Promise<HttpResult> =>
  documentedCall(system, checkResponse, caller, {
    method: 'GET',
    path: `/api/v1/stats/?${query}`,
    documented: '/api/v1/stats',
    ...(headers ? { headers } : {}),
  });

const reader = (tenant: Tenant): Promise<Tenant> => anotherKey(system, tenant, 'stats reader', ['stats:read', 'send']);

const day = 86_400_000;
const utcDay = (offset: number): string => new Date(Math.floor(Date.now() / day) * day + offset * day).toISOString().slice(0, 10);
/** Yesterday to tomorrow by day: today's counts whatever the hour, and a bucket either side that a test ending past midnight may use. */
const threeDays = `from=${utcDay(-1)}&to=${utcDay(2)}&granularity=day`;

interface Bucket {
  start: string;
  sent: number;
  delivered: number;
  deferred: number;
  bounced: { hard: number; soft: number };
  complained: number;
  unsubscribed: number;
  failed: number;
}

/** The counters of the range summed over its buckets. */
async function totals(caller: Tenant, query: string): Promise<Omit<Bucket, 'start'>> {
  const answer = await call(caller, query);
  assert.equal(answer.status, 200, answer.text);
  const buckets = answer.body.buckets as Bucket[];
  const sum = (pick: (bucket: Bucket) => number): number => buckets.reduce((total, bucket) => total + pick(bucket), 0);
  return {
    sent: sum((b) => b.sent),
    delivered: sum((b) => b.delivered),
    deferred: sum((b) => b.deferred),
    bounced: { hard: sum((b) => b.bounced.hard), soft: sum((b) => b.bounced.soft) },
    complained: sum((b) => b.complained),
    unsubscribed: sum((b) => b.unsubscribed),
    failed: sum((b) => b.failed),
  };
}

const zero = { sent: 0, delivered: 0, deferred: 0, bounced: { hard: 0, soft: 0 }, complained: 0, unsubscribed: 0, failed: 0 };

/** Sends through the system and waits until the sink accepted the mail (`sent`). */
async function sentMessage(tenant: Tenant, to: string, tags: string[] = []): Promise<number> {
  const response = await system.send(tenant, validBody('welcome', { to, ...(tags.length > 0 ? { tags } : {}) }));
  assert.equal(response.status, 202, response.text);
  const id = response.body.message_id as number;
  await waitFor(
    async () => ((await system.db.query<{ state: string }>('SELECT state FROM messages WHERE id = $1', [id])).rows[0]?.state === 'sent' ? true : undefined),
    { timeoutMs: 15_000, what: `message ${id} sent` },
  );
  return id;
}

/** Delivers a report to bounce-svc at the message's return path over SMTP, with a null sender, as an MTA does. */
async function report(messageId: number, raw: (returnPath: string) => string): Promise<void> {
  const returnPath = returnPathFor(parseDataKey(system.stack.env.NOTIFY_DATA_KEY), messageId, system.stack.env.BOUNCE_DOMAIN);
  const transport = nodemailer.createTransport({ host: '127.0.0.1', port: Number(system.stack.env.BOUNCE_SMTP_PORT), secure: false, ignoreTLS: true });
  try {
    await transport.sendMail({ envelope: { from: '', to: returnPath }, raw: raw(returnPath) });
  } finally {
    transport.close();
  }
}

test('sends, deliveries, bounces and complaints count per day and per tag, empty days as zeros', async () => {
  const key = await reader(alpha);
  const [hard, soft, complained] = [
    await sentMessage(alpha, 'hard@stats.example', ['campaign-a']),
    await sentMessage(alpha, 'soft@stats.example', ['campaign-a']),
    await sentMessage(alpha, 'complains@stats.example'),
  ];
  await sentMessage(alpha, 'fine@stats.example', ['campaign-b']);
  await report(hard, (path) => dsn(path, { action: 'failed', status: '5.1.1', diagnostic: 'smtp; 550 5.1.1 User unknown' }));
  await report(soft, (path) => dsn(path, { action: 'failed', status: '4.2.2', diagnostic: 'smtp; 452 4.2.2 Mailbox full' }));
  await report(complained, (path) => arf(path));

  assert.deepEqual(await totals(key, threeDays), { ...zero, sent: 4, delivered: 2, bounced: { hard: 1, soft: 1 }, complained: 1 });
  assert.deepEqual(await totals(key, `${threeDays}&tag=campaign-a`), { ...zero, sent: 2, bounced: { hard: 1, soft: 1 } });
  assert.deepEqual(await totals(key, `${threeDays}&tag=campaign-b`), { ...zero, sent: 1, delivered: 1 });
  assert.deepEqual(await totals(key, `${threeDays}&tag=never-used`), zero);

  const answer = await call(key, threeDays);
  assert.equal(answer.body.time_zone, 'UTC');
  assert.equal(answer.body.tag, null);
  assert.equal(answer.body.from, `${utcDay(-1)}T00:00:00Z`);
  assert.deepEqual(
    (answer.body.buckets as Bucket[]).map((bucket) => bucket.start),
    [-1, 0, 1].map((offset) => `${utcDay(offset)}T00:00:00Z`),
  );
  assert.deepEqual((answer.body.buckets as Bucket[])[0], { start: `${utcDay(-1)}T00:00:00Z`, ...zero }, 'a day without messages is zeros');

  // By hour, the current hour holds what was just sent (read over the hour and the next, in case it just turned).
  const hour = Math.floor(Date.now() / 3_600_000) * 3_600_000;
  const hours = await call(
    key,
    `from=${new Date(hour - 3_600_000).toISOString().slice(0, 19)}Z&to=${new Date(hour + 7_200_000).toISOString().slice(0, 19)}Z&granularity=hour`,
  );
  assert.equal(hours.status, 200, hours.text);
  assert.equal((hours.body.buckets as Bucket[]).length, 3);
  assert.equal(
    (hours.body.buckets as Bucket[]).reduce((total, bucket) => total + bucket.sent, 0),
    4,
  );
});

test('a one-click unsubscribe counts once, for the project and the tags of its message', async () => {
  const key = await reader(alpha);
  const before = await totals(key, threeDays);
  const id = await sentMessage(alpha, 'leaver@stats.example', ['newsletter']);
  const token = unsubscribeToken(parseDataKey(system.stack.env.NOTIFY_DATA_KEY), {
    projectId: alpha.projectId,
    messageId: id,
    address: 'leaver@stats.example',
  });
  // RFC 8058's POST, as a mail client sends it; the second finds the address listed already and counts nothing.
  for (let times = 0; times < 2; times += 1) {
    const response = await system.request(`/u/${token}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'List-Unsubscribe=One-Click',
    });
    assert.ok(response.status < 300, `${response.status} ${response.text}`);
  }
  assert.equal((await totals(key, threeDays)).unsubscribed, before.unsubscribed + 1);
  assert.deepEqual(await totals(key, `${threeDays}&tag=newsletter`), { ...zero, sent: 1, delivered: 1, unsubscribed: 1 });
});

test("another project's counts never appear, both ways", async () => {
  const [alphaKey, betaKey] = [await reader(alpha), await reader(beta)];
  await sentMessage(beta, 'beta-only@stats.example', ['beta-tag']);
  const alphaBefore = await totals(alphaKey, threeDays);
  assert.deepEqual(await totals(alphaKey, `${threeDays}&tag=beta-tag`), zero);
  assert.deepEqual(await totals(betaKey, threeDays), { ...zero, sent: 1, delivered: 1 }, 'beta sees only its own message');
  await sentMessage(alpha, 'alpha-again@stats.example', ['beta-tag']);
  assert.deepEqual(await totals(betaKey, `${threeDays}&tag=beta-tag`), { ...zero, sent: 1, delivered: 1 }, "alpha's message with the same tag is not beta's");
  assert.equal((await totals(alphaKey, threeDays)).sent, alphaBefore.sent + 1);
});

test('a key without stats:read is refused, naming the scope', async () => {
  const refused = await call(alpha, threeDays);
  assertCoded(refused, 403, 'insufficient_scope');
  assert.match(String(refused.body.detail), /stats:read/);
});

test('bad ranges are refused per field, in English and in Spanish', async () => {
  const key = await reader(alpha);
  const cases: Array<[string, string[]]> = [
    ['', ['from', 'to']],
    ['from=2026-03-01&to=2026-02-01', ['to']],
    ['from=2026-03-01T10:30:00Z&to=2026-03-02&granularity=hour', ['from']],
    ['from=2026-03-01T10:00:00Z&to=2026-03-02&granularity=day', ['from']],
    ['from=2026-03-01T10:00:00%2B02:00&to=2026-02-30', ['from', 'to']],
    ['from=2025-01-01&to=2026-03-01', ['to']],
    ['from=2026-01-01&to=2026-03-01&granularity=hour', ['to']],
    ['from=2026-01-01&to=2026-01-02&granularity=week&tag=bad%20tag&extra=1', ['extra', 'granularity', 'tag']],
    ['from=2026-01-01&from=2026-01-02&to=2026-01-03', ['from']],
  ];
  for (const [query, fields] of cases) {
    const english = await call(key, query);
    assert.equal(english.status, 422, `${query}: ${english.text}`);
    assert.deepEqual(Object.keys(english.body).sort(), fields, query);
    const spanish = await call(key, query, { 'accept-language': 'es' });
    assert.equal(spanish.headers.get('content-language'), 'es');
    for (const field of fields) assert.notDeepEqual(spanish.body[field], english.body[field], `${query}: ${field} in Spanish`);
  }
  const span = await call(key, 'from=2026-01-01&to=2026-03-01&granularity=hour', { 'accept-language': 'es' });
  assert.deepEqual(span.body.to, ['Como máximo 31 días con granularity=hour.']);
  const longest = await call(key, 'from=2024-01-01&to=2025-01-01');
  assert.equal(longest.status, 200, '366 days by day is the longest range');
  assert.equal((longest.body.buckets as Bucket[]).length, 366);
});
