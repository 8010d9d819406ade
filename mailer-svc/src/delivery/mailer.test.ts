// The mailer against the machine's NATS (streams under a run-unique prefix, deleted afterwards) and a real SMTP server.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type SmtpSink, startSmtpSink } from '@notify/cli/local';
import { createLogger, createRegistry } from '@notify/platform';
import { createDataKey } from '@notify/platform/mail';
import {
  connectNats,
  ensureConsumer,
  ensureStream,
  type JetStreamManager,
  type JetStreamPublisher,
  jetstream,
  jetstreamManager,
  type NatsConnection,
  headers as natsHeaders,
  schemaHeaders,
} from '@notify/platform/nats';
import { type DeliveryEvent, type DeliveryJob, encodeDeliveryJob, readEventsMessage, schemaHeader, streamDeclarations, topology } from '@notify/proto';
import { type Renderer, type RenderPool, startRenderPool } from '@notify/templating';
import { testEnvironment } from '@notify/test/harness/environment.ts';
import { waitFor as poll } from '@notify/test/harness/wait.ts';
import { type ParsedMail, simpleParser } from 'mailparser';
import { mailerConsumerConfig } from './consumer-config.ts';
import { parseSender } from './mail-identity.ts';
import { createMailSender, type MailSender } from './mail-sender.ts';
import { Mailer, type MailerSettings } from './mailer.ts';
import { createMailerMetrics, type MailerMetrics } from './metrics.ts';
import { type OutcomeLedger, openOutcomeLedger } from './outcome-ledger.ts';
import { createRelayMetrics } from './relay-metrics.ts';
import { Relays } from './relays.ts';

/** What the mailers log at warn and above, parsed, for the tests that check a refusal is logged. */
const logged: Array<Record<string, unknown>> = [];
const logger = createLogger(
  'mailer-test',
  'warn',
  new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) logged.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  }),
);

function job(messageId: number, to: string): DeliveryJob & { requeue?: { attemptBase: number; at: string } } {
  return {
    messageId,
    // One per message, as dispatch-svc gives them: the ledger and the stream's duplicate window know a message by it.
    celeryTaskId: `0b6f2d52-8a55-4f0b-9a3e-${String(messageId).padStart(12, '0')}`,
    projectId: 1,
    organizationId: 1,
    to,
    data: { name: '<script>alert(1)</script> & Ana' },
    template: { slug: 'welcome', version: 2, subject: 'Welcome {{ name }}', html: '<p>Hi {{ name }}</p>', text: 'Hi {{ name }}', unsubscribe: false },
    acceptedAt: new Date().toISOString(),
  };
}

/** The harness's waitFor, with what is awaited first and 5 s unless told. */
const waitFor = <T>(what: string, probe: () => T | undefined | Promise<T | undefined>, timeoutMs = 5_000): Promise<T> =>
  poll(probe, { timeoutMs, intervalMs: 25, what });

/** What happens to one event the mailer publishes: lost before it reaches the stream, or stored with its confirmation held back. */
type EventFault = { lose: true } | { holdConfirmation: Promise<void> } | undefined;

/** The events of a batch the mailer publishes (it publishes nothing else on the events stream). */
function eventsIn(payload: Uint8Array, schema: string | undefined): DeliveryEvent[] {
  const read = readEventsMessage(payload, schema);
  if (!read.ok) throw new Error(read.reason);
  return read.value.map((event) => {
    if (!event.ok) throw new Error(event.reason);
    return event.value;
  });
}

/**
 * The mailer's event publisher, with the faults `faultFor` picks applied to the batches of delivery events it
 * publishes: a batch holding an event to lose is lost whole, as a failed publish is.
 */
function withEventFaults(publisher: JetStreamPublisher, faultFor: (event: DeliveryEvent) => EventFault): JetStreamPublisher {
  const publish: JetStreamPublisher['publish'] = async (subject, payload, options) => {
    const events = eventsIn(payload as Uint8Array, options?.headers?.get(schemaHeader));
    const faults = events.map(faultFor);
    const lost = events.find((_, index) => faults[index] && 'lose' in (faults[index] as object));
    if (lost) throw new Error(`test fault: the ${lost.state} event of message ${lost.messageId} was not recorded`);
    const ack = await publisher.publish(subject, payload, options);
    for (const fault of faults) if (fault && 'holdConfirmation' in fault) await fault.holdConfirmation;
    return ack;
  };
  return { publish };
}

/** One isolated run: its own streams and consumer, an SMTP sink answering by recipient, and mailer replicas on demand. */
interface Run {
  jsm: JetStreamManager;
  metrics: MailerMetrics;
  /** How many times the sink was offered each recipient. */
  offers: Map<string, number>;
  /**
   * `faultFor` injects faults into the replica's event publishes (see withEventFaults); `flush` stands for its
   * connection's flush (the real one by default).
   */
  startReplica(faultFor?: (event: DeliveryEvent) => EventFault, flush?: () => Promise<void>): Promise<Mailer>;
  /** Publishes a job as dispatch-svc does. */
  publish(job: DeliveryJob, msgID: string): Promise<void>;
  /**
   * Publishes jobs from a connection of their own, without waiting for the stream to confirm them: resolves once the
   * server has read them, before the replicas' connection need have received any.
   */
  publishFromElsewhere(jobs: readonly DeliveryJob[]): Promise<void>;
  /** Publishes bytes as a job, with a schema header when `schema` is given. */
  publishBytes(bytes: Uint8Array, schema: string | undefined, msgID: string): Promise<void>;
  /** The dead letters the run's mailers wrote: each one's reason header and bytes. */
  deadLetters(): Promise<{ reason: string; bytes: Uint8Array }[]>;
  eventsOf(messageId: number): DeliveryEvent[];
  settledOf(messageId: number): DeliveryEvent | undefined;
  mailsTo(address: string): Promise<ParsedMail[]>;
  ackPending(): Promise<number>;
  /** Jobs still in the jobs stream (acknowledged and terminated ones are removed). */
  queued(): Promise<number>;
  close(): Promise<void>;
}

async function startRun(settings: MailerSettings, random?: () => number): Promise<Run> {
  const prefix = `tm${randomBytes(4).toString('hex')}_`;
  const names = topology(prefix);
  const mailDir = await mkdtemp(join(tmpdir(), 'notify-mailer-'));
  const offers = new Map<string, number>();
  const events: DeliveryEvent[] = [];
  const replicas: Mailer[] = [];
  let nc: NatsConnection | undefined;
  let jsm: JetStreamManager | undefined;
  let sink: SmtpSink | undefined;
  let sender: MailSender | undefined;
  let ledger: OutcomeLedger | undefined;
  let renderer: RenderPool | undefined;
  let stopEvents = (): void => {};

  const close = async (): Promise<void> => {
    try {
      for (const replica of replicas) await replica.drain(2_000);
      sender?.close();
      stopEvents();
      await renderer?.close();
    } finally {
      await jsm?.streams.delete(names.jobsStream).catch(() => false);
      await jsm?.streams.delete(names.eventsStream).catch(() => false);
      await jsm?.streams.delete(names.deadLettersStream).catch(() => false);
      await jsm?.streams.delete(`KV_${names.outcomesBucket}`).catch(() => false);
      await nc?.drain();
      await sink?.close();
      await rm(mailDir, { recursive: true, force: true });
    }
  };

  try {
    sink = await startSmtpSink({
      host: '127.0.0.1',
      port: 0,
      dir: mailDir,
      logger,
      async reply({ to }) {
        const offered = (offers.get(to) ?? 0) + 1;
        offers.set(to, offered);
        // A relay slow to answer keeps the job held by the mailer for a while.
        if (to.startsWith('slow')) await sleep(400);
        if (to.startsWith('stuck') && offered === 1) await sleep(1_500);
        if (to.startsWith('bounce')) return { code: 550, message: '5.1.1 No such user' };
        if (to.startsWith('defer')) return { code: 451, message: '4.7.1 Try again later' };
        if (to.startsWith('greylist') && offered === 1) return { code: 451, message: '4.7.1 Greylisted, try again' };
        if (to.startsWith('fixed') && offered === 1) return { code: 550, message: '5.1.1 No such user (yet)' };
        return undefined;
      },
    });
    // One pool for the run's replicas (each replica of a deployment starts its own).
    renderer = await startRenderPool({ workers: 2 });
    nc = await connectNats(testEnvironment.natsUrl, 'mailer-test', logger);
    jsm = await jetstreamManager(nc);
    const streams = streamDeclarations(names);
    for (const stream of [streams.jobs, streams.events, streams.deadLetters]) await ensureStream(jsm, stream, 1);
    await ensureConsumer(jsm, names.jobsStream, mailerConsumerConfig(names, settings));
    ledger = await openOutcomeLedger(jetstream(nc), jsm, { names, replicas: 1, requests: jetstream(nc, { timeout: 2_000 }) });

    // A temporary consumer reads every event the run publishes.
    const info = await jsm.consumers.add(names.eventsStream, {
      ack_policy: 'explicit',
      filter_subject: names.eventsSubjects,
      inactive_threshold: 30_000_000_000,
    });
    const eventMessages = await jetstream(nc)
      .consumers.get(names.eventsStream, info.name)
      .then((consumer) => consumer.consume());
    stopEvents = () => eventMessages.stop();
    void (async () => {
      for await (const msg of eventMessages) {
        events.push(...eventsIn(msg.data, msg.headers?.get(schemaHeader)));
        msg.ack();
      }
    })();
    const relays = new Relays({
      defaultUrls: [`smtp://127.0.0.1:${sink.port}`],
      projects: { urls: () => undefined, named: () => [] },
      poolSize: 2,
      failureThreshold: 3,
      coolDownMs: 30_000,
      metrics: createRelayMetrics(createRegistry('mailer-test-relays')),
      logger,
    });
    sender = createMailSender({
      relays,
      sender: parseSender('Notify <no-reply@notify.localhost>'),
      dataKey: createDataKey(randomBytes(32)),
      bounceDomain: 'bounces.notify.localhost',
      publicUrl: 'http://127.0.0.1:8080',
      dkimKey: () => undefined,
    });
  } catch (error) {
    await close();
    throw error;
  }

  const js = jetstream(nc);
  const metrics = createMailerMetrics(createRegistry('mailer-test'));
  const eventsOf = (messageId: number): DeliveryEvent[] => events.filter((event) => event.messageId === messageId);
  const readyJsm = jsm;
  const readyNc = nc;
  const readySender = sender;
  const readyLedger = ledger;
  const pool = renderer;
  // A job of the template `unrenderable` meets a renderer that is not there, as when the pool closes at shutdown.
  const readyRenderer: Renderer = {
    render: (source) => (source.template.slug === 'unrenderable' ? Promise.reject(new Error('the render pool is closed')) : pool.render(source)),
    checkSyntax: (texts) => pool.checkSyntax(texts),
  };
  return {
    jsm: readyJsm,
    metrics,
    offers,
    async startReplica(faultFor, flush = () => readyNc.flush()) {
      const replica = await Mailer.start(
        {
          js,
          publisher: faultFor ? withEventFaults(js, faultFor) : js,
          flush,
          names,
          renderer: readyRenderer,
          sender: readySender,
          ledger: readyLedger,
          metrics,
          logger,
          ...(random ? { random } : {}),
        },
        settings,
      );
      replicas.push(replica);
      return replica;
    },
    publish: async (payload, msgID) => {
      const message = encodeDeliveryJob(payload);
      await js.publish(names.jobsSubject, message.bytes, { msgID, headers: schemaHeaders(message) });
    },
    async publishFromElsewhere(jobs) {
      const publisher = await connectNats(testEnvironment.natsUrl, 'mailer-test-publisher', logger);
      try {
        for (const payload of jobs) {
          const message = encodeDeliveryJob(payload);
          const headers = schemaHeaders(message);
          headers.set('Nats-Msg-Id', String(payload.messageId));
          publisher.publish(names.jobsSubject, message.bytes, { headers });
        }
        await publisher.flush();
      } finally {
        await publisher.close();
      }
    },
    async publishBytes(bytes, schema, msgID) {
      const headers = natsHeaders();
      if (schema !== undefined) headers.set(schemaHeader, schema);
      await js.publish(names.jobsSubject, bytes, { msgID, headers });
    },
    async deadLetters() {
      const letters: { reason: string; bytes: Uint8Array }[] = [];
      const last = (await readyJsm.streams.info(names.deadLettersStream)).state.last_seq;
      for (let seq = 1; seq <= last; seq += 1) {
        const stored = await readyJsm.streams.getMessage(names.deadLettersStream, { seq }).catch(() => null);
        if (stored) letters.push({ reason: stored.header.get('Notify-Dead-Letter-Reason'), bytes: stored.data });
      }
      return letters;
    },
    eventsOf,
    settledOf: (messageId) => eventsOf(messageId).find((event) => event.state === 'sent' || event.state === 'failed'),
    async mailsTo(address) {
      const parsed = await Promise.all((await readdir(mailDir)).map(async (file) => simpleParser(await readFile(join(mailDir, file)))));
      return parsed.filter((mail) => [mail.to].flat().some((to) => to?.text === address));
    },
    ackPending: async () => (await readyJsm.consumers.info(names.jobsStream, names.mailerConsumer)).num_ack_pending,
    queued: async () => (await readyJsm.streams.info(names.jobsStream)).state.messages,
    close,
  };
}

describe('mailer with NATS and SMTP', () => {
  let run: Run;
  /** The replica pulling jobs right now. */
  let mailer: Mailer;

  before(async () => {
    run = await startRun({ concurrency: 4, ackWaitMs: 10_000, maxAttempts: 3, maxAgeMs: 60_000, baseMs: 20, maxMs: 50 });
    mailer = await run.startReplica();
  });
  after(() => run?.close());

  it('renders and sends a job, then records sending and sent', async () => {
    await run.publish(job(101, 'ana@example.com'), '101');
    const sent = await waitFor('the sent event', () => run.settledOf(101));
    assert.deepEqual(
      run.eventsOf(101).map((event) => [event.state, event.attempt]),
      [
        ['sending', 1],
        ['sent', 1],
      ],
    );
    assert.equal(sent.smtpCode, 250);
    assert.match(sent.smtpResponse ?? '', /^250 /);

    const mails = await waitFor('the stored mail', async () =>
      (await run.mailsTo('ana@example.com')).length > 0 ? run.mailsTo('ana@example.com') : undefined,
    );
    assert.equal(mails.length, 1);
    const mail = mails[0];
    assert.equal(mail?.subject, 'Welcome <script>alert(1)</script> & Ana');
    assert.equal(mail?.html, '<p>Hi &lt;script&gt;alert(1)&lt;/script&gt; &amp; Ana</p>');
    assert.equal(mail?.text?.trim(), 'Hi <script>alert(1)</script> & Ana');
    assert.equal(mail?.messageId, '<notify-101@notify.localhost>');
    assert.equal(mail?.headers.get('x-notify-message-id'), '101');
    assert.deepEqual(
      mail?.from?.value.map(({ name, address }) => ({ name, address })),
      [{ name: 'Notify', address: 'no-reply@notify.localhost' }],
    );
  });

  it('fails a message the relay refuses with 550, with the code and the text', async () => {
    await run.publish(job(102, 'bounce@example.com'), '102');
    const failed = await waitFor('the failed event', () => run.settledOf(102));
    assert.equal(failed.state, 'failed');
    assert.equal(failed.smtpCode, 550);
    assert.match(failed.smtpResponse ?? '', /No such user/);
    assert.match(failed.reason ?? '', /recipient refused/);
    assert.deepEqual(
      run.eventsOf(102).map((event) => event.state),
      ['sending', 'failed'],
    );
  });

  it('defers a 451 and delivers on the next attempt', async () => {
    await run.publish(job(103, 'greylist@example.com'), '103');
    await waitFor('the sent event', () => run.settledOf(103));
    assert.deepEqual(
      run.eventsOf(103).map((event) => [event.state, event.attempt, event.smtpCode]),
      [
        ['sending', 1, undefined],
        ['deferred', 1, 451],
        ['sending', 2, undefined],
        ['sent', 2, 250],
      ],
    );
    assert.equal((await run.mailsTo('greylist@example.com')).length, 1);
  });

  it('fails a message still deferred at its last attempt', async () => {
    await run.publish(job(106, 'defer-always@example.com'), '106');
    const failed = await waitFor('the failed event', () => run.settledOf(106));
    assert.deepEqual(
      run.eventsOf(106).map((event) => [event.state, event.attempt]),
      [
        ['sending', 1],
        ['deferred', 1],
        ['sending', 2],
        ['deferred', 2],
        ['sending', 3],
        ['failed', 3],
      ],
    );
    assert.equal(failed.reason, 'retries exhausted: recipient refused by the mail server: 451 4.7.1 Try again later');
    assert.equal(failed.smtpCode, 451);
  });

  it('fails a temporary refusal of a delivery older than the maximum age without retrying', async () => {
    const old = job(107, 'defer-old@example.com');
    old.acceptedAt = new Date(Date.now() - 120_000).toISOString();
    await run.publish(old, '107');
    const failed = await waitFor('the failed event', () => run.settledOf(107));
    assert.deepEqual(
      run.eventsOf(107).map((event) => [event.state, event.attempt]),
      [
        ['sending', 1],
        ['failed', 1],
      ],
    );
    assert.equal(failed.reason, 'gave up after 1m: recipient refused by the mail server: 451 4.7.1 Try again later');
  });

  it('settles a job published again after its delivery finished from the ledger, without mailing it twice', async () => {
    await run.publish(job(108, 'twice@example.com'), '108');
    const sent = await waitFor('the sent event', () => run.settledOf(108));
    // As the outbox relay would after an outage longer than the duplicate window: the same job, a new stream message.
    await run.publish(job(108, 'twice@example.com'), '108-again');
    await waitFor('an empty jobs stream', async () => ((await run.queued()) === 0 ? true : undefined));
    assert.equal(run.offers.get('twice@example.com'), 1, 'the relay was offered the message once');
    assert.equal((await run.mailsTo('twice@example.com')).length, 1);
    const sentEvents = run.eventsOf(108).filter((event) => event.state === 'sent');
    assert.ok(
      sentEvents.every((event) => event.attempt === sent.attempt && event.smtpResponse === sent.smtpResponse),
      'the outcome is reported as it was',
    );
    const settled = await run.metrics.finishedRedeliveries.get();
    assert.equal(settled.values.find((value) => value.labels.state === 'sent')?.value, 1);
  });

  it('terminates a redelivery of a delivery that already failed, without another attempt', async () => {
    await run.publish(job(109, 'bounce-again@example.com'), '109');
    await waitFor('the failed event', () => run.settledOf(109));
    await run.publish(job(109, 'bounce-again@example.com'), '109-again');
    await waitFor('an empty jobs stream', async () => ((await run.queued()) === 0 ? true : undefined));
    assert.equal(run.offers.get('bounce-again@example.com'), 1);
    assert.deepEqual([...new Set(run.eventsOf(109).map((event) => `${event.state}:${event.attempt}`))], ['sending:1', 'failed:1']);
  });

  it('attempts a re-queued delivery of a failed message, numbering its attempts after the earlier ones', async () => {
    await run.publish(job(110, 'fixed@example.com'), '110');
    assert.equal((await waitFor('the failed event', () => run.settledOf(110))).state, 'failed');
    const requeued = { ...job(110, 'fixed@example.com'), requeue: { attemptBase: 1, at: new Date().toISOString() } };
    await run.publish(requeued, '110:requeue:1');
    await waitFor('the sent event', () => run.eventsOf(110).find((event) => event.state === 'sent'));
    assert.deepEqual(
      run.eventsOf(110).map((event) => `${event.state}:${event.attempt}`),
      ['sending:1', 'failed:1', 'sending:2', 'sent:2'],
    );
    assert.equal((await run.mailsTo('fixed@example.com')).length, 1);
  });

  it('reports a re-queued delivery of a message the ledger knows was sent as sent by this delivery, without mailing it', async () => {
    await run.publish(job(111, 'sent-before@example.com'), '111');
    await waitFor('the sent event', () => run.settledOf(111));
    await run.publish({ ...job(111, 'sent-before@example.com'), requeue: { attemptBase: 1, at: new Date().toISOString() } }, '111:requeue:1');
    const reported = await waitFor('the sent event of the new delivery', () =>
      run.eventsOf(111).find((event) => event.state === 'sent' && event.attempt === 2),
    );
    assert.equal(reported.reason, 'already sent by attempt 1');
    assert.equal(run.offers.get('sent-before@example.com'), 1);
  });

  it('fails a job whose template cannot be rendered, without sending', async () => {
    const broken = job(104, 'broken@example.com');
    broken.template.html = '{% if %}';
    await run.publish(broken, '104');
    const failed = await waitFor('the failed event', () => run.settledOf(104));
    assert.equal(failed.state, 'failed');
    assert.match(failed.reason ?? '', /html could not be rendered/);
    assert.equal(run.offers.get('broken@example.com'), undefined);
  });

  it('refuses a job missing required fields with a log line and a dead letter, fails its message, and keeps delivering', async () => {
    // A v1 job as a broken writer might send it: a message id and nothing else that a delivery needs.
    const { bytes, schema } = encodeDeliveryJob({ messageId: 105 } as DeliveryJob);
    await run.publishBytes(bytes, schema, '105');
    const failed = await waitFor('the failed event', () => run.settledOf(105));
    assert.equal(failed.reason, 'malformed job: invalid celeryTaskId, projectId, organizationId, to, data, acceptedAt, template');
    assert.ok(
      logged.some((line) => line.msg === 'unreadable delivery job dead-lettered' && line.messageId === 105 && line.reason === failed.reason),
      'the refusal is logged',
    );
    await run.publishBytes(new TextEncoder().encode('not a job'), schema, 'garbage');
    await waitFor('an empty jobs stream', async () => ((await run.queued()) === 0 ? true : undefined));
    const letters = await waitFor('both dead letters', async () => {
      const found = await run.deadLetters();
      return found.length === 2 ? found : undefined;
    });
    assert.deepEqual(
      letters.map((letter) => letter.reason),
      [failed.reason, 'malformed job: not a notify.messaging.v1.DeliveryJob'],
    );
    assert.deepEqual(Buffer.from(letters[0]?.bytes ?? []), Buffer.from(bytes), 'the job is kept as it was received');
    await run.publish(job(112, 'after-broken@example.com'), '112');
    assert.equal((await waitFor('the sent event', () => run.settledOf(112))).state, 'sent', 'the mailer still delivers');
    const counts = await run.metrics.deliveries.get();
    const count = (outcome: string): number => counts.values.filter((value) => value.labels.outcome === outcome).reduce((sum, value) => sum + value.value, 0);
    assert.deepEqual([count('sent'), count('deferred'), count('failed')], [6, 3, 8]);
  });

  it('sends a job naming a sender From that mailbox, its Message-ID on the sender’s domain', async () => {
    await run.publish({ ...job(160, 'from-shop@example.com'), from: { address: 'orders@shop.example', name: 'Shop Orders' } }, '160');
    const [mail] = await waitFor('the stored mail', async () => {
      const mails = await run.mailsTo('from-shop@example.com');
      return mails.length > 0 ? mails : undefined;
    });
    assert.deepEqual(
      mail?.from?.value.map(({ name, address }) => ({ name, address })),
      [{ name: 'Shop Orders', address: 'orders@shop.example' }],
    );
    assert.equal(mail?.messageId, '<notify-160@shop.example>');
  });

  it("mails a new message that has an old one's id (its database created again), telling them apart by celery_task_id", async () => {
    await run.publish(job(150, 'reborn@example.com'), '150');
    await waitFor('the sent event', () => run.settledOf(150));
    const reborn = { ...job(150, 'reborn@example.com'), celeryTaskId: '9d3c8f1e-2b7a-4c55-8e61-0a4f2c9b7d31' };
    await run.publish(reborn, reborn.celeryTaskId);
    await waitFor('the second mail', async () => ((await run.mailsTo('reborn@example.com')).length === 2 ? true : undefined));
    assert.equal(run.offers.get('reborn@example.com'), 2, 'the relay was offered each message once');
  });

  it("records a test key's job sent with the synthetic reply, and never offers it to the relay, even one naming a sender", async () => {
    // After the test that asserts the suite's delivery counts so far.
    await run.publish({ ...job(301, 'test-mode@example.com'), test: true, from: { address: 'orders@shop.example', name: '' } }, '301');
    await run.publish(job(302, 'live-after-test@example.com'), '302');
    await waitFor('the sent event', () => run.settledOf(301));
    await waitFor('the live mail', async () => ((await run.mailsTo('live-after-test@example.com')).length > 0 ? true : undefined));
    assert.deepEqual(
      run.eventsOf(301).map((event) => [event.state, event.attempt, event.smtpCode, event.smtpResponse]),
      [
        ['sending', 1, undefined, undefined],
        ['sent', 1, 250, 'test mode: not delivered'],
      ],
    );
    assert.equal(run.offers.get('test-mode@example.com'), undefined);
    assert.deepEqual(await run.mailsTo('test-mode@example.com'), []);
  });

  it("fails a test key's job whose template cannot render, as it would a live one", async () => {
    const broken = { ...job(303, 'test-broken@example.com'), test: true as const };
    broken.template = { ...broken.template, subject: '{% if %}' };
    await run.publish(broken, '303');
    const failed = await waitFor('the failed event', () => run.settledOf(303));
    assert.equal(failed.state, 'failed');
    assert.equal(run.offers.get('test-broken@example.com'), undefined);
  });

  it('retries a job the renderer could not take, since the template is not at fault', async () => {
    const unrenderable = job(113, 'unrendered@example.com');
    unrenderable.template.slug = 'unrenderable';
    await run.publish(unrenderable, '113');
    const failed = await waitFor('the failed event', () => run.settledOf(113));
    assert.deepEqual(
      run.eventsOf(113).map((event) => event.state),
      ['sending', 'deferred', 'sending', 'deferred', 'sending', 'failed'],
    );
    assert.equal(failed.reason, 'retries exhausted: not rendered: the render pool is closed');
    assert.equal(run.offers.get('unrendered@example.com'), undefined);
  });

  it('stops pulling on shutdown but finishes the job it holds', async () => {
    await run.publish(job(201, 'slow@example.com'), '201');
    await waitFor('the sending event', () => run.eventsOf(201).find((event) => event.state === 'sending'));
    await mailer.drain(5_000);
    // The drain returns once JetStream stored the sent event; the run's own consumer may read it a moment later. With
    // no replica left, a job the drain had handed back would never be sent.
    assert.equal((await waitFor('the sent event', () => run.settledOf(201))).state, 'sent');
    assert.equal(await run.ackPending(), 0);

    await run.publish(job(202, 'later@example.com'), '202');
    await sleep(300);
    assert.deepEqual(run.eventsOf(202), [], 'a stopped mailer takes no new job');
    mailer = await run.startReplica();
    assert.equal((await waitFor('the sent event', () => run.settledOf(202))).state, 'sent');
  });

  it('returns a job it cannot finish before the deadline, and another replica delivers it', async () => {
    await run.publish(job(203, 'stuck@example.com'), '203');
    await waitFor('the sending event', () => run.eventsOf(203).find((event) => event.state === 'sending'));
    const started = performance.now();
    await mailer.drain(200);
    assert.ok(performance.now() - started < 1_000, 'the deadline bounds the drain');
    await run.startReplica();
    const sent = await waitFor('the sent event', () => run.settledOf(203));
    assert.equal(sent.state, 'sent');
    assert.equal(run.offers.get('stuck@example.com'), 2, 'sent while the first send was still stalled: another replica delivered it');
    // The attempt given back records nothing, even once its stalled send completes. (Attempt numbers come from the
    // server's delivery count, which NATS 2.9 does not always raise for a job returned by a stopping replica.)
    const recorded = run.eventsOf(203).length;
    await sleep(1_600);
    assert.equal(run.eventsOf(203).length, recorded);
  });

  it('hands back the jobs its open pull brought in as it stopped, instead of leaving them to their ack wait', async () => {
    await mailer.drain(2_000);
    const stopping = await run.startReplica();
    await sleep(200); // its pull is open and waiting, and the only one
    const ids = [211, 212, 213, 214, 215];
    await run.publishFromElsewhere(ids.map((id) => job(id, `handed-back-${id}@example.com`)));
    // The server sends the jobs to the open pull once they are stored; the replica stops before reading them, as one
    // told to stop while they are on their way does.
    const blockedUntil = performance.now() + 150;
    while (performance.now() < blockedUntil);
    stopping.stopIntake();
    await stopping.drain(2_000);
    mailer = await run.startReplica();
    // Far sooner than the ack wait (10 s) that jobs the stopped replica dropped would wait out.
    for (const id of ids) assert.equal((await waitFor(`message ${id} sent`, () => run.settledOf(id), 4_000)).state, 'sent');
    assert.equal(await run.ackPending(), 0);
  });

  it('ends its open pull anyway when NATS does not answer the ping of its stop in time', async () => {
    await mailer.drain(2_000);
    const unanswered = await run.startReplica(undefined, () => new Promise<void>(() => {}));
    await sleep(200); // its pull is open and waiting
    const started = performance.now();
    await unanswered.drain(5_000);
    const tookMs = performance.now() - started;
    // Two seconds for the answer; the open pull itself would have lasted until it expired (10 s).
    assert.ok(tookMs >= 1_900 && tookMs < 4_000, `stopped in ${Math.round(tookMs)} ms`);
    assert.ok(logged.some((line) => line.msg === 'no answer from NATS before the open pull was ended'));
    mailer = await run.startReplica();
    await run.publish(job(216, 'after-unanswered@example.com'), '216');
    assert.equal((await waitFor('the sent event', () => run.settledOf(216))).state, 'sent');
  });
});

describe('mailer under deferrals and load', () => {
  let run: Run;

  before(async () => {
    // Retry delays of a minute: a deferred job stays out of the way for the whole test.
    run = await startRun({ concurrency: 2, ackWaitMs: 10_000, maxAttempts: 3, maxAgeMs: 3_600_000, baseMs: 60_000, maxMs: 60_000 }, () => 0.99);
    await run.startReplica();
  });
  after(() => run?.close());

  it('holds no more jobs at once than its concurrency, however many are queued', async () => {
    const ids = [301, 302, 303, 304, 305, 306];
    for (const id of ids) await run.publish(job(id, `slow-${id}@example.com`), String(id));
    let most = 0;
    await waitFor(
      'every job sent',
      async () => {
        most = Math.max(most, await run.ackPending());
        return ids.every((id) => run.settledOf(id)?.state === 'sent') ? true : undefined;
      },
      8_000,
    );
    // Exactly its concurrency: the jobs are delivered side by side, not one after another.
    assert.equal(most, 2, `held ${most} jobs at once`);
  });

  it('keeps delivering new jobs while more deferred jobs than its concurrency wait out their retry delay', async () => {
    for (const id of [401, 402, 403]) await run.publish(job(id, `defer-${id}@example.com`), String(id));
    await waitFor('three deferred jobs', () =>
      [401, 402, 403].every((id) => run.eventsOf(id).some((event) => event.state === 'deferred')) ? true : undefined,
    );
    await run.publish(job(404, 'fresh@example.com'), '404');
    assert.equal((await waitFor('the sent event', () => run.settledOf(404))).state, 'sent');
    // The sent event is published just before the job is acknowledged: wait for the acknowledgement to land.
    await waitFor('only the deferred jobs to be pending', async () => ((await run.ackPending()) === 3 ? true : undefined));
  });
});

describe('mailer with delivery events slow to be confirmed or lost', () => {
  let run: Run;
  /** Faults by message id, looked up for every event the replica publishes. */
  const faults = new Map<number, (event: DeliveryEvent) => EventFault>();
  const sentRedeliveries = async (): Promise<number> =>
    (await run.metrics.finishedRedeliveries.get()).values.find((value) => value.labels.state === 'sent')?.value ?? 0;

  before(async () => {
    run = await startRun({ concurrency: 4, ackWaitMs: 10_000, maxAttempts: 3, maxAgeMs: 60_000, baseMs: 20, maxMs: 50 });
    await run.startReplica((event) => faults.get(event.messageId)?.(event));
  });
  after(() => run?.close());

  it('does not mail until JetStream confirmed the sending event', async () => {
    const messageId = 501;
    const to = 'held-sending@example.com';
    const confirmSending = Promise.withResolvers<void>();
    faults.set(messageId, (event) => (event.state === 'sending' ? { holdConfirmation: confirmSending.promise } : undefined));
    await run.publish(job(messageId, to), String(messageId));
    try {
      await waitFor('the sending event', () => (run.eventsOf(messageId).length > 0 ? true : undefined));
      await sleep(300);
      assert.equal(run.offers.get(to), undefined, 'the relay is not offered the mail while sending is unconfirmed');
      confirmSending.resolve();
      await waitFor('the acknowledgement', async () => ((await run.queued()) === 0 ? true : undefined));
      assert.equal(run.offers.get(to), 1);
      assert.deepEqual(
        run.eventsOf(messageId).map((event) => event.state),
        ['sending', 'sent'],
      );
    } finally {
      // A failed assertion must not leave the job held forever, or the run could not drain.
      confirmSending.resolve();
    }
  });

  it('does not mail a job whose sending event was not recorded: it comes back and is mailed once', async () => {
    const messageId = 503;
    const to = 'lost-sending@example.com';
    let losses = 0;
    faults.set(messageId, (event) => (event.state === 'sending' && losses++ === 0 ? { lose: true } : undefined));
    await run.publish(job(messageId, to), String(messageId));
    await waitFor('the redelivery to be mailed and settled', async () => ((await run.queued()) === 0 && run.offers.get(to) === 1 ? true : undefined));
    assert.equal(losses, 2, 'the first sending was lost, the redelivery recorded its own');
    assert.equal((await run.mailsTo(to)).length, 1);
    assert.deepEqual(
      run.eventsOf(messageId).map((event) => event.state),
      ['sending', 'sent'],
    );
  });

  it('does not acknowledge a job whose sent event was not recorded, and settles its redelivery from the ledger without mailing again', async () => {
    const messageId = 504;
    const to = 'lost-sent@example.com';
    let losses = 0;
    faults.set(messageId, (event) => (event.state === 'sent' && losses++ === 0 ? { lose: true } : undefined));
    const redeliveriesBefore = await sentRedeliveries();
    await run.publish(job(messageId, to), String(messageId));

    await waitFor('the mail', async () => ((await run.mailsTo(to)).length > 0 ? true : undefined));
    assert.equal(await run.queued(), 1, 'not acknowledged');
    await waitFor('the redelivery to be settled', async () => ((await run.queued()) === 0 ? true : undefined));
    assert.equal(await sentRedeliveries(), redeliveriesBefore + 1, 'the redelivery was settled from the ledger');
    assert.equal(run.offers.get(to), 1, 'the relay was offered the message once');
    assert.equal((await run.mailsTo(to)).length, 1);
  });
});
