// Message retention (issue 20 item 1; docs/operations.md, "Retention") against the running system: messages of two
// organizations with different retentions, sent and delivered for real (with their webhooks), made old with SQL;
// `notifyctl messages purge --json` deletes the final ones past their organization's retention with their events,
// outbox rows, idempotency records and webhook events, deliveries and attempts, and leaves young ones and messages on
// their way however old; `notifyctl org update --retention` sets and clears an override, which the panel shows and the
// next purge applies; only the admin token purges; dispatch-svc's metrics count the purged rows and report what is
// kept. The periodic purge is set an hour apart, so every purge here is notifyctl's.
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { GrpcClient } from '@notify/platform';
import { dispatchProto } from '@notify/proto';
import { assertAccepted, assertScheduled } from '../harness/contract-shapes.ts';
import { waitForStates } from '../harness/delivery-audit.ts';
import { PanelVisitor } from '../harness/panel-visitor.ts';
import { refusal } from '../harness/refusal.ts';
import { type System, startSystem, type Tenant } from '../harness/system.ts';
import { validBody } from '../harness/tenants.ts';
import { waitFor } from '../harness/wait.ts';
import { subscribedReceiver, type WebhookReceiver } from '../harness/webhook-receiver.ts';

let system: System;
/** Keeps the deployment's 30 days until the last test. */
let long: Tenant;
/** Keeps 2 days of its own. */
let short: Tenant;
const receivers: WebhookReceiver[] = [];

before(async () => {
  system = await startSystem({
    env: {
      NOTIFY_PUBLIC_SEND_RATE: '100000/min',
      NOTIFY_WEBHOOK_ALLOW_PRIVATE: 'true',
      RETENTION_PURGE_INTERVAL: '1h',
      // An outbox row the test writes must wait for the purge, not be relayed (and mailed again) first.
      OUTBOX_RELAY_MIN_AGE: '50s',
    },
  });
  long = await system.createTenant('retention-long');
  short = await system.createTenant('retention-short');
  for (const tenant of [long, short]) {
    await system.putTemplate(tenant.projectId, 'welcome');
    receivers.push(await subscribedReceiver(system.db, tenant, ['message.sent']));
  }
});

after(async () => {
  for (const receiver of receivers) await receiver.stop();
  await system?.stop();
});

async function notifyctlJson(...args: string[]): Promise<Record<string, unknown>> {
  return JSON.parse(await system.notifyctlOk(...args, '--json')) as Record<string, unknown>;
}

async function sendOne(tenant: Tenant, headers: Record<string, string> = {}): Promise<number> {
  const response = await system.send(tenant, validBody('welcome', { to: `${randomUUID()}@example.com` }), headers);
  assertAccepted(response);
  return response.body.message_id as number;
}

/** Makes messages look `days` old: their last change, and the events that made them. */
async function age(ids: readonly number[], days: number): Promise<void> {
  await system.db.query(
    'UPDATE messages SET updated_at = now() - make_interval(days => $2), created_at = now() - make_interval(days => $2 + 1) WHERE id = ANY($1::bigint[])',
    [ids, days],
  );
  await system.db.query('UPDATE message_events SET occurred_at = now() - make_interval(days => $2) WHERE message_id = ANY($1::bigint[])', [ids, days]);
}

/** Rows referencing each message, by table. */
async function rowsOf(ids: readonly number[]): Promise<Record<string, number>> {
  const { rows } = await system.db.query<Record<string, number>>(
    `SELECT (SELECT count(*) FROM messages WHERE id = ANY($1::bigint[]))::int AS messages,
            (SELECT count(*) FROM message_events WHERE message_id = ANY($1::bigint[]))::int AS message_events,
            (SELECT count(*) FROM outbox WHERE message_id = ANY($1::bigint[]))::int AS outbox,
            (SELECT count(*) FROM idempotency_keys WHERE message_id = ANY($1::bigint[]))::int AS idempotency_keys,
            (SELECT count(*) FROM webhook_events WHERE message_id = ANY($1::bigint[]))::int AS webhook_events,
            (SELECT count(*) FROM webhook_deliveries d JOIN webhook_events w ON w.id = d.event_id WHERE w.message_id = ANY($1::bigint[]))::int AS webhook_deliveries,
            (SELECT count(*) FROM webhook_attempts a JOIN webhook_events w ON w.id = a.event_id WHERE w.message_id = ANY($1::bigint[]))::int AS webhook_attempts`,
    [ids],
  );
  return rows[0] ?? {};
}

async function metrics(): Promise<string> {
  return (await fetch(`http://127.0.0.1:${system.stack.ports.metrics.dispatch}/metrics`)).text();
}

/** The value of the series of `name` whose labels include `label` (the registry adds its own labels beside). */
function sample(text: string, name: string, label: string): number | undefined {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${name}{`) && new RegExp(`[{,]${label}[,}]`).test(candidate));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

/** A panel operator of the tenant's organization, signed in. */
async function panelOperator(tenant: Tenant): Promise<PanelVisitor> {
  const secrets = mkdtempSync(join(tmpdir(), 'notify-retention-'));
  const password = randomBytes(12).toString('base64url');
  const email = `operator-${randomUUID().slice(0, 8)}@retention.example`;
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
      'operator',
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

test("notifyctl org update --retention sets an organization's own retention, listed and shown in the panel", async () => {
  assert.equal((await notifyctlJson('org', 'update', '--id', String(short.organizationId), '--retention', '48h')).messageRetention, '2d');
  const listed = await system.notifyctlOk('org', 'list');
  assert.match(listed, /RETENTION/);
  assert.match(listed.split('\n').find((line) => line.includes('retention-short')) ?? '', /\s2d$/);
  assert.match(listed.split('\n').find((line) => line.includes('retention-long')) ?? '', /\sdefault$/);
  assert.match((await (await panelOperator(short)).get('/panel/')).text, /kept for 2d after their last change/);
});

test("notifyctl messages purge deletes the final messages past their organization's retention with every row that references them, and keeps young ones and messages on their way", async () => {
  // Delivered for real, each with its message.sent webhook attempted: events, a webhook event, delivery and attempt.
  const idempotent = await sendOne(long, { 'idempotency-key': randomUUID() });
  const longIds = [idempotent, await sendOne(long), await sendOne(long)];
  const shortIds = [await sendOne(short), await sendOne(short), await sendOne(short)];
  const delivered = [...longIds, ...shortIds];
  await waitForStates(system.db, delivered, { timeoutMs: 20_000, states: ['sent'] });
  await waitFor(async () => (await rowsOf(delivered)).webhook_attempts! >= delivered.length || undefined, {
    timeoutMs: 20_000,
    what: 'a webhook attempt for every message',
  });
  // On their way, however old: a scheduled send, and (set with SQL: the pipeline would move them on) a queued and a deferred one.
  const scheduled = await system.send(long, validBody('welcome', { send_at: new Date(Date.now() + 3_600_000).toISOString() }));
  assertScheduled(scheduled);
  const [stuckQueued, stuckDeferred] = [await sendOne(long), await sendOne(long)];
  await waitForStates(system.db, [stuckQueued as number, stuckDeferred as number], { timeoutMs: 20_000, states: ['sent'] });
  await system.db.query(
    "UPDATE messages SET state = CASE WHEN id = $1 THEN 'queued'::message_state ELSE 'deferred'::message_state END WHERE id = ANY($2::bigint[])",
    [stuckQueued, [stuckQueued, stuckDeferred]],
  );
  const onTheirWay = [scheduled.body.message_id as number, stuckQueued as number, stuckDeferred as number];

  const [longOld, longOld2, longYoung] = longIds as [number, number, number];
  const [shortOld, shortOld2, shortYoung] = shortIds as [number, number, number];
  await age([longOld, longOld2], 31); // past the deployment's 30 days
  await age([longYoung], 10); // within 30 days, though past the short organization's 2
  await age([shortOld, shortOld2], 3); // past its own 2 days
  await age([shortYoung], 1);
  await age(onTheirWay, 400);
  // An outbox row of an old message, as a publish JetStream never confirmed would have left it.
  await system.db.query("INSERT INTO outbox (message_id, payload) VALUES ($1, '{}')", [longOld]);

  const doomed = [longOld, longOld2, shortOld, shortOld2];
  const kept = [longYoung, shortYoung, ...onTheirWay];
  const before = await rowsOf(doomed);
  assert.deepEqual([before.outbox, before.idempotency_keys, before.webhook_events, before.webhook_deliveries], [1, 1, 4, 4]);
  assert.ok(before.message_events! >= 4 * 3 && before.webhook_attempts! >= 4, JSON.stringify(before));
  const keptBefore = await rowsOf(kept);
  const purgedBefore = sample(await metrics(), 'notify_retention_purged_rows_total', 'table="messages"') ?? 0;

  // Only the admin token purges: a leaked gateway token cannot.
  const asGateway = new GrpcClient(dispatchProto.RetentionAdminService.service, system.stack.env.DISPATCH_SVC_ADDR, {
    token: system.stack.env.GATEWAY_TOKEN,
    deadlineMs: 5_000,
  });
  try {
    assert.equal((await refusal(asGateway.call('PurgeExpiredMessages', {}))).status, status.PERMISSION_DENIED);
  } finally {
    asGateway.close();
  }
  assert.deepEqual(await notifyctlJson('messages', 'purge'), { deleted: 4 });

  assert.deepEqual(await rowsOf(doomed), {
    messages: 0,
    message_events: 0,
    outbox: 0,
    idempotency_keys: 0,
    webhook_events: 0,
    webhook_deliveries: 0,
    webhook_attempts: 0,
  });
  assert.deepEqual(await rowsOf(kept), keptBefore);
  const read = await system.request(`/api/v1/messages/${longOld}/`, {
    method: 'GET',
    headers: { authorization: `Api-Key ${long.apiKey}`, 'x-organization-id': String(long.organizationId) },
  });
  assert.equal(read.status, 404);
  assert.match(await system.notifyctlOk('messages', 'purge'), /^purged 0 messages\n$/);

  const text = await metrics();
  assert.equal(sample(text, 'notify_retention_purged_rows_total', 'table="messages"'), purgedBefore + 4);
  assert.equal(sample(text, 'notify_retention_purged_rows_total', 'table="webhook_events"'), before.webhook_events);
  assert.equal(sample(text, 'notify_retention_purged_rows_total', 'table="message_events"'), before.message_events);
  // What the alert compares: the oldest kept final message (10 days, 1 day) beside each organization's retention.
  const longAge = sample(text, 'notify_retention_oldest_final_message_age_seconds', `organization_id="${long.organizationId}"`) ?? 0;
  assert.ok(Math.abs(longAge - 10 * 86_400) < 600, String(longAge));
  assert.equal(sample(text, 'notify_message_retention_seconds', `organization_id="${long.organizationId}"`), 30 * 86_400);
  assert.equal(sample(text, 'notify_message_retention_seconds', `organization_id="${short.organizationId}"`), 2 * 86_400);
  assert.ok((sample(text, 'notify_table_size_bytes', 'table="messages"') ?? 0) > 0);
});

test("an organization's override applies at the next purge, and clearing it goes back to the deployment's retention", async () => {
  const [young, middle] = [await sendOne(long), await sendOne(short)];
  await waitForStates(system.db, [young, middle], { timeoutMs: 20_000, states: ['sent'] });
  await age([young, middle], 5);
  // Back on the deployment's 30 days, the short organization keeps a 5-day-old message; 3 days of its own would not.
  await system.notifyctlOk('org', 'update', '--id', String(short.organizationId), '--retention', 'default');
  assert.deepEqual(await notifyctlJson('messages', 'purge'), { deleted: 0 });
  // 3 days of its own: the long organization's 5-day-old message goes, and its 10-day-old one of the previous test.
  await system.notifyctlOk('org', 'update', '--id', String(long.organizationId), '--retention', '3d');
  assert.deepEqual(await notifyctlJson('messages', 'purge'), { deleted: 2 });
  assert.equal((await rowsOf([young])).messages, 0);
  assert.equal((await rowsOf([middle])).messages, 1);
});
