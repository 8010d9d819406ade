import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { createLogger } from '@notify/platform';
import { createTransport } from 'nodemailer';
import { type SinkEnvelope, type SmtpSink, startSmtpSink } from './smtp-sink.ts';

describe('SMTP sink', () => {
  let dir: string;
  let sink: SmtpSink;
  const logLines: Array<Record<string, unknown>> = [];
  const offered: SinkEnvelope[] = [];

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'notify-sink-'));
    const destination = new Writable({
      write(chunk: Buffer, _encoding, done) {
        logLines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        done();
      },
    });
    sink = await startSmtpSink({
      host: '127.0.0.1',
      port: 0,
      dir: join(dir, 'mail'),
      logger: createLogger('smtp-sink-test', 'info', destination),
      maxBytes: 64 * 1024,
      reply(envelope) {
        offered.push(envelope);
        if (envelope.to.startsWith('bounce@')) return { code: 550, message: '5.1.1 No such user' };
        if (envelope.to.startsWith('later@')) return { code: 451, message: '4.7.1 Try again later' };
        return undefined;
      },
    });
  });

  after(async () => {
    await sink.close();
    await rm(dir, { recursive: true, force: true });
  });

  const transport = () => createTransport({ host: '127.0.0.1', port: sink.port, secure: false, ignoreTLS: true });

  it('stores an accepted mail as an .eml file and logs its subject', async () => {
    const info = await transport().sendMail({
      from: 'Notify <no-reply@notify.localhost>',
      to: 'ana@example.com',
      subject: 'Hola Ana',
      text: 'plain body',
      html: '<p>html body</p>',
    });
    assert.match(info.response, /^250/);
    assert.equal(sink.received(), 1);
    const files = await readdir(join(dir, 'mail'));
    assert.equal(files.length, 1);
    assert.match(files[0] ?? '', /^\d+-1\.eml$/);
    const raw = await readFile(join(dir, 'mail', files[0] ?? ''), 'utf8');
    assert.match(raw, /^Subject: Hola Ana$/m);
    assert.match(raw, /<p>html body<\/p>/);
    const logged = logLines.find((line) => line.msg === 'mail received');
    assert.equal(logged?.subject, 'Hola Ana');
    assert.deepEqual(offered.at(-1), { from: 'no-reply@notify.localhost', to: 'ana@example.com' });
  });

  it('answers the reply hook code for a recipient and stores nothing', async () => {
    const before = sink.received();
    await assert.rejects(
      transport().sendMail({ from: 'a@notify.localhost', to: 'bounce@example.com', subject: 'x', text: 'x' }),
      (error: Error & { responseCode?: number }) => {
        assert.equal(error.responseCode, 550);
        assert.match(error.message, /No such user/);
        return true;
      },
    );
    await assert.rejects(transport().sendMail({ from: 'a@notify.localhost', to: 'later@example.com', subject: 'x', text: 'x' }), { responseCode: 451 });
    assert.equal(sink.received(), before);
  });

  it('refuses a message above the size limit with 552', async () => {
    const before = sink.received();
    await assert.rejects(transport().sendMail({ from: 'a@notify.localhost', to: 'big@example.com', subject: 'big', text: 'x'.repeat(100 * 1024) }), {
      responseCode: 552,
    });
    assert.equal(sink.received(), before);
  });
});
