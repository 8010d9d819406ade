import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, beforeEach, describe, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { createRegistry, GrpcClient, GrpcServer, OperationalError, type Registry, UserError } from '@notify/platform';
import { createDataKey, returnPathFor, unsubscribeToken } from '@notify/platform/mail';
import { dispatchProto } from '@notify/proto';
import { silentLogger } from '@notify/test/harness/logger.ts';
import { arf, dsn } from '@notify/test/harness/report-samples.ts';
import nodemailer from 'nodemailer';
import { createBounceMetrics } from './metrics.ts';
import { Receiver } from './receiver.ts';

const bounceDomain = 'bounces.example.test';
const token = 'internal-token-for-tests';
const dataKey = createDataKey(randomBytes(32));
/** The defaults of config.ts: none of these tests comes near them (receiver-limits.test.ts does). */
const limits = {
  maxClients: 200,
  maxClientsPerAddress: 20,
  sessionTimeoutMs: 300_000,
  commandTimeoutMs: 60_000,
  maxCommands: 1_000,
  maxRecipients: 100,
  maxHeldBytes: 32 * 1024 * 1024,
};

/** What the test's dispatch-svc was asked, and how it answers next. */
interface Calls {
  applied: Record<string, unknown>[];
  unsubscribed: Record<string, unknown>[];
  applyAnswer: () => Promise<{ state: string; changed: boolean }>;
}

const calls: Calls = { applied: [], unsubscribed: [], applyAnswer: async () => ({ state: 'bounced', changed: true }) };
let dispatch: GrpcServer;
let client: GrpcClient<typeof dispatchProto.ReportService.service>;
let receiver: Receiver;
let registry: Registry;

before(async () => {
  dispatch = new GrpcServer({ logger: silentLogger(), registry: createRegistry('dispatch-test') });
  dispatch.add(
    dispatchProto.ReportService.service,
    {
      ApplyReport: async (request) => {
        calls.applied.push({ ...request });
        return calls.applyAnswer();
      },
      Unsubscribe: async (request) => {
        calls.unsubscribed.push({ ...request });
        return { maskedAddress: 'a***@example.com', suppressed: true, changed: true };
      },
    },
    [{ name: 'bounce', token }],
  );
  const port = await dispatch.listen(0, '127.0.0.1');
  client = new GrpcClient(dispatchProto.ReportService.service, `127.0.0.1:${port}`, { token, deadlineMs: 2_000 });
});

beforeEach(async () => {
  calls.applied = [];
  calls.unsubscribed = [];
  calls.applyAnswer = async () => ({ state: 'bounced', changed: true });
  registry = createRegistry('bounce-test');
  await receiver?.close();
  receiver = await Receiver.start({
    host: '127.0.0.1',
    port: 0,
    dataKey,
    bounceDomain,
    maxBytes: 1024 * 1024,
    limits,
    reports: client,
    metrics: createBounceMetrics(registry),
    logger: silentLogger(),
    closeTimeoutMs: 1_000,
  });
});

after(async () => {
  await receiver?.close();
  client.close();
  await dispatch.close(1_000);
});

/** Delivers `raw` to the receiver over SMTP with a null return path, as reports are sent (RFC 3464 section 2). */
async function deliver(to: string, raw: string): Promise<{ response: string }> {
  const transport = nodemailer.createTransport({ host: '127.0.0.1', port: receiver.port, secure: false, ignoreTLS: true });
  try {
    return await transport.sendMail({ envelope: { from: '', to }, raw });
  } finally {
    transport.close();
  }
}

async function refusal(to: string, raw: string): Promise<{ responseCode: number; response: string; command: string }> {
  const error = await deliver(to, raw).then(
    () => assert.fail('the receiver accepted the mail'),
    (failure: unknown) => failure as { responseCode: number; response: string; command: string },
  );
  return error;
}

async function counted(kind: string, outcome: string): Promise<number> {
  const metric = await registry.getSingleMetric('notify_bounce_reports_total')!.get();
  return metric.values.find((value) => value.labels.kind === kind && value.labels.outcome === outcome)?.value ?? 0;
}

describe('bounce receiver', () => {
  test('a DSN with a 5.1.1 failure bounces the message and suppresses the address', async () => {
    const returnPath = returnPathFor(dataKey, 41, bounceDomain);
    const reply = await deliver(
      returnPath,
      dsn(returnPath, { action: 'failed', status: '5.1.1', diagnostic: 'smtp; 550 5.1.1 <louisl@larry.slip.umd.edu>... User unknown' }),
    );
    assert.match(reply.response, /^250 /);
    assert.equal(calls.applied.length, 1);
    const applied = calls.applied[0]!;
    assert.equal(applied.messageId, 41);
    assert.equal(applied.kind, 'bounced');
    assert.equal(applied.suppression, 'hard_bounce');
    assert.equal(applied.smtpCode, 550);
    assert.equal(applied.detail, '5.1.1 550 5.1.1 <louisl@larry.slip.umd.edu>... User unknown');
    assert.ok(!Number.isNaN(Date.parse(String(applied.receivedAt))));
    assert.equal(await counted('dsn', 'applied'), 1);
  });

  test('the return path is read case-insensitively, as relays may fold it', async () => {
    const returnPath = returnPathFor(dataKey, 42, bounceDomain).toUpperCase();
    await deliver(returnPath, dsn(returnPath, { action: 'failed', status: '5.1.2' }));
    assert.equal(calls.applied[0]!.messageId, 42);
    assert.equal(calls.applied[0]!.suppression, 'hard_bounce');
    assert.equal(calls.applied[0]!.smtpCode, 0);
  });

  test('the RFC 3464 simple DSN (5.0.0, not about the address) bounces without suppressing', async () => {
    const returnPath = returnPathFor(dataKey, 43, bounceDomain);
    const reply = await deliver(
      returnPath,
      dsn(returnPath, {
        action: 'failed',
        status: '5.0.0 (permanent failure)',
        diagnostic: "smtp; 550 'arathib@vnet.IBM.COM' is not a\n  registered gateway user",
      }),
    );
    assert.match(reply.response, /^250 /);
    assert.equal(calls.applied[0]!.kind, 'bounced');
    assert.equal(calls.applied[0]!.suppression, '');
    assert.equal(calls.applied[0]!.smtpCode, 550);
    assert.equal(calls.applied[0]!.detail, "5.0.0 550 'arathib@vnet.IBM.COM' is not a registered gateway user");
  });

  test('a 5.1.8 failure (about our sender address) does not suppress the recipient', async () => {
    const returnPath = returnPathFor(dataKey, 44, bounceDomain);
    await deliver(returnPath, dsn(returnPath, { action: 'failed', status: '5.1.8', diagnostic: 'smtp; 553 5.1.8 sender domain does not exist' }));
    assert.equal(calls.applied[0]!.suppression, '');
  });

  test('a delayed DSN is accepted and changes nothing', async () => {
    const returnPath = returnPathFor(dataKey, 45, bounceDomain);
    const reply = await deliver(returnPath, dsn(returnPath, { action: 'delayed', status: '4.0.0', diagnostic: 'smtp; 421 4.4.2 connection timed out' }));
    assert.match(reply.response, /^250 /);
    assert.equal(calls.applied.length, 0);
    assert.equal(await counted('dsn', 'ignored'), 1);
  });

  test('an ARF abuse report to the feedback-loop address marks the message complained, found by its Return-Path', async () => {
    const reply = await deliver(`fbl@${bounceDomain}`, arf(returnPathFor(dataKey, 46, bounceDomain)));
    assert.match(reply.response, /^250 /);
    assert.deepEqual(
      {
        messageId: calls.applied[0]!.messageId,
        kind: calls.applied[0]!.kind,
        suppression: calls.applied[0]!.suppression,
        detail: calls.applied[0]!.detail,
      },
      { messageId: 46, kind: 'complained', suppression: 'complaint', detail: 'abuse (SomeGenerator/1.0)' },
    );
    assert.equal(await counted('arf', 'applied'), 1);
  });

  test('a not-spam report is accepted and changes nothing', async () => {
    const reply = await deliver(`fbl@${bounceDomain}`, arf(returnPathFor(dataKey, 47, bounceDomain), 'not-spam'));
    assert.match(reply.response, /^250 /);
    assert.equal(calls.applied.length, 0);
    assert.equal(await counted('arf', 'ignored'), 1);
  });

  test('a report dispatch-svc had applied before is accepted as a duplicate', async () => {
    calls.applyAnswer = async () => ({ state: 'bounced', changed: false });
    const returnPath = returnPathFor(dataKey, 48, bounceDomain);
    const reply = await deliver(returnPath, dsn(returnPath, { action: 'failed', status: '5.1.1' }));
    assert.match(reply.response, /^250 /);
    assert.equal(await counted('dsn', 'duplicate'), 1);
  });

  test('a forged token is refused with 550 5.1.1 at RCPT and changes nothing', async () => {
    const other = createDataKey(randomBytes(32));
    const forged = returnPathFor(other, 49, bounceDomain);
    const error = await refusal(forged, dsn(forged, { action: 'failed', status: '5.1.1' }));
    assert.equal(error.command, 'RCPT TO');
    assert.equal(error.responseCode, 550);
    assert.match(error.response, /^550 5\.1\.1 /);
    assert.equal(calls.applied.length, 0);
    assert.equal(await counted('other', 'refused'), 1);
  });

  test('a garbled token and another domain are refused at RCPT', async () => {
    const valid = returnPathFor(dataKey, 50, bounceDomain);
    const garbled = valid.replace(/\+(.)/, (_all, first: string) => `+${first === 'a' ? 'b' : 'a'}`);
    for (const address of [garbled, `bounces+@${bounceDomain}`, `postmaster@${bounceDomain}`, returnPathFor(dataKey, 50, 'example.org'), `fbl@example.org`]) {
      const error = await refusal(address, dsn(valid, { action: 'failed', status: '5.1.1' }));
      assert.equal(error.command, 'RCPT TO', address);
      assert.equal(error.responseCode, 550, address);
    }
    assert.equal(calls.applied.length, 0);
  });

  test('a mail that is not a report, or a report without its machine-readable part, is refused with 550 5.6.0', async () => {
    const returnPath = returnPathFor(dataKey, 51, bounceDomain);
    const plain = 'From: someone@example.com\r\nTo: x@example.com\r\nSubject: out of office\r\n\r\nI am away.\r\n';
    const noStatus = dsn(returnPath, { action: 'failed', status: '5.1.1' }).replace('content-type: message/delivery-status', 'content-type: text/plain');
    const noAction = dsn(returnPath, { action: 'failed', status: '5.1.1' }).replace(/Action: failed\r\n/, '');
    const truncated = dsn(returnPath, { action: 'failed', status: '5.1.1' }).replace(/--RAA14128\.773615765\/CS\.UTK\.EDU--\r\n$/, '');
    for (const raw of [plain, noStatus, noAction, truncated]) {
      const error = await refusal(returnPath, raw);
      assert.equal(error.command, 'DATA');
      assert.match(error.response, /^550 5\.6\.0 /);
    }
    assert.equal(calls.applied.length, 0);
  });

  test('a report to the plain bounce address whose original carries no return path of ours is refused', async () => {
    const foreign = 'someone@example.org';
    const error = await refusal(`bounces@${bounceDomain}`, dsn(foreign, { action: 'failed', status: '5.1.1' }));
    assert.match(error.response, /^550 5\.6\.0 /);
    assert.equal(calls.applied.length, 0);
  });

  test('while dispatch-svc is unavailable or the message is not sent yet, the report is deferred with 451', async () => {
    const returnPath = returnPathFor(dataKey, 52, bounceDomain);
    for (const failure of [new OperationalError('database down'), new UserError(status.ABORTED, 'report_early', 'the message is not sent yet')]) {
      calls.applyAnswer = async () => {
        throw failure;
      };
      const error = await refusal(returnPath, dsn(returnPath, { action: 'failed', status: '5.1.1' }));
      assert.equal(error.responseCode, 451);
      assert.match(error.response, /^451 4\.3\.0 /);
    }
    assert.equal(await counted('dsn', 'deferred'), 2);
  });

  test('a report about a message dispatch-svc does not know is refused with 550', async () => {
    calls.applyAnswer = async () => {
      throw new UserError(status.NOT_FOUND, 'message_not_found', 'no such message');
    };
    const returnPath = returnPathFor(dataKey, 53, bounceDomain);
    const error = await refusal(returnPath, dsn(returnPath, { action: 'failed', status: '5.1.1' }));
    assert.equal(error.responseCode, 550);
    assert.equal(await counted('dsn', 'refused'), 1);
  });

  test('dispatch-svc unreachable is 451 too', async () => {
    await receiver.close();
    registry = createRegistry('bounce-test');
    const unreachable = new GrpcClient(dispatchProto.ReportService.service, '127.0.0.1:1', { token, deadlineMs: 500 });
    receiver = await Receiver.start({
      host: '127.0.0.1',
      port: 0,
      dataKey,
      bounceDomain,
      maxBytes: 1024 * 1024,
      limits,
      reports: unreachable,
      metrics: createBounceMetrics(registry),
      logger: silentLogger(),
      closeTimeoutMs: 1_000,
    });
    const returnPath = returnPathFor(dataKey, 54, bounceDomain);
    const error = await refusal(returnPath, dsn(returnPath, { action: 'failed', status: '5.1.1' }));
    assert.equal(error.responseCode, 451);
    assert.equal(await counted('dsn', 'deferred'), 1);
    unreachable.close();
  });

  test('a mailto unsubscribe carrying a valid token unsubscribes through dispatch-svc', async () => {
    const unsubscribe = unsubscribeToken(dataKey, { projectId: 7, messageId: 55, address: 'louisl@larry.slip.umd.edu' });
    const raw = `From: louisl@larry.slip.umd.edu\r\nTo: unsubscribe@${bounceDomain}\r\nSubject: unsubscribe ${unsubscribe}\r\n\r\n\r\n`;
    const reply = await deliver(`Unsubscribe@${bounceDomain.toUpperCase()}`, raw);
    assert.match(reply.response, /^250 /);
    assert.deepEqual(calls.unsubscribed, [{ token: unsubscribe, source: 'mailto', dryRun: false }]);
    assert.equal(await counted('unsubscribe', 'applied'), 1);
  });

  test('a mailto unsubscribe with a forged token is refused and changes nothing', async () => {
    const forged = unsubscribeToken(createDataKey(randomBytes(32)), { projectId: 7, messageId: 56, address: 'a@example.com' });
    const raw = `From: a@example.com\r\nTo: unsubscribe@${bounceDomain}\r\nSubject: unsubscribe ${forged}\r\n\r\n\r\n`;
    const error = await refusal(`unsubscribe@${bounceDomain}`, raw);
    assert.match(error.response, /^550 5\.6\.0 /);
    assert.equal(calls.unsubscribed.length, 0);
  });

  test('a second recipient in one transaction is deferred to another', async () => {
    const first = returnPathFor(dataKey, 57, bounceDomain);
    const second = returnPathFor(dataKey, 58, bounceDomain);
    const transport = nodemailer.createTransport({ host: '127.0.0.1', port: receiver.port, secure: false, ignoreTLS: true });
    const info = await transport.sendMail({ envelope: { from: '', to: [first, second] }, raw: dsn(first, { action: 'failed', status: '5.1.1' }) });
    transport.close();
    assert.deepEqual(info.accepted, [first]);
    assert.deepEqual(info.rejected, [second]);
    assert.equal(calls.applied.length, 1);
  });
});
