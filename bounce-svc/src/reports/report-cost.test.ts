// What one report costs the receiver: however large or however many parts, it is read in milliseconds and a bounded
// amount of memory, so the other clients of the replica are greeted and served meanwhile. The receiver runs in a
// process of its own: its event loop and resident set are what is measured, not the test's clients'.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createDataKey, returnPathFor } from '@notify/platform/mail';
import { dsn } from '@notify/test/harness/report-samples.ts';
import { forkReceiver } from '../testing/forked-receiver.ts';
import { SmtpDialog } from '../testing/smtp-dialog.ts';
import type { ReceiverLimits } from './receiver.ts';

const bounceDomain = 'bounces.example.test';
const dataKeyMaterial = randomBytes(32);
const dataKey = createDataKey(dataKeyMaterial);
const mib = 1024 * 1024;
const limits: ReceiverLimits = {
  maxClients: 1_000,
  // Every client of the test comes from 127.0.0.1.
  maxClientsPerAddress: 1_000,
  sessionTimeoutMs: 60_000,
  commandTimeoutMs: 10_000,
  maxCommands: 1_000,
  maxRecipients: 100,
  maxHeldBytes: 64 * mib,
};
/** smtp-server waits this long before its greeting, to catch clients that talk first: not a cost of the reports. */
const greetingPauseMs = 100;

/** A DSN about `messageId` whose human-readable part is `size` bytes of quoted-printable text. */
function quotedPrintableReport(messageId: number, size: number): Buffer {
  const returnPath = returnPathFor(dataKey, messageId, bounceDomain);
  const line = 'Le message =C3=A0 l=E2=80=99adresse ci-dessous n=E2=80=99a pas pu =C3=AAtre remis =\r\n';
  const text = line.repeat(Math.ceil(size / line.length));
  const report = dsn(returnPath, { action: 'failed', status: '5.1.1' }).replace(
    '--RAA14128.773615765/CS.UTK.EDU\r\n\r\nThe original message',
    `--RAA14128.773615765/CS.UTK.EDU\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n${text}\r\nThe original message`,
  );
  return Buffer.from(report.replace(/\r\n$/, ''));
}

/** A multipart/report of `count` empty parts. */
function manyPartReport(count: number): Buffer {
  const header = 'From: <mailer-daemon@example.org>\r\nMIME-Version: 1.0\r\nContent-Type: multipart/report; report-type=delivery-status; boundary="b"\r\n\r\n';
  return Buffer.from(`${header}${'--b\r\n\r\n'.repeat(count)}--b--`);
}

/**
 * `content` in 128 KiB pieces every 2 ms (some 60 MB/s): the pace of a fast network rather than of the loopback, so
 * that the transfer does not take the CPU the test shares with everything else.
 */
async function* paced(content: Buffer): AsyncGenerator<Buffer> {
  for (let offset = 0; offset < content.length; offset += 128 * 1024) {
    yield content.subarray(offset, offset + 128 * 1024);
    await sleep(2);
  }
}

/** A transaction with the whole report sent but its final dot: the receiver reads the report once the dot comes. */
async function allButTheDot(port: number, recipient: string, content: Buffer): Promise<SmtpDialog> {
  const client = await SmtpDialog.open(port);
  for (const command of ['EHLO reporter.example', 'MAIL FROM:<>', `RCPT TO:<${recipient}>`, 'DATA']) await client.command(command);
  await client.send(paced(content));
  return client;
}

/** How long past smtp-server's pause a client waits for its greeting, in ms. */
async function greetingDelay(port: number): Promise<number> {
  const client = await SmtpDialog.open(port);
  client.close();
  return client.greetedAt! - client.connectedAt - greetingPauseMs;
}

/** A new client every 10 ms until `done` settles: how late each was greeted. */
async function greetingDelays(port: number, done: Promise<unknown>): Promise<number[]> {
  let settled = false;
  void done.finally(() => (settled = true));
  const delays: Promise<number>[] = [];
  while (!settled) {
    delays.push(greetingDelay(port));
    await sleep(10);
  }
  return Promise.all(delays);
}

interface Reading {
  /** How late each client that came while the reports were read was greeted, in ms, past smtp-server's pause. */
  delays: number[];
  largeReply: string;
  manyPartsReply: string;
}

/** Sends a 10 MB report about `largeId` and a million-part one, then their final dots, and greets clients until both are answered. */
async function readBoth(port: number, largeId: number): Promise<Reading> {
  const [large, manyParts] = await Promise.all([
    allButTheDot(port, returnPathFor(dataKey, largeId, bounceDomain), quotedPrintableReport(largeId, 10 * mib)),
    allButTheDot(port, returnPathFor(dataKey, largeId + 1, bounceDomain), manyPartReport(1_000_000)),
  ]);
  // Let the receiver take in what was sent: from the final dots on it reads the reports, while clients come.
  await sleep(200);
  const replies = Promise.all([large.endData(), manyParts.endData()]);
  const delays = await greetingDelays(port, replies);
  const [largeReply, manyPartsReply] = await replies;
  large.close();
  manyParts.close();
  return { delays, largeReply, manyPartsReply };
}

describe('the cost of one report', () => {
  test('while a 10 MB report and a million-part report are read, the receiver never holds its event loop for 100 ms of CPU, other clients are greeted, and memory stays bounded', async (t) => {
    const forked = await forkReceiver({ dataKeyHex: dataKeyMaterial.toString('hex'), bounceDomain, maxBytes: 16 * mib, limits });
    try {
      const warmUp = await allButTheDot(forked.port, returnPathFor(dataKey, 60, bounceDomain), quotedPrintableReport(60, 1_024));
      assert.match(await warmUp.endData(), /^250 /, 'warm-up');
      warmUp.close();
      const { now: baseline } = await forked.usage();
      const idle = await greetingDelays(forked.port, sleep(1_000));
      const { longestTurnMs: idleTurnMs } = await forked.usage();

      const { delays, largeReply, manyPartsReply } = await readBoth(forked.port, 61);
      // A client waits for its greeting as long as the receiver's main thread runs without returning to its event loop.
      // That is judged in the main thread's CPU time, which a machine shared with other suites cannot stretch, while
      // the greetings' wall-clock delays, which it can, are reported: reading a report as bounce-svc once did held
      // the loop for seconds.
      const { peak, longestTurnMs } = await forked.usage();
      t.diagnostic(
        `${delays.length} clients greeted while the reports were read, the slowest ${Math.max(...delays).toFixed(0)} ms past smtp-server's ${greetingPauseMs} ms pause; idle, the slowest of ${idle.length} ${Math.max(...idle).toFixed(0)} ms`,
      );
      t.diagnostic(`the longest turn of the receiver's event loop: ${longestTurnMs.toFixed(1)} ms of CPU while reading, ${idleTurnMs.toFixed(1)} ms idle`);
      t.diagnostic(`the receiver's resident set: ${(baseline / mib).toFixed(0)} MiB before, ${(peak / mib).toFixed(0)} MiB at its peak`);
      assert.ok(longestTurnMs < 100, `the receiver's main thread ran ${longestTurnMs.toFixed(0)} ms of CPU without a turn of its event loop`);
      assert.ok(delays.length > 0 && delays.every(Number.isFinite), 'every client that came while the reports were read was greeted');
      // Both reports are held while they are read (17 MiB), besides what the collector lets wait (see receiver-limits.test.ts).
      assert.ok(peak - baseline < 100 * mib, `the resident set grew by ${((peak - baseline) / mib).toFixed(0)} MiB`);
      assert.match(largeReply, /^250 /);
      assert.match(manyPartsReply, /^550 5\.6\.0 .*more than 100 parts/);
      assert.deepEqual(forked.applied, [60, 61]);
    } finally {
      await forked.close();
    }
  });
});
