// What a client of the MX can make one replica spend: memory, connection slots, time and commands are all bounded, and
// the clients that keep within the bounds are served meanwhile. Timings are shortened (a 2 s command timeout) so that
// the whole file takes a few seconds.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createRegistry } from '@notify/platform';
import { createDataKey, returnPathFor } from '@notify/platform/mail';
import { silentLogger } from '@notify/test/harness/logger.ts';
import { dsn } from '@notify/test/harness/report-samples.ts';
import { type FakeDispatch, startFakeDispatch } from '../testing/fake-dispatch.ts';
import { forkReceiver } from '../testing/forked-receiver.ts';
import { SmtpDialog } from '../testing/smtp-dialog.ts';
import { createBounceMetrics } from './metrics.ts';
import { Receiver, type ReceiverLimits } from './receiver.ts';

const bounceDomain = 'bounces.example.test';
const dataKeyMaterial = randomBytes(32);
const dataKey = createDataKey(dataKeyMaterial);
const mib = 1024 * 1024;
const limits: ReceiverLimits = {
  maxClients: 100,
  maxClientsPerAddress: 10,
  sessionTimeoutMs: 60_000,
  commandTimeoutMs: 2_000,
  maxCommands: 1_000,
  maxRecipients: 100,
  maxHeldBytes: 64 * mib,
};

let dispatch: FakeDispatch;
const receivers: Receiver[] = [];

before(async () => {
  dispatch = await startFakeDispatch();
});

after(async () => {
  await Promise.all(receivers.map((receiver) => receiver.close()));
  await dispatch.close();
});

async function receiver(overrides: Partial<ReceiverLimits> & { maxBytes?: number } = {}): Promise<Receiver> {
  const { maxBytes = mib, ...limitOverrides } = overrides;
  const started = await Receiver.start({
    host: '127.0.0.1',
    port: 0,
    dataKey,
    bounceDomain,
    maxBytes,
    limits: { ...limits, ...limitOverrides },
    reports: dispatch.client,
    metrics: createBounceMetrics(createRegistry('bounce-test')),
    logger: silentLogger(),
    closeTimeoutMs: 1_000,
  });
  receivers.push(started);
  return started;
}

/** A DSN about `messageId` by SMTP, from `localAddress`: the reply to its DATA. */
async function deliverReport(port: number, messageId: number, localAddress?: string): Promise<string> {
  const client = await SmtpDialog.open(port, localAddress);
  try {
    const returnPath = returnPathFor(dataKey, messageId, bounceDomain);
    for (const command of ['EHLO client.example', 'MAIL FROM:<>', `RCPT TO:<${returnPath}>`, 'DATA']) await client.command(command);
    return await client.data([Buffer.from(dsn(returnPath, { action: 'failed', status: '5.1.1' }).replace(/\r\n$/, ''))]);
  } finally {
    client.close();
  }
}

/** `total` bytes of text lines (none starting with a dot), one reused 64 KiB chunk at a time. */
function* filler(total: number): Generator<Buffer> {
  const bytes = Buffer.from(`${'x'.repeat(62)}\r\n`.repeat(1024));
  for (let sent = 0; sent < total; sent += bytes.length) yield sent + bytes.length <= total ? bytes : bytes.subarray(0, total - sent);
}

/** A client that sends one byte a second and never completes a command: EHLO, spelt out over 20 seconds. */
function drip(client: SmtpDialog): void {
  const line = 'EHLO slow.example.com\r\n';
  let next = 0;
  const timer = setInterval(() => {
    if (client.closed) clearInterval(timer);
    else client.write(line[next++ % line.length]!);
  }, 1_000);
}

describe('bounce receiver limits', () => {
  test('a 200 MB message and 1,000 slow-drip connections leave memory in its normal range and other clients served', async (t) => {
    // In a process of its own, so that its resident set is the receiver's, not the 1,000 clients'.
    const forked = await forkReceiver({ dataKeyHex: dataKeyMaterial.toString('hex'), bounceDomain, maxBytes: mib, limits });
    const { port } = forked;
    const drippers: SmtpDialog[] = [];
    try {
      assert.match(await deliverReport(port, 1, '127.0.0.2'), /^250 /, 'warm-up');
      const { now: baseline } = await forked.usage();

      // 1,000 connections from one address, each sending a byte a second.
      drippers.push(...(await Promise.all(Array.from({ length: 1_000 }, () => SmtpDialog.open(port, '127.0.0.1')))));
      for (const client of drippers) drip(client);
      const greeted = drippers.filter((client) => client.greeting.startsWith('220 '));
      assert.ok(greeted.length <= limits.maxClientsPerAddress, `${greeted.length} slow clients got a session`);
      assert.ok(
        drippers.every((client) => /^(220|421) /.test(client.greeting)),
        'the others are refused with 421',
      );

      // Meanwhile 200 MB to bounces@ from another address, and a report from a third.
      const big = await SmtpDialog.open(port, '127.0.0.3');
      for (const command of ['EHLO big.example', 'MAIL FROM:<>', `RCPT TO:<bounces@${bounceDomain}>`, 'DATA']) await big.command(command);
      const [bigReply, served] = await Promise.all([big.data(filler(200 * mib)), deliverReport(port, 2, '127.0.0.2')]);
      big.close();
      assert.match(bigReply, /^552 5\.3\.4 /);
      assert.match(served, /^250 /);

      // The slow clients that got a session never complete a command within the command timeout: they are closed.
      for (const ending of await Promise.all(greeted.map((client) => client.reply()))) assert.match(ending, /^421 4\.4\.2 Timeout waiting for a command/);
      const { peak } = await forked.usage();
      t.diagnostic(`the receiver's resident set: ${(baseline / mib).toFixed(0)} MiB before, ${(peak / mib).toFixed(0)} MiB at its peak`);
      // Node's collector lets some 64 MiB of socket reads wait before it frees them, whatever flows (the same for 200 MB
      // as for 1 GB); keeping the message would take 200 MiB more, and its copy as many again.
      assert.ok(peak - baseline < 128 * mib, `the resident set grew by ${((peak - baseline) / mib).toFixed(0)} MiB`);
      assert.deepEqual(forked.applied, [1, 2]);
    } finally {
      for (const client of drippers) client.close();
      await forked.close();
    }
  });

  test('a client that keeps its session past the time limit is closed with 421 4.4.2', async () => {
    const { port } = await receiver({ sessionTimeoutMs: 500 });
    const client = await SmtpDialog.open(port);
    let reply = '';
    let commands = 0;
    // A NOOP every 50 ms: never idle, never slow, only long.
    while (commands < 50) {
      reply = await client.command('NOOP');
      commands += 1;
      if (!reply.startsWith('250 ')) break;
      await sleep(50);
    }
    assert.match(reply, /^421 4\.4\.2 Session time limit/);
    assert.ok(commands > 2 && commands < 20, `${commands} commands in a 500 ms session`);
  });

  test('a client that drips a command a byte at a time is closed with 421 4.4.2 at the command timeout', async () => {
    const { port } = await receiver({ commandTimeoutMs: 500 });
    const client = await SmtpDialog.open(port);
    const startedAt = Date.now();
    for (const byte of 'EHLO slow.example.com') {
      if (client.closed) break;
      client.write(byte);
      await sleep(100);
    }
    assert.match(await client.reply(), /^421 4\.4\.2 Timeout waiting for a command/);
    assert.ok(Date.now() - startedAt < 1_500);
  });

  test('a session past its commands is closed with 421 4.7.0', async () => {
    const { port } = await receiver({ maxCommands: 20 });
    const client = await SmtpDialog.open(port);
    for (let i = 0; i < 20; i += 1) assert.match(await client.command('NOOP'), /^250 /);
    assert.match(await client.command('NOOP'), /^421 4\.7\.0 Too many commands/);
    assert.equal(await client.reply(), '');
  });

  test("recipients past the session's share are answered 452, one report at a time being accepted until then", async () => {
    const { port } = await receiver({ maxRecipients: 2 });
    const client = await SmtpDialog.open(port);
    await client.command('EHLO client.example');
    const answers: string[] = [];
    for (const messageId of [11, 12, 13]) {
      await client.command('MAIL FROM:<>');
      answers.push(await client.command(`RCPT TO:<${returnPathFor(dataKey, messageId, bounceDomain)}>`));
      await client.command('RSET');
    }
    client.close();
    assert.match(answers[0]!, /^250 /);
    assert.match(answers[1]!, /^250 /);
    assert.match(answers[2]!, /^452 4\.5\.3 Too many recipients in this session/);
  });

  test('a report that would take the held bytes past their limit is read to its end, dropped and deferred with 451', async () => {
    const { port } = await receiver({ maxBytes: 64 * 1024, maxHeldBytes: 96 * 1024 });
    const start = async (messageId: number): Promise<{ client: SmtpDialog; content: Buffer }> => {
      const returnPath = returnPathFor(dataKey, messageId, bounceDomain);
      const client = await SmtpDialog.open(port);
      for (const command of ['EHLO client.example', 'MAIL FROM:<>', `RCPT TO:<${returnPath}>`, 'DATA']) await client.command(command);
      // A DSN padded to 60 KiB with a long human-readable part: two of them do not fit in 96 KiB.
      const report = dsn(returnPath, { action: 'failed', status: '5.1.1' }).replace(
        'Message will be deleted from queue\r\n',
        `${'padding line\r\n'.repeat(4_300)}`,
      );
      return { client, content: Buffer.from(report.replace(/\r\n$/, '')) };
    };
    const first = await start(21);
    // The first report's content arrives in full; its final dot waits.
    await first.client.send([first.content]);
    await sleep(200);
    const second = await start(22);
    assert.match(await second.client.data([second.content]), /^451 4\.3\.1 /);
    assert.match(await first.client.endData(), /^250 /);
    // Once answered, its bytes are given back: the second is accepted on its retry.
    assert.match(await second.client.command('MAIL FROM:<>'), /^250 /);
    await second.client.command(`RCPT TO:<${returnPathFor(dataKey, 22, bounceDomain)}>`);
    await second.client.command('DATA');
    assert.match(await second.client.data([second.content]), /^250 /);
    first.client.close();
    second.client.close();
  });
});
