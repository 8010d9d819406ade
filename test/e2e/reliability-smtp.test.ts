// Cases 4, 5 and 8 of the delivery guarantees (docs/delivery-guarantees.md), end to end through the running system
// with a controllable SMTP relay: 4xx replies and a relay that is down are deferred and retried with backoff, then
// sent; 5xx fails at once with the reply recorded; retries and age used up fail; failed messages are listed and
// re-queued with notifyctl; and delivery events delivered twice or out of order change nothing.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { schemaHeaders } from '@notify/platform/nats';
import { type DeliveryEvent, encodeDeliveryEvent } from '@notify/proto';
import { mailCounts, waitForStates } from '../harness/delivery-audit.ts';
import { startReliableSystem } from '../harness/reliable-system.ts';
import { infrastructure } from '../harness/resources.ts';
import { type ReplaceableSink, replaceableSink, SmtpScript } from '../harness/smtp-script.ts';
import type { System, Tenant } from '../harness/system.ts';
import { waitFor } from '../harness/wait.ts';

const script = new SmtpScript();
let system: System;
let tenant: Tenant;
let sink: ReplaceableSink;
/** Retries come 250-500 ms apart at first, then 500 ms-1 s; the fifth attempt is the last. */
const retries = { MAILER_RETRY_BASE: '500ms', MAILER_RETRY_MAX: '1s', MAILER_MAX_ATTEMPTS: '5' };

before(async () => {
  system = await startReliableSystem({ smtpReply: script.reply, env: { NOTIFY_PUBLIC_SEND_RATE: '100000/min', MAILER_ACK_WAIT: '5s', ...retries } });
  tenant = await system.createTenant('smtp');
  await system.putTemplate(tenant.projectId, 'welcome');
  sink = replaceableSink(system, script);
});

after(async () => {
  await sink?.close();
  await system?.stop();
});

async function send(to: string): Promise<number> {
  const response = await system.send(tenant, { template: 'welcome', to, channel: 'email', data: { name: 'Ada' } });
  assert.equal(response.status, 202, response.text);
  return response.body.message_id as number;
}

interface Row {
  state: string;
  attempts: number;
  last_smtp_code: number | null;
  last_smtp_response: string | null;
  failure_reason: string | null;
}
const row = async (id: number): Promise<Row> =>
  (await system.db.query<Row>('SELECT state, attempts, last_smtp_code, last_smtp_response, failure_reason FROM messages WHERE id = $1', [id])).rows[0] as Row;

interface EventRow {
  state: string;
  attempt: number;
  smtp_code: number | null;
  reason: string | null;
  occurred_at: Date;
}
const events = async (id: number): Promise<EventRow[]> =>
  (
    await system.db.query<EventRow>(
      'SELECT state, attempt, smtp_code, reason, occurred_at FROM message_events WHERE message_id = $1 ORDER BY attempt, occurred_at, id',
      [id],
    )
  ).rows;
const timeline = async (id: number): Promise<string[]> =>
  (await events(id)).map((event) => `${event.state}:${event.attempt}${event.smtp_code ? `:${event.smtp_code}` : ''}`);

describe('temporary failures', () => {
  test('4xx replies defer the message, retried with growing jittered delays, until it is sent', async () => {
    script.refuse('greylisted-', { code: 451, message: '4.7.1 Greylisted, please try again later' }, 2);
    const id = await send('greylisted-1@example.com');
    await waitForStates(system.db, [id], { timeoutMs: 15_000, states: ['sent'] });
    assert.deepEqual(await timeline(id), ['queued:0', 'sending:1', 'deferred:1:451', 'sending:2', 'deferred:2:451', 'sending:3', 'sent:3:250']);
    const rows = await events(id);
    const at = (state: string, attempt: number): number =>
      rows.find((event) => event.state === state && event.attempt === attempt)?.occurred_at.getTime() ?? Number.NaN;
    // Equal jitter: the retry after attempt n waits at least half of base * 2^(n-1).
    assert.ok(at('sending', 2) - at('deferred', 1) >= 240, `first retry after ${at('sending', 2) - at('deferred', 1)} ms`);
    assert.ok(at('sending', 3) - at('deferred', 2) >= 490, `second retry after ${at('sending', 3) - at('deferred', 2)} ms`);
    assert.deepEqual(await row(id), {
      state: 'sent',
      attempts: 3,
      last_smtp_code: 250,
      last_smtp_response: (await row(id)).last_smtp_response,
      failure_reason: null,
    });
    assert.equal(mailCounts(system.resources.mailDir).get(id), 1);
  });

  test('a relay that refuses connections defers the message, which is sent once the relay is back', async () => {
    await sink.stop();
    const id = await send('relay-down@example.com');
    await waitFor(async () => ((await row(id)).state === 'deferred' ? true : undefined), { timeoutMs: 10_000, what: 'the message to be deferred' });
    const deferred = await row(id);
    assert.match(deferred.failure_reason ?? '', /^mail server unreachable \(ECONNREFUSED\)$/);
    await sink.start();
    await waitForStates(system.db, [id], { timeoutMs: 15_000, states: ['sent'] });
    assert.ok((await row(id)).attempts >= 2);
    assert.equal((await row(id)).failure_reason, null);
    assert.equal(mailCounts(system.resources.mailDir).get(id), 1);
  });
});

describe('final failures and dead letters', () => {
  let rejected: number;
  let exhausted: number;

  test('a 5xx reply fails the message at once, with the SMTP code and text recorded', async () => {
    script.refuse('unknown-', { code: 550, message: '5.1.1 No such user here' });
    rejected = await send('unknown-user@example.com');
    await waitForStates(system.db, [rejected], { timeoutMs: 10_000, states: ['failed'] });
    const failed = await row(rejected);
    assert.equal(failed.attempts, 1);
    assert.equal(failed.last_smtp_code, 550);
    assert.match(failed.last_smtp_response ?? '', /^550 5\.1\.1 No such user here/);
    assert.match(failed.failure_reason ?? '', /^recipient refused by the mail server: 550 5\.1\.1 No such user here/);
    assert.deepEqual(await timeline(rejected), ['queued:0', 'sending:1', 'failed:1:550']);
  });

  test('a 5.1.x refusal of the recipient suppresses the address (hard_bounce): the next send to it is 422', async () => {
    const listed = await system.notifyctl('suppression', 'list', '--project', String(tenant.projectId), '--json');
    assert.equal(listed.code, 0, listed.stderr);
    const { suppressions } = JSON.parse(listed.stdout) as { suppressions: { address: string; reason: string; messageId: number }[] };
    assert.deepEqual(
      suppressions.filter((entry) => entry.address === 'unknown-user@example.com').map((entry) => [entry.reason, entry.messageId]),
      [['hard_bounce', rejected]],
    );
    const again = await system.send(tenant, { template: 'welcome', to: 'unknown-user@EXAMPLE.com', channel: 'email', data: { name: 'Ada' } });
    assert.equal(again.status, 422, again.text);
    assert.match(String((again.body.to as string[])[0]), /^This address is suppressed \(hard_bounce, since \d{4}-\d{2}-\d{2}\)\.$/);
  });

  test('a message still refused at its last attempt fails, with why', async () => {
    script.refuse('full-', { code: 452, message: '4.2.2 Mailbox full' });
    exhausted = await send('full-mailbox@example.com');
    await waitForStates(system.db, [exhausted], { timeoutMs: 20_000, states: ['failed'] });
    const failed = await row(exhausted);
    assert.equal(failed.attempts, 5);
    assert.equal(failed.last_smtp_code, 452);
    assert.match(failed.failure_reason ?? '', /^retries exhausted: recipient refused by the mail server: 452 4\.2\.2 Mailbox full/);
    assert.equal(script.offers('full-mailbox@example.com'), 5);
  });

  test('notifyctl dead-letters list shows the failed messages with reason, attempts and last SMTP reply', async () => {
    const listed = await system.notifyctl('dead-letters', 'list', '--project', String(tenant.projectId), '--json');
    assert.equal(listed.code, 0, listed.stderr);
    const { messages } = JSON.parse(listed.stdout) as { messages: { id: number; attempts: number; failureReason: string; lastSmtpReply: string }[] };
    const byId = new Map(messages.map((message) => [message.id, message]));
    assert.equal(byId.get(rejected)?.attempts, 1);
    assert.match(byId.get(rejected)?.lastSmtpReply ?? '', /^550 5\.1\.1/);
    assert.match(byId.get(exhausted)?.failureReason ?? '', /^retries exhausted/);
    const table = await system.notifyctl('dead-letters', 'list', '--project', String(tenant.projectId));
    assert.match(table.stdout, /REASON/);
    assert.match(table.stdout, new RegExp(`^${rejected}\\s`, 'm'));
  });

  test('notifyctl dead-letters requeue delivers them again as a new delivery, each mailed once; a suppressed recipient only once it is off the list', async () => {
    script.clear('unknown-');
    script.clear('full-');
    // The hard-bounced recipient is suppressed: it is not mailed again until an operator takes it off the list.
    const first = await system.notifyctl('dead-letters', 'requeue', '--project', String(tenant.projectId), '--id', `${rejected},${exhausted}`);
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, new RegExp(`^re-queued 1 message: ${exhausted}$`, 'm'));
    assert.match(first.stderr, new RegExp(`message ${rejected} not re-queued: recipient suppressed`));
    assert.equal((await row(rejected))?.state, 'failed');
    await system.notifyctlOk('suppression', 'remove', '--project', String(tenant.projectId), '--address', 'unknown-user@example.com');
    const requeued = await system.notifyctl('dead-letters', 'requeue', '--project', String(tenant.projectId), '--id', String(rejected));
    assert.equal(requeued.code, 0, requeued.stderr);
    assert.match(requeued.stdout, new RegExp(`^re-queued 1 message: ${rejected}$`, 'm'));
    await waitForStates(system.db, [rejected, exhausted], { timeoutMs: 15_000, states: ['sent'] });
    assert.deepEqual(await timeline(rejected), ['queued:0', 'sending:1', 'failed:1:550', 'queued:2', 'sending:2', 'sent:2:250']);
    const second = await events(exhausted);
    assert.deepEqual(
      second.slice(-3).map((event) => `${event.state}:${event.attempt}`),
      ['queued:6', 'sending:6', 'sent:6'],
    );
    assert.match(second.at(-3)?.reason ?? '', /^re-queued by an operator/);
    const mails = mailCounts(system.resources.mailDir);
    assert.deepEqual([mails.get(rejected), mails.get(exhausted)], [1, 1]);
    const again = await system.notifyctl('dead-letters', 'requeue', '--project', String(tenant.projectId), '--id', String(rejected));
    assert.match(again.stderr, new RegExp(`message ${rejected} not re-queued: not failed`));
  });

  test('--all re-queues every failed message of the project', async () => {
    script.refuse('bounce-', { code: 554, message: '5.7.1 Rejected by policy' });
    const ids = [await send('bounce-1@example.com'), await send('bounce-2@example.com')];
    await waitForStates(system.db, ids, { timeoutMs: 10_000, states: ['failed'] });
    const suppressed = await system.db.query('SELECT 1 FROM suppressions WHERE address LIKE $1', ['bounce-%']);
    assert.equal(suppressed.rowCount, 0, 'a 5.7.1 policy refusal fails the message but says nothing about the address');
    script.clear('bounce-');
    const requeued = await system.notifyctl('dead-letters', 'requeue', '--project', String(tenant.projectId), '--all', '--json');
    assert.equal(requeued.code, 0, requeued.stderr);
    assert.deepEqual((JSON.parse(requeued.stdout) as { requeued: number[] }).requeued.sort(), [...ids].sort());
    await waitForStates(system.db, ids, { timeoutMs: 15_000, states: ['sent'] });
  });

  test('a message deferred past MAILER_MAX_AGE fails, however many attempts are left', async () => {
    await system.stack.restart('mailer-svc', 0, { MAILER_MAX_AGE: '2s', MAILER_MAX_ATTEMPTS: '1000' });
    try {
      script.refuse('slow-domain-', { code: 421, message: '4.3.2 Service not available' });
      const id = await send('slow-domain-1@example.com');
      await waitForStates(system.db, [id], { timeoutMs: 15_000, states: ['failed'] });
      const failed = await row(id);
      assert.match(failed.failure_reason ?? '', /^gave up after 2s: /);
      assert.ok(failed.attempts > 1 && failed.attempts < 20, `${failed.attempts} attempts within the age limit`);
    } finally {
      await system.stack.restart('mailer-svc', 0, retries);
    }
  });
});

describe('delivery events delivered twice or out of order', () => {
  test('every event of a sent message published again, reversed and twice, changes neither its state nor its history', async () => {
    script.refuse('twice-', { code: 451, message: '4.7.1 Try later' }, 1);
    const id = await send('twice@example.com');
    await waitForStates(system.db, [id], { timeoutMs: 15_000, states: ['sent'] });
    const before = { row: await row(id), timeline: await timeline(id) };

    const connection = await connect({ servers: infrastructure.natsUrl });
    try {
      const js = jetstream(connection);
      const jsm = await jetstreamManager(connection);
      const prefix = system.resources.natsPrefix;
      const subject = `${prefix.toLowerCase()}notify.events.${id}`;
      const recorded = (await events(id)).filter((event) => event.state !== 'queued').reverse();
      const payloads = recorded.map((event) => ({
        messageId: id,
        state: event.state,
        attempt: event.attempt,
        occurredAt: event.occurred_at.toISOString(),
        ...(event.smtp_code ? { smtpCode: event.smtp_code, smtpResponse: `${event.smtp_code} replayed` } : {}),
        ...(event.reason ? { reason: event.reason } : {}),
      }));
      // As the mailer publishes them, but without Nats-Msg-Id, so the stream keeps every copy and dispatch-svc must recognise them itself.
      for (const payload of [...payloads, ...payloads]) {
        const message = encodeDeliveryEvent(payload as DeliveryEvent);
        await js.publish(subject, message.bytes, { headers: schemaHeaders(message) });
      }
      await waitFor(
        async () => {
          const info = await jsm.consumers.info(`${prefix.toUpperCase()}NOTIFY_EVENTS`, `${prefix.toUpperCase()}dispatch-events`);
          return info.num_pending === 0 && info.num_ack_pending === 0 ? true : undefined;
        },
        { timeoutMs: 10_000, what: 'dispatch-svc to consume the copies' },
      );
    } finally {
      await connection.close();
    }
    assert.deepEqual({ row: await row(id), timeline: await timeline(id) }, before);
    assert.equal(mailCounts(system.resources.mailDir).get(id), 1);
  });
});
