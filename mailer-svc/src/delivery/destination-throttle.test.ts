// Per-destination throttling: the limits' syntax, the adaptive steps, and two throttles sharing one bucket on the
// machine's NATS (a run-unique bucket, deleted afterwards) as two mailer replicas do.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ConfigError, createLogger, createRegistry, loadConfig } from '@notify/platform';
import { connectNats, type JetStreamManager, jetstream, jetstreamManager, type NatsConnection, openBucket } from '@notify/platform/nats';
import { testEnvironment } from '@notify/test/harness/environment.ts';
import { waitFor } from '@notify/test/harness/wait.ts';
import { mailerConfig } from '../config.ts';
import { type DestinationLimit, destinationOf, parseDestinationLimits } from './destination-limits.ts';
import { adjustEveryMs, fasterPace, isPushback, shareOf, slowerPace } from './destination-pace.ts';
import {
  createThrottleMetrics,
  type DestinationSlot,
  DestinationThrottle,
  paceTtlMs,
  type ThrottleMetrics,
  type ThrottleSettings,
} from './destination-throttle.ts';
import type { DeliveryOutcome } from './smtp-outcome.ts';

const logger = createLogger('throttle-test', 'warn');
const accepted: DeliveryOutcome = { kind: 'accepted', smtpCode: 250, smtpResponse: '250 OK' };
const tooMany: DeliveryOutcome = { kind: 'temporary', reason: 'refused', smtpCode: 421, smtpResponse: '421 4.7.0 Too many connections, slow down' };

describe('MAILER_DESTINATION_LIMITS', () => {
  it('reads domains (lower-cased) with their concurrency and rate per second', () => {
    const limits = parseDestinationLimits(' Slow.Example=2:5/s , bulk.example=50:600/min,');
    assert.deepEqual(
      [...limits],
      [
        ['slow.example', { concurrency: 2, perSecond: 5 }],
        ['bulk.example', { concurrency: 50, perSecond: 10 }],
      ],
    );
    assert.equal(parseDestinationLimits('').size, 0);
  });

  it('names the entry at fault and what is expected', () => {
    const fault = (raw: string): string => {
      try {
        parseDestinationLimits(raw);
      } catch (error) {
        return (error as Error).message;
      }
      return 'accepted';
    };
    assert.equal(fault('slow.example=2'), 'entry "slow.example=2": must be <domain>=<concurrency>:<count>/<unit>, such as slow.example=2:5/s');
    assert.equal(fault('a.example=1:1/s,slow.example=0:5/s'), 'entry "slow.example=0:5/s": concurrency 0 must be from 1 to 10000');
    assert.equal(fault('slow.example=two:5/s'), 'entry "slow.example=two:5/s": concurrency "two" must be a whole number');
    assert.match(fault('slow.example=2:5/fortnight'), /^entry "slow\.example=2:5\/fortnight": must be <count>\/<unit> with unit s, /);
    assert.equal(fault('-bad-.example=2:5/s'), 'entry "-bad-.example=2:5/s": "-bad-.example" is not a domain name');
    assert.equal(fault('a.example=1:1/s,A.example=2:2/s'), 'entry "A.example=2:2/s": a.example is given twice');
  });

  it('is validated with the rest of the configuration, the variable named', () => {
    assert.throws(
      () => loadConfig(mailerConfig, { MAILER_DESTINATION_LIMITS: 'slow.example=2', MAILER_DESTINATION_RATE: 'fast', NOTIFY_DATA_KEY: 'x'.repeat(64) }),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.message.includes('MAILER_DESTINATION_RATE: must be <count>/<unit>') &&
        error.message.includes('MAILER_DESTINATION_LIMITS: entry "slow.example=2": must be'),
    );
  });

  it('takes the destination from the address, lower-cased', () => {
    assert.equal(destinationOf('Ada@Mail.Example.COM'), 'mail.example.com');
  });
});

describe('adaptive pace', () => {
  const limit: DestinationLimit = { concurrency: 20, perSecond: 100 };

  it('counts 421 and 4.7.x temporary replies as pushback, not greylisting or other refusals', () => {
    assert.equal(isPushback(tooMany), true);
    assert.equal(isPushback({ kind: 'temporary', reason: 'r', smtpCode: 450, smtpResponse: '450 4.7.1 Rate limited, try later' }), true);
    assert.equal(isPushback({ kind: 'temporary', reason: 'r', smtpCode: 452, smtpResponse: '452 4.2.2 Mailbox full' }), false);
    assert.equal(isPushback({ kind: 'temporary', reason: 'r', smtpCode: 451, smtpResponse: '451 4.7.1 Greylisted, please try again later' }), false);
    assert.equal(isPushback({ kind: 'temporary', reason: 'mail server unreachable (ECONNREFUSED)' }), false);
    assert.equal(isPushback({ kind: 'permanent', reason: 'r', smtpCode: 550, smtpResponse: '550 5.7.1 Blocked' }), false);
  });

  it('halves down to one delivery and 1/s, and climbs back one delivery and a twentieth of the rate a step', () => {
    let pace = { ...limit, changedAt: 0 };
    for (let step = 0; step < 10; step += 1) pace = slowerPace(pace, limit, step);
    assert.deepEqual(pace, { concurrency: 1, perSecond: 1, changedAt: 9 });
    assert.deepEqual(
      slowerPace({ concurrency: 3, perSecond: 0.2 }, { concurrency: 3, perSecond: 0.2 }, 1),
      { concurrency: 1, perSecond: 0.2, changedAt: 1 },
      'a rate configured below 1/s is its own floor',
    );
    pace = fasterPace(pace, limit, 10);
    assert.deepEqual(pace, { concurrency: 2, perSecond: 6, changedAt: 10 });
    for (let step = 0; step < 30; step += 1) pace = fasterPace(pace, limit, 11 + step);
    assert.deepEqual({ concurrency: pace.concurrency, perSecond: pace.perSecond }, limit);
  });

  it('shares a pace among the live replicas, each keeping at least one delivery', () => {
    assert.deepEqual(
      [0, 1, 2].map((rank) => shareOf({ concurrency: 20, perSecond: 30 }, 3, rank)),
      [
        { concurrency: 7, perSecond: 10 },
        { concurrency: 7, perSecond: 10 },
        { concurrency: 6, perSecond: 10 },
      ],
    );
    assert.deepEqual(shareOf({ concurrency: 1, perSecond: 1 }, 2, 1), { concurrency: 1, perSecond: 0.5 });
  });
});

describe('two replicas sharing a bucket', () => {
  // A bucket per test: every throttle open on a bucket counts as a live replica there.
  const run = `tt${randomBytes(4).toString('hex')}`;
  const buckets: string[] = [];
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  const opened: DestinationThrottle[] = [];

  before(async () => {
    nc = await connectNats(testEnvironment.natsUrl, 'throttle-test', logger);
    jsm = await jetstreamManager(nc);
  });

  after(async () => {
    for (const throttle of opened) await throttle.close();
    for (const bucket of buckets) await jsm?.streams.delete(`KV_${bucket}`).catch(() => false);
    await nc?.drain();
  });

  const newBucket = (): string => {
    buckets.push(`${run}_${buckets.length}_NOTIFY_THROTTLE`);
    return buckets.at(-1) as string;
  };
  const open = async (
    settings: Partial<ThrottleSettings> = {},
    bucket = newBucket(),
  ): Promise<{ throttle: DestinationThrottle; metrics: ThrottleMetrics; bucket: string }> => {
    const metrics = createThrottleMetrics(createRegistry('mailer-svc'));
    const kv = await openBucket(jetstream(nc), jsm, bucket, { ttlMs: paceTtlMs, replicas: 1 });
    const throttle = await DestinationThrottle.open(
      { kv, metrics, logger },
      { defaults: { concurrency: 20, perSecond: 1_000 }, domains: new Map(), parkLimit: 100, ...settings },
    );
    opened.push(throttle);
    return { throttle, metrics, bucket };
  };
  const job = () => ({
    released: false,
    waits: 0,
    waiting(on: boolean) {
      this.waits += on ? 1 : 0;
    },
  });
  const gauge = async (metrics: ThrottleMetrics, name: 'concurrencyLimit' | 'rateLimit', domain: string): Promise<number | undefined> =>
    (await metrics[name].get()).values.find((value) => value.labels.domain === domain)?.value;

  it("splits a domain's concurrency between the replicas; a job beyond its replica's share waits for a slot", async () => {
    const domains = new Map([['split.example', { concurrency: 4, perSecond: 1_000 }]]);
    const first = await open({ domains });
    const second = await open({ domains }, first.bucket);
    // Each sees the other's presence, pushed by the watch, within a moment.
    await sleep(300);
    const held: DestinationSlot[] = [];
    for (const throttle of [first.throttle, second.throttle]) {
      for (let n = 0; n < 2; n += 1) held.push((await throttle.acquire(`r${n}@split.example`, job())) as DestinationSlot);
    }
    const waiter = job();
    let third: DestinationSlot | undefined;
    const acquiring = first.throttle.acquire('late@split.example', waiter).then((slot) => (third = slot));
    await sleep(100);
    assert.equal(third, undefined, 'the replica holds its two slots: the third waits');
    assert.equal(waiter.waits, 1, 'the job is told it waits, so the mailer pulls other work');
    const other = await first.throttle.acquire('someone@elsewhere.example', job());
    assert.ok(other, 'another domain is not held up');
    held[0]?.release(accepted);
    await acquiring;
    assert.ok(third, 'a released slot goes to the waiting job');
    for (const slot of [...held.slice(1), third, other]) slot?.release(accepted);
  });

  it("once its replica's waiting room is full, lets a job wait in its delivery slot, and serves the jobs in order", async () => {
    const { throttle, metrics } = await open({ domains: new Map([['one.example', { concurrency: 1, perSecond: 100 }]]), parkLimit: 1 });
    const slot = await throttle.acquire('a@one.example', job());
    const parkedJob = job();
    const inSlotJob = job();
    const order: string[] = [];
    const parked = throttle.acquire('b@one.example', parkedJob).then((got) => {
      order.push('b');
      return got;
    });
    const inSlot = throttle.acquire('c@one.example', inSlotJob).then((got) => {
      order.push('c');
      return got;
    });
    await sleep(50);
    assert.deepEqual([parkedJob.waits, inSlotJob.waits], [1, 0], 'only the first leaves its slot');
    slot?.release(accepted);
    (await parked)?.release(accepted);
    (await inSlot)?.release(accepted);
    assert.deepEqual(order, ['b', 'c']);
    assert.deepEqual(
      (await metrics.waits.get()).values.map((value) => [value.labels.where, value.value]),
      [
        ['parked', 1],
        ['in_slot', 1],
      ],
    );
  });

  it('gives a job released while it waited no slot', async () => {
    const { throttle } = await open({ domains: new Map([['gone.example', { concurrency: 1, perSecond: 100 }]]) });
    const slot = await throttle.acquire('a@gone.example', job());
    const leaving = { released: false };
    const waiting = throttle.acquire('b@gone.example', leaving);
    leaving.released = true;
    slot?.release(undefined);
    assert.equal(await waiting, undefined);
    assert.ok(await throttle.acquire('c@gone.example', job()), 'its slot was given back');
  });

  it("starts no more messages a second than the domain's rate", async () => {
    const { throttle } = await open({ domains: new Map([['paced.example', { concurrency: 100, perSecond: 5 }]]) });
    const started = Date.now();
    // Five at once (a second's worth), then one every 200 ms.
    for (let n = 0; n < 10; n += 1) (await throttle.acquire(`r${n}@paced.example`, job()))?.release(accepted);
    const elapsed = Date.now() - started;
    assert.ok(elapsed >= 900 && elapsed < 3_000, `10 messages at 5/s took ${elapsed} ms`);
  });

  it('halves a domain that pushes back for every replica, leaves the others alone, and brings it back as mail is accepted', async () => {
    const domains = new Map([['pushy.example', { concurrency: 8, perSecond: 40 }]]);
    const first = await open({ domains });
    const second = await open({ domains }, first.bucket);
    (await first.throttle.acquire('a@pushy.example', job()))?.release(tooMany);
    await waitFor(async () => (await gauge(second.metrics, 'concurrencyLimit', 'pushy.example')) === 4, {
      timeoutMs: 3_000,
      what: 'the other replica to see the halved concurrency',
    });
    assert.equal(await gauge(second.metrics, 'rateLimit', 'pushy.example'), 20);
    // Within the same second a second refusal changes nothing: it answers for mail sent before the first.
    (await second.throttle.acquire('b@pushy.example', job()))?.release(tooMany);
    await sleep(200);
    assert.equal(await gauge(first.metrics, 'concurrencyLimit', 'pushy.example'), 4);
    // pushy.example is configured: its counters start at zero.
    assert.deepEqual(
      (await first.metrics.deferrals.get()).values.map((value) => [value.labels.domain, value.labels.reason, value.value]),
      [
        ['pushy.example', 'rate_limited', 1],
        ['pushy.example', 'temporary', 0],
      ],
    );
    assert.equal(await gauge(first.metrics, 'concurrencyLimit', 'calm.example'), undefined, 'a domain never slowed has no series');

    await sleep(adjustEveryMs);
    (await second.throttle.acquire('c@pushy.example', job()))?.release(accepted);
    await waitFor(async () => (await gauge(first.metrics, 'concurrencyLimit', 'pushy.example')) === 5, {
      timeoutMs: 3_000,
      what: 'one more delivery after a second of accepted mail',
    });
    assert.equal(await gauge(first.metrics, 'rateLimit', 'pushy.example'), 22);
  });

  it('labels an unconfigured domain once it was slowed, and forgets its series when it is back at its limit', async () => {
    // Halved to one delivery (the rate is at its floor already), one step of accepted mail brings it back.
    const { throttle, metrics } = await open({ defaults: { concurrency: 2, perSecond: 1 } });
    (await throttle.acquire('a@plain.example', job()))?.release(tooMany);
    await waitFor(async () => (await gauge(metrics, 'concurrencyLimit', 'plain.example')) === 1, { timeoutMs: 3_000, what: 'the slowed domain to show' });
    assert.equal((await metrics.atFloor.get()).values.find((value) => value.labels.domain === 'plain.example')?.value, 1);
    await sleep(adjustEveryMs);
    (await throttle.acquire('b@plain.example', job()))?.release(accepted);
    await waitFor(async () => (await gauge(metrics, 'concurrencyLimit', 'plain.example')) === undefined, { timeoutMs: 3_000, what: 'the series to go' });
  });
});
