// The refusals nodemailer's pool retries by itself, heard through its logger: against a real SMTP server (the local
// sink) that answers 421 on a connection the pool had already used.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { startSmtpSink } from '@notify/cli/local';
import { createRegistry } from '@notify/platform';
import { createDataKey } from '@notify/platform/mail';
import { silentLogger } from '@notify/test/harness/logger.ts';
import { parseSender } from './mail-identity.ts';
import { createMailSender } from './mail-sender.ts';
import { PoolRefusals, refusalIn } from './pool-refusals.ts';
import { createRelayMetrics } from './relay-metrics.ts';
import { Relays } from './relays.ts';
import type { DeliveryOutcome } from './smtp-outcome.ts';

describe('refusals the SMTP pool retries', () => {
  test('the reply is read from the error text the pool logs', () => {
    assert.deepEqual(refusalIn('Server closed the connection: 421 4.7.0 Too many connections, slow down'), {
      kind: 'temporary',
      reason: 'mail server refused the connection: 421 4.7.0 Too many connections, slow down',
      smtpCode: 421,
      smtpResponse: '421 4.7.0 Too many connections, slow down',
    });
    assert.equal(refusalIn('Connection closed unexpectedly'), undefined);
  });

  test('a 421 on a reused connection is sent again by the pool, and reported with its recipient', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'notify-pool-refusals-'));
    let offers = 0;
    const sink = await startSmtpSink({
      host: '127.0.0.1',
      port: 0,
      dir,
      logger: silentLogger('smtp-sink'),
      // The second recipient offered is refused: by then the pool's one connection has delivered the first.
      reply: () => {
        offers += 1;
        return offers === 2 ? { code: 421, message: '4.7.0 Too many connections, slow down' } : undefined;
      },
    });
    const retried: [string, DeliveryOutcome][] = [];
    const poolRefusals = new PoolRefusals((to, refusal) => retried.push([to, refusal]));
    const relays = new Relays({
      defaultUrls: [`smtp://127.0.0.1:${sink.port}`],
      projects: { urls: () => undefined, named: () => [] },
      poolSize: 1,
      failureThreshold: 3,
      coolDownMs: 30_000,
      metrics: createRelayMetrics(createRegistry('pool-refusals-test')),
      logger: silentLogger('mail-sender'),
      transportLogger: poolRefusals.logger,
    });
    const sender = createMailSender({
      relays,
      sender: parseSender('Example <no-reply@example.com>'),
      dataKey: createDataKey(randomBytes(32)),
      bounceDomain: 'bounces.example.net',
      publicUrl: 'https://notify.example.net',
      dkimKey: () => undefined,
      poolRefusals,
    });
    try {
      const mail = { subject: 'Hello', text: 'Hello', html: '<p>Hello</p>' };
      for (const [messageId, to] of [
        [1, 'a@fast.example'],
        [2, 'b@slow.example'],
      ] as const) {
        const outcome = await sender.send({ messageId, projectId: 1, to, template: { unsubscribe: false } }, mail);
        assert.equal(outcome.kind, 'accepted', 'the pool sent the refused mail again, and it went through');
      }
      assert.equal(offers, 3);
      assert.deepEqual(
        retried.map(([to, refusal]) => [to, refusal.smtpCode]),
        [['b@slow.example', 421]],
      );
    } finally {
      sender.close();
      await sink.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
