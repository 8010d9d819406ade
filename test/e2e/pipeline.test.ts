// One accepted request becomes one delivered email: gateway → auth-svc → dispatch-svc → JetStream → mailer → SMTP.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { notifyMessageId, readMails } from '../harness/mailbox.ts';
import { type System, startSystem, type Tenant } from '../harness/system.ts';
import { waitFor } from '../harness/wait.ts';

let system: System;
let tenant: Tenant;

before(async () => {
  system = await startSystem({ mailerReplicas: 2, env: { NOTIFY_PUBLIC_SEND_RATE: '100000/min' } });
  tenant = await system.createTenant('pipeline');
  await system.putTemplate(tenant.projectId, 'welcome', {
    subject: 'Welcome, {{ name }}!',
    html: '<h1>Hello {{ name }}</h1>',
    text: 'Hello {{ name }}',
    schema: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } },
  });
});

after(async () => {
  await system?.stop();
});

async function mailsFor(messageIds: ReadonlySet<number>) {
  return (await readMails(system.resources.mailDir)).filter((mail) => messageIds.has(notifyMessageId(mail)));
}

test('an accepted send becomes exactly one email with the rendered subject and the data escaped in its HTML', async () => {
  const name = '<script>alert("x")</script> & Ada';
  const response = await system.send(tenant, { template: 'welcome', to: 'ada@example.com', channel: 'email', data: { name } });
  assert.equal(response.status, 202, response.text);
  assert.deepEqual(Object.keys(response.body).sort(), ['celery_task_id', 'idempotent_replay', 'message_id', 'status']);
  assert.equal(response.body.status, 'queued');
  assert.equal(response.body.idempotent_replay, false);
  assert.ok(Number.isInteger(response.body.message_id));
  assert.match(String(response.body.celery_task_id), /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);

  const id = response.body.message_id as number;
  const [mail] = await waitFor(
    async () => {
      const mails = await mailsFor(new Set([id]));
      return mails.length > 0 ? mails : undefined;
    },
    { timeoutMs: 15_000, what: 'the email' },
  );
  assert.ok(mail);
  assert.equal(mail.subject, `Welcome, ${name}!`);
  assert.deepEqual(mail.to && !Array.isArray(mail.to) ? mail.to.value.map((address) => address.address) : [], ['ada@example.com']);
  assert.ok(typeof mail.html === 'string');
  assert.match(mail.html, /&lt;script&gt;alert\((&quot;|&#34;)x(&quot;|&#34;)\)&lt;\/script&gt; &amp; Ada/);
  assert.doesNotMatch(mail.html, /<script>/);
  assert.match(mail.text ?? '', /Hello <script>alert\("x"\)<\/script> & Ada/);

  // A second look after the pipeline settled: still exactly one email for this message.
  await waitFor(
    async () => {
      const { rows } = await system.db.query<{ state: string }>('SELECT state FROM messages WHERE id = $1', [id]);
      return rows[0]?.state === 'sent' ? true : undefined;
    },
    { timeoutMs: 10_000, what: 'state sent' },
  );
  assert.equal((await mailsFor(new Set([id]))).length, 1);
});

test('the message reaches sent in the database with its events in order', async () => {
  const response = await system.send(tenant, { template: 'welcome', to: 'grace@example.com', channel: 'email', data: { name: 'Grace' } });
  assert.equal(response.status, 202, response.text);
  const id = response.body.message_id as number;
  const message = await waitFor(
    async () => {
      const { rows } = await system.db.query<{ state: string; attempts: number; last_smtp_code: number | null; template_version: number }>(
        'SELECT state, attempts, last_smtp_code, template_version FROM messages WHERE id = $1',
        [id],
      );
      return rows[0]?.state === 'sent' ? rows[0] : undefined;
    },
    { timeoutMs: 15_000, what: 'state sent' },
  );
  assert.equal(message.attempts, 1);
  assert.equal(message.last_smtp_code, 250);
  assert.equal(message.template_version, 1);
  const { rows: events } = await system.db.query<{ state: string; attempt: number; smtp_code: number | null }>(
    'SELECT state, attempt, smtp_code FROM message_events WHERE message_id = $1 ORDER BY occurred_at, id',
    [id],
  );
  assert.deepEqual(events, [
    { state: 'queued', attempt: 0, smtp_code: null },
    { state: 'sending', attempt: 1, smtp_code: null },
    { state: 'sent', attempt: 1, smtp_code: 250 },
  ]);
  const { rows: outbox } = await system.db.query('SELECT 1 FROM outbox WHERE message_id = $1', [id]);
  assert.equal(outbox.length, 0, 'the outbox row is gone once the job is confirmed');
});

test('two mailer replicas deliver 200 messages, none lost and none twice', async () => {
  const ids = new Set<number>();
  const total = 200;
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < total) {
        const n = next++;
        const response = await system.send(tenant, { template: 'welcome', to: `user${n}@example.com`, channel: 'email', data: { name: `User ${n}` } });
        assert.equal(response.status, 202, response.text);
        ids.add(response.body.message_id as number);
      }
    }),
  );
  assert.equal(ids.size, total);
  const mails = await waitFor(
    async () => {
      const found = await mailsFor(ids);
      return found.length >= total ? found : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 500, what: `${total} emails` },
  );
  // Let late duplicates, if any, arrive before counting.
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const final = await mailsFor(ids);
  assert.equal(final.length, total, 'no message delivered twice');
  assert.equal(new Set(mails.map(notifyMessageId)).size, total, 'every message delivered');

  const perReplica = await Promise.all(
    system.stack.ports.metrics.mailer.map(async (port) => {
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      const match = /notify_deliveries_total\{[^}]*outcome="sent"[^}]*\} (\d+)/.exec(text);
      return Number(match?.[1] ?? 0);
    }),
  );
  assert.equal(perReplica.length, 2);
  assert.ok(
    perReplica.every((count) => count > 0),
    `both replicas delivered: ${perReplica.join(', ')}`,
  );
  const { rows } = await system.db.query<{ count: number }>("SELECT count(*)::int AS count FROM messages WHERE id = ANY($1) AND state = 'sent'", [[...ids]]);
  assert.equal(rows[0]?.count, total);
});
