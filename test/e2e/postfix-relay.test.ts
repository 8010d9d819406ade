// The private Postfix (test/harness/private-postfix.ts) behaves as the relay the bounce tests need: it accepts a
// message, the far server then refuses the recipient, and the DSN Postfix itself writes (RFC 3464) reaches the
// server that stands for the bounce domain, addressed to the VERP return path.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { type AddressInfo, connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { type ParsedMail, simpleParser } from 'mailparser';
import { createTransport } from 'nodemailer';
import { SMTPServer } from 'smtp-server';
import { type PrivatePostfix, startPrivatePostfix } from '../harness/private-postfix.ts';
import { waitFor } from '../harness/wait.ts';

interface Received {
  from: string;
  to: string[];
  raw: Buffer;
}

/** A real SMTP server on loopback; `refuse` answers a recipient with an error instead of accepting it. */
async function smtpServer(
  refuse?: (address: string) => { code: number; message: string } | undefined,
): Promise<{ port: number; mails: Received[]; refused: string[]; close(): Promise<void> }> {
  const mails: Received[] = [];
  const refused: string[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    // The refusal below carries its own enhanced status code, as a real relay's would.
    hideENHANCEDSTATUSCODES: true,
    logger: false,
    onRcptTo(address, _session, callback) {
      const refusal = refuse?.(address.address);
      if (!refusal) return callback();
      refused.push(address.address);
      callback(Object.assign(new Error(refusal.message), { responseCode: refusal.code }));
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const envelope = session.envelope;
        mails.push({ from: envelope.mailFrom ? envelope.mailFrom.address : '', to: envelope.rcptTo.map((rcpt) => rcpt.address), raw: Buffer.concat(chunks) });
        callback();
      });
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return {
    port: (server.server.address() as AddressInfo).port,
    mails,
    refused,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** The body of the first MIME part of `type` directly inside a multipart body with `boundary`. */
function mimePart(raw: string, boundary: string, type: string): string | undefined {
  for (const part of raw.split(`--${boundary}`).slice(1, -1)) {
    const [head = '', ...body] = part.replace(/^\r?\n/, '').split(/\r?\n\r?\n/);
    if (new RegExp(`^content-type:\\s*${type.replace('/', '\\/')}\\s*(;|$)`, 'im').test(head)) return body.join('\n\n');
  }
  return undefined;
}

describe('a private Postfix as the relay', () => {
  let far: Awaited<ReturnType<typeof smtpServer>>;
  let bounces: Awaited<ReturnType<typeof smtpServer>>;
  let postfix: PrivatePostfix;

  before(
    async () => {
      far = await smtpServer((address) => (address === 'nobody@example.test' ? { code: 550, message: '5.1.1 no such user' } : undefined));
      bounces = await smtpServer();
      const started = Date.now();
      // In a fresh container this installs Debian's postfix package first.
      postfix = await startPrivatePostfix({
        routes: { 'example.test': { host: '127.0.0.1', port: far.port }, 'bounce.test': { host: '127.0.0.1', port: bounces.port } },
      });
      console.log(`private Postfix ready on port ${postfix.port} after ${Date.now() - started} ms`);
    },
    { timeout: 600_000 },
  );

  after(async () => {
    await postfix?.stop();
    await far?.close();
    await bounces?.close();
  });

  test('a recipient the far server refuses after Postfix accepted the message comes back as a DSN to the VERP return path', { timeout: 60_000 }, async () => {
    const transport = createTransport({ host: '127.0.0.1', port: postfix.port, secure: false, ignoreTLS: true });
    const sentAt = Date.now();
    const info = await transport.sendMail({
      envelope: { from: 'bounces+sometoken@bounce.test', to: ['nobody@example.test'] },
      from: 'Notify <notify@sender.test>',
      to: 'nobody@example.test',
      subject: 'Welcome',
      text: 'Hello',
      messageId: '<postfix-relay-test@sender.test>',
    });
    transport.close();
    // Postfix took the message: the refusal can only come later, as a bounce.
    assert.match(info.response, /^250 /);
    assert.deepEqual(info.accepted, ['nobody@example.test']);

    const dsn = await waitFor(() => bounces.mails[0], { timeoutMs: 30_000, intervalMs: 50, what: 'the DSN Postfix writes' }).catch((error: Error) => {
      throw new Error(`${error.message}; Postfix's log:\n${postfix.log()}`, { cause: error });
    });
    const elapsedMs = Date.now() - sentAt;
    console.log(`DSN arrived ${elapsedMs} ms after Postfix accepted the message`);
    assert.deepEqual(far.refused, ['nobody@example.test'], 'the far server was asked for the recipient and refused it');
    assert.equal(far.mails.length, 0);
    // The null reverse path (RFC 5321 section 4.5.5), to the VERP address the message went out with.
    assert.equal(dsn.from, '');
    assert.deepEqual(dsn.to, ['bounces+sometoken@bounce.test']);

    const parsed: ParsedMail = await simpleParser(dsn.raw);
    const contentType = parsed.headers.get('content-type') as { value: string; params: Record<string, string> };
    assert.equal(contentType.value, 'multipart/report');
    assert.equal(contentType.params['report-type'], 'delivery-status');
    // mailparser folds a message/delivery-status part into `text`; the part itself is cut out along the boundary.
    const fields = mimePart(dsn.raw.toString('utf8'), contentType.params.boundary ?? '', 'message/delivery-status');
    assert.ok(fields, `no message/delivery-status part in:\n${dsn.raw.toString('utf8')}`);
    assert.match(fields, /^Action: failed$/im);
    assert.match(fields, /^Status: 5\.1\.1$/im);
    assert.match(fields, /^Final-Recipient: rfc822; ?nobody@example\.test$/im);
    assert.match(fields, /^Diagnostic-Code: smtp; ?550 5\.1\.1 no such user$/im);
    // The returned headers name the original message, so a receiver could also match it by Message-ID.
    const returned = parsed.attachments.find((part) => part.contentType === 'text/rfc822-headers' || part.contentType === 'message/rfc822');
    assert.ok(returned, 'the DSN returns the original headers');
    assert.match(returned.content.toString('utf8'), /^Message-ID: <postfix-relay-test@sender\.test>$/im);
    assert.ok(elapsedMs < 15_000, `the DSN took ${elapsedMs} ms`);
  });

  test('a recipient domain with no route is refused at RCPT, before Postfix takes the message', { timeout: 30_000 }, async () => {
    const transport = createTransport({ host: '127.0.0.1', port: postfix.port, secure: false, ignoreTLS: true });
    await assert.rejects(
      transport.sendMail({
        envelope: { from: 'bounces+other@bounce.test', to: ['someone@elsewhere.test'] },
        from: 'notify@sender.test',
        to: 'someone@elsewhere.test',
        subject: 'x',
        text: 'x',
      }),
      (error: Error & { responseCode?: number }) => error.responseCode === 554,
    );
    transport.close();
  });
});

describe('stopping a private Postfix', () => {
  test('ends its mail system, frees its port and removes its directory', { timeout: 120_000 }, async () => {
    const sink = await smtpServer();
    const postfix = await startPrivatePostfix({ routes: {}, defaultRoute: { host: '127.0.0.1', port: sink.port } });
    try {
      assert.ok(existsSync(postfix.directory));
      // Ready means its SMTP port answers; the master's own log line may be written a moment later.
      await waitFor(() => /daemon started/.test(postfix.log()), { timeoutMs: 10_000, intervalMs: 100, what: 'the Postfix master to log "daemon started"' });
      const stoppedAt = Date.now();
      await postfix.stop();
      console.log(`private Postfix stopped in ${Date.now() - stoppedAt} ms`);
      assert.equal(existsSync(postfix.directory), false);
      const refused = await new Promise<boolean>((resolve) => {
        const socket = connect({ host: '127.0.0.1', port: postfix.port });
        socket.once('connect', () => {
          socket.destroy();
          resolve(false);
        });
        socket.once('error', () => resolve(true));
      });
      assert.ok(refused, `port ${postfix.port} still accepts connections`);
    } finally {
      await postfix.stop();
      await sink.close();
    }
  });
});
