import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { createLogger } from './logger.ts';

function capture(): { lines: string[]; stream: Writable } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { lines, stream };
}

/** The one line `log` writes, parsed. */
function logged(log: (logger: ReturnType<typeof createLogger>) => void): { text: string; line: Record<string, unknown> } {
  const { lines, stream } = capture();
  log(createLogger('test', 'info', stream));
  assert.equal(lines.length, 1);
  const text = lines[0] ?? '';
  return { text, line: JSON.parse(text) as Record<string, unknown> };
}

test('keys, tokens and authorization headers never reach the log', () => {
  const { text, line } = logged((logger) =>
    logger.info(
      { apiKey: 'nk_live.abc', req: { headers: { authorization: 'Api-Key nk_live.abc', cookie: 'session=s3ss' } }, call: { token: 't0k3n' } },
      'hello',
    ),
  );
  assert.doesNotMatch(text, /abc|t0k3n|s3ss/);
  assert.match(text, /\[redacted\]/);
  assert.equal(line.service, 'test');
  assert.equal(line.level, 'info');
});

test('every secret key is censored at the top and one and two levels down, in objects, arrays and errors alike; what is beside it stays', () => {
  const relay = { host: 'smtp.example.com', smtpUrl: 'smtp://user:pw-relay@smtp.example.com' };
  const error = Object.assign(new Error('connect refused'), { config: { password: 'pw-error', host: 'db' } });
  const { text, line } = logged((logger) =>
    logger.error(
      {
        password: 'pw-top',
        settings: { databaseUrl: 'postgres://u:pw-db@db/notify', redisUrl: 'redis://:pw-redis@r', port: 5432 },
        call: { metadata: { authorization: 'Bearer pw-meta', 'x-request-id': 'r-1' } },
        relays: [relay],
        err: error,
      },
      'failed',
    ),
  );
  assert.doesNotMatch(text, /pw-/);
  assert.equal(line.password, '[redacted]');
  assert.deepEqual(line.settings, { databaseUrl: '[redacted]', redisUrl: '[redacted]', port: 5432 });
  assert.deepEqual(line.call, { metadata: { authorization: '[redacted]', 'x-request-id': 'r-1' } });
  assert.deepEqual(line.relays, [{ host: 'smtp.example.com', smtpUrl: '[redacted]' }]);
  // Still serialized as an error: its type, message and stack, with the secret below it censored.
  const err = line.err as Record<string, unknown>;
  assert.equal(err.type, 'Error');
  assert.equal(err.message, 'connect refused');
  assert.match(String(err.stack), /connect refused/);
  assert.deepEqual(err.config, { password: '[redacted]', host: 'db' });
  // The caller's objects are left as they were.
  assert.equal(relay.smtpUrl, 'smtp://user:pw-relay@smtp.example.com');
  assert.equal(error.config.password, 'pw-error');
});

test('a frozen object is censored through a copy, and the line is still written', () => {
  const settings = Object.freeze({ databaseUrl: 'postgres://u:pw-frozen@db/notify', pool: Object.freeze({ password: 'pw-frozen-2', size: 10 }) });
  const { text, line } = logged((logger) => logger.warn({ settings }, 'starting'));
  assert.doesNotMatch(text, /pw-frozen/);
  assert.deepEqual(line.settings, { databaseUrl: '[redacted]', pool: { password: '[redacted]', size: 10 } });
  assert.equal(settings.databaseUrl, 'postgres://u:pw-frozen@db/notify');
});

test('a line with no secret is written as given, buffers and dates included', () => {
  const { line } = logged((logger) =>
    logger.info({ method: 'POST', status: 202, nested: { at: new Date('2026-12-01T00:00:00Z'), bytes: Buffer.from('ok'), list: [1, { a: 2 }] } }, 'request'),
  );
  assert.deepEqual(line.nested, { at: '2026-12-01T00:00:00.000Z', bytes: { type: 'Buffer', data: [111, 107] }, list: [1, { a: 2 }] });
  assert.equal(line.status, 202);
});

test("a child logger's own keys are censored at the top", () => {
  const { text } = logged((logger) => logger.child({ token: 'child-t0k3n', component: 'relay' }).info('hello'));
  assert.doesNotMatch(text, /child-t0k3n/);
  assert.match(text, /"component":"relay"/);
});
