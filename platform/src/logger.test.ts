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

test('keys, tokens and authorization headers never reach the log', () => {
  const { lines, stream } = capture();
  const logger = createLogger('test', 'info', stream);
  logger.info({ apiKey: 'nk_live.abc', req: { headers: { authorization: 'Api-Key nk_live.abc' } }, call: { token: 't0k3n' } }, 'hello');
  const line = lines.join('');
  assert.doesNotMatch(line, /abc|t0k3n/);
  assert.match(line, /\[redacted\]/);
  const parsed = JSON.parse(line) as Record<string, unknown>;
  assert.equal(parsed['service'], 'test');
  assert.equal(parsed['level'], 'info');
});
