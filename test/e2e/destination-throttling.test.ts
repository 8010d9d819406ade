// Per-destination throttling (docs/operations.md, "Per-destination throttling") through the running system, with two
// mailer replicas sharing the destinations' pace: a domain whose server answers 421 to every third message is slowed
// for both replicas and all its mail is still delivered, each message once, while mail to another domain sent in the
// same run goes out at full speed.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { audit, waitForStates } from '../harness/delivery-audit.ts';
import { metricValue } from '../harness/service-metrics.ts';
import { SmtpScript } from '../harness/smtp-script.ts';
import { type System, startSystem, type Tenant } from '../harness/system.ts';
import { waitFor } from '../harness/wait.ts';

const script = new SmtpScript();
let system: System;
let tenant: Tenant;

before(async () => {
  system = await startSystem({
    mailerReplicas: 2,
    smtpReply: script.reply,
    env: { NOTIFY_PUBLIC_SEND_RATE: '100000/min', MAILER_DESTINATION_LIMITS: 'slow.example=4:10/s' },
  });
  tenant = await system.createTenant('throttle');
  await system.putTemplate(tenant.projectId, 'welcome');
});

after(async () => {
  await system?.stop();
});

async function send(to: string): Promise<number> {
  const response = await system.send(tenant, { template: 'welcome', to, channel: 'email', data: { name: 'Ada' } });
  assert.equal(response.status, 202, response.text);
  return response.body.message_id as number;
}

/** When each message was accepted and sent, and how many of its attempts were deferred. */
async function timings(ids: readonly number[]): Promise<{ accepted: number; sent: number; deferrals: number }[]> {
  const { rows } = await system.db.query<{ accepted: Date; sent: Date; deferrals: number }>(
    `SELECT min(occurred_at) FILTER (WHERE state = 'queued') AS accepted, max(occurred_at) FILTER (WHERE state = 'sent') AS sent,
            count(*) FILTER (WHERE state = 'deferred')::int AS deferrals
       FROM message_events WHERE message_id = ANY($1) GROUP BY message_id`,
    [ids],
  );
  return rows.map((row) => ({ accepted: row.accepted.getTime(), sent: row.sent.getTime(), deferrals: row.deferrals }));
}

test('a domain answering 421 to every third message is slowed for both replicas and all its mail delivered, while another domain keeps its pace', async () => {
  script.refuseEvery('slow-', { code: 421, message: '4.7.0 Too many connections, slow down' }, 3);
  const slow = Array.from({ length: 20 }, (_, n) => `slow-${n}@slow.example`);
  const fast = Array.from({ length: 30 }, (_, n) => `fast-${n}@fast.example`);
  // Interleaved, so both domains' jobs reach the mailers together.
  const addresses = fast.flatMap((address, n) => [address, slow[n]]).filter((address) => address !== undefined);
  const ids = new Map<string, number>();
  // Ten sends at a time: the whole run is accepted within about a second, so both domains start together.
  for (let start = 0; start < addresses.length; start += 10) {
    await Promise.all(addresses.slice(start, start + 10).map(async (address) => ids.set(address, await send(address))));
  }
  const slowIds = slow.map((address) => ids.get(address) as number);
  const fastIds = fast.map((address) => ids.get(address) as number);

  // While the mail goes out, both replicas are seen holding the slow domain below its limit, at the same pace.
  const ports = system.stack.ports.metrics.mailer;
  assert.equal(ports.length, 2);
  const slowedPace = await waitFor(
    async () => {
      const paces = await Promise.all(ports.map((port) => metricValue(port, 'notify_destination_concurrency_limit', { domain: 'slow.example' })));
      return paces.every((pace) => pace !== undefined && pace < 4 && pace === paces[0]) && paces[0];
    },
    { timeoutMs: 20_000, intervalMs: 50, what: 'both replicas to slow the domain that pushes back' },
  );
  await waitForStates(system.db, [...ids.values()], { timeoutMs: 30_000, states: ['sent'], what: 'every message to be sent' });
  const result = await audit(system.db, system.resources.mailDir, [...ids.values()]);
  assert.deepEqual(
    { delivered: result.delivered, duplicates: result.duplicates, broken: result.broken },
    { delivered: ids.size, duplicates: 0, broken: [] },
    'each message sent, once',
  );

  const slowTimes = await timings(slowIds);
  const fastTimes = await timings(fastIds);
  // A 421 on a connection nodemailer's pool had used before is sent again by the pool itself, not deferred: the
  // offers show every refusal, the deferrals only those on a fresh connection.
  const offers = slow.reduce((sum, address) => sum + script.offers(address), 0);
  assert.ok(offers >= slow.length + Math.floor(slow.length / 3), `${offers} offers for ${slow.length} messages`);
  assert.equal(
    fastTimes.reduce((sum, time) => sum + time.deferrals, 0),
    0,
    'the other domain refused none',
  );
  // Time from the first acceptance to the last mail sent, per domain: the slowed domain takes longer than its limit of
  // 10/s would (20 messages, its first second's worth at once: about 1 s), and than the other domain, which is not
  // held up by it. Margins are wide: the machine is shared, and a loaded one stretches both spans (seen: 4.5 s against
  // 2.5 s), so the other domain is judged by its own latency below, not by a ratio of the two.
  const span = (times: { accepted: number; sent: number }[]): number =>
    Math.max(...times.map((time) => time.sent)) - Math.min(...times.map((time) => time.accepted));
  const slowSpan = span(slowTimes);
  const fastSpan = span(fastTimes);
  assert.ok(fastSpan < 8_000, `30 messages to the other domain took ${fastSpan} ms`);
  assert.ok(slowSpan > 2_000 && slowSpan > fastSpan, `the slowed domain took ${slowSpan} ms, the other one ${fastSpan} ms`);
  const fastLatencies = fastTimes.map((time) => time.sent - time.accepted).sort((a, b) => a - b);
  assert.ok((fastLatencies[Math.floor(fastLatencies.length / 2)] ?? 0) < 2_000, `median latency of the other domain ${fastLatencies.join(', ')} ms`);

  assert.ok(slowedPace < 4);
  const refusals = await Promise.all(
    ports.map((port) => metricValue(port, 'notify_destination_deferrals_total', { domain: 'slow.example', reason: 'rate_limited' })),
  );
  assert.ok(refusals.reduce((sum: number, count) => sum + (count ?? 0), 0) >= 3, `rate_limited deferrals per replica: ${refusals.join(', ')}`);
  assert.equal(
    await metricValue(ports[0] ?? 0, 'notify_destination_concurrency_limit', { domain: 'fast.example' }),
    undefined,
    'the other domain was never slowed',
  );
});
