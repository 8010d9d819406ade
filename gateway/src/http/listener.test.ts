import assert from 'node:assert/strict';
import { request } from 'node:http';
import { test } from 'node:test';
import { listen } from './listener.ts';

function get(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port, path: '/' }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
    })
      .on('error', reject)
      .end();
  });
}

test('a stop lets the request in flight finish, refuses new connections, then drains', { timeout: 5_000 }, async () => {
  let arrived!: () => void;
  const inFlight = new Promise<void>((resolve) => (arrived = resolve));
  const listener = await listen(
    (_request, response) => {
      arrived();
      setTimeout(() => response.end('done'), 300);
    },
    0,
    '127.0.0.1',
  );
  const answer = get(listener.port);
  await inFlight;
  listener.stopAccepting();
  await assert.rejects(get(listener.port), /ECONNREFUSED/);
  let drained = false;
  const draining = listener.drained().then(() => (drained = true));
  assert.equal(await answer, 200);
  await draining;
  assert.equal(drained, true);
});
