import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Counter, createRegistry } from '@notify/platform';
import type { auth } from '@notify/proto';
import { CachedAuthorizer } from './cached-authorizer.ts';

type Response = auth.AuthorizeResponse__Output;

const keyA = `nk_${'a'.repeat(16)}.${'A'.repeat(43)}`;
const keyB = `nk_${'b'.repeat(16)}.${'B'.repeat(43)}`;
const prefixA = `nk_${'a'.repeat(16)}`;

const accepted = (keyId: number): Response => ({
  keyId,
  projectId: 2,
  organizationId: 7,
  plan: null,
  sendRate: '',
  test: false,
  scopes: ['send'],
  fromDomains: [],
});

/** A stand-in for auth-svc's Authorize whose answers the test settles one by one. */
function fakeAuthSvc() {
  const calls: Array<{ apiKey: string; organizationId: number; settle: (answer: Response | Error) => void }> = [];
  const authorize = (apiKey: string, organizationId: number) =>
    new Promise<Response>((resolve, reject) => {
      calls.push({ apiKey, organizationId, settle: (answer) => (answer instanceof Error ? reject(answer) : resolve(answer)) });
    });
  return { calls, authorize };
}

function setup(options: { live?: boolean } = {}) {
  const registry = createRegistry('gateway-test');
  const lookups = new Counter({ name: 'lookups', help: 'test', labelNames: ['result'], registers: [registry] });
  const authSvc = fakeAuthSvc();
  const clock = { now: 1_000 };
  const authorizer = new CachedAuthorizer({ authorize: authSvc.authorize, ttlMs: 60_000, maxEntries: 100, lookups, now: () => clock.now });
  if (options.live ?? true) authorizer.resume();
  const counted = async () => {
    const values = (await lookups.get()).values;
    const of = (result: string) => values.find((value) => value.labels.result === result)?.value ?? 0;
    return { hit: of('hit'), miss: of('miss') };
  };
  /** Asks, answers the call it made (if any) with `answer`, and returns what the caller got. */
  const ask = async (apiKey: string, organizationId: number, answer: Response | Error = accepted(1)) => {
    const before = authSvc.calls.length;
    const result = authorizer.authorize(apiKey, organizationId);
    if (authSvc.calls.length > before) authSvc.calls.at(-1)?.settle(answer);
    return result;
  };
  return { authorizer, authSvc, counted, ask, clock };
}

test('an accepted key is answered from memory the next time: one call to auth-svc, then hits', async () => {
  const { authSvc, counted, ask } = setup();
  assert.deepEqual(await ask(keyA, 7, accepted(1)), accepted(1));
  assert.deepEqual(await ask(keyA, 7), accepted(1));
  assert.deepEqual(await ask(keyA, 7), accepted(1));
  assert.equal(authSvc.calls.length, 1);
  assert.deepEqual(await counted(), { hit: 2, miss: 1 });
  // Another organization (auth-svc would refuse it 403) and another key are their own entries.
  await assert.rejects(ask(keyA, 8, new Error('permission denied')));
  await ask(keyB, 7, accepted(2));
  assert.deepEqual(
    authSvc.calls.map((call) => [call.apiKey, call.organizationId]),
    [
      [keyA, 7],
      [keyA, 8],
      [keyB, 7],
    ],
  );
});

test('a refusal is never stored: every refused attempt reaches auth-svc', async () => {
  const { authSvc, counted, ask } = setup();
  for (let attempt = 0; attempt < 3; attempt++) await assert.rejects(ask(keyA, 7, new Error('invalid_api_key')), /invalid_api_key/);
  assert.equal(authSvc.calls.length, 3);
  assert.deepEqual(await counted(), { hit: 0, miss: 3 });
});

test('an unusable organization (0) and a key not in the issued form go straight to auth-svc, uncounted', async () => {
  const { authSvc, counted, ask } = setup();
  for (let attempt = 0; attempt < 2; attempt++) {
    await assert.rejects(ask(keyA, 0, new Error('permission denied')));
    await ask('nk_not-issued.secret', 7, accepted(3));
  }
  assert.equal(authSvc.calls.length, 4);
  assert.deepEqual(await counted(), { hit: 0, miss: 0 });
});

test('concurrent misses for the same key and organization share one call, and its refusal', async () => {
  const { authorizer, authSvc } = setup();
  const first = [authorizer.authorize(keyA, 7), authorizer.authorize(keyA, 7), authorizer.authorize(keyA, 7)];
  const other = authorizer.authorize(keyA, 9);
  assert.equal(authSvc.calls.length, 2);
  authSvc.calls[0]?.settle(accepted(1));
  assert.deepEqual(await Promise.all(first), [accepted(1), accepted(1), accepted(1)]);
  authSvc.calls[1]?.settle(new Error('permission denied'));
  await assert.rejects(other);

  const refused = [authorizer.authorize(keyB, 7), authorizer.authorize(keyB, 7)];
  authSvc.calls[2]?.settle(new Error('invalid_api_key'));
  for (const attempt of refused) await assert.rejects(attempt, /invalid_api_key/);
  // Settled: the next request asks again.
  void authorizer.authorize(keyB, 7);
  assert.equal(authSvc.calls.length, 4);
});

test('a call started before the key was revoked is not cached after it, and a request after the revocation asks anew', async () => {
  const { authorizer, authSvc, ask } = setup();
  const before = authorizer.authorize(keyA, 7);
  authorizer.invalidatePrefix(prefixA); // auth-svc announced the revocation while the call was running
  const after = authorizer.authorize(keyA, 7);
  assert.equal(authSvc.calls.length, 2, 'the request after the revocation does not join the call from before it');
  authSvc.calls[0]?.settle(accepted(1)); // answered from auth-svc's state before the revocation
  assert.deepEqual(await before, accepted(1));
  authSvc.calls[1]?.settle(new Error('invalid_api_key'));
  await assert.rejects(after);
  await assert.rejects(ask(keyA, 7, new Error('invalid_api_key')), 'the early acceptance was not stored');
  assert.equal(authSvc.calls.length, 3);
});

test('a revoked prefix drops that key for every organization; `*` (invalidateAll) drops every key', async () => {
  const { authorizer, authSvc, ask } = setup();
  await ask(keyA, 7);
  await ask(keyA, 8);
  await ask(keyB, 7);
  authorizer.invalidatePrefix(prefixA);
  await ask(keyA, 7);
  await ask(keyA, 8);
  await ask(keyB, 7);
  assert.equal(authSvc.calls.length, 5, 'both organizations of keyA asked again, keyB still cached');

  authorizer.invalidateAll();
  const pending = authorizer.authorize(keyB, 7);
  assert.equal(authSvc.calls.length, 6);
  authSvc.calls[5]?.settle(accepted(2));
  await pending;
  await ask(keyA, 7);
  assert.equal(authSvc.calls.length, 7);
});

test('while paused (invalidations cannot be received) every request asks auth-svc', async () => {
  const { authorizer, authSvc, ask } = setup({ live: false });
  await ask(keyA, 7);
  await ask(keyA, 7);
  assert.equal(authSvc.calls.length, 2, 'not live before resume');
  authorizer.resume();
  await ask(keyA, 7);
  await ask(keyA, 7);
  assert.equal(authSvc.calls.length, 3);
  authorizer.pause();
  await ask(keyA, 7);
  assert.equal(authSvc.calls.length, 4, 'what was cached is gone');
  await ask(keyA, 7);
  assert.equal(authSvc.calls.length, 5);

  // An answer asked for before a pause is not trusted after the resume that follows it.
  authorizer.resume();
  const early = authorizer.authorize(keyB, 7);
  authorizer.pause();
  authorizer.resume();
  authSvc.calls.at(-1)?.settle(accepted(2));
  await early;
  await ask(keyB, 7, accepted(2));
  assert.equal(authSvc.calls.length, 7, 'the early answer was not stored');
  await ask(keyB, 7);
  assert.equal(authSvc.calls.length, 7, 'an answer asked for while live is');
});

test('a key in use is asked again in the last quarter of its TTL, in the background: no request waits, and the new acceptance serves a full TTL', async () => {
  const { authorizer, authSvc, counted, ask, clock } = setup();
  await ask(keyA, 7, accepted(1));
  clock.now += 44_999; // 15,001 ms left of 60,000: not yet
  assert.deepEqual(await authorizer.authorize(keyA, 7), accepted(1));
  assert.equal(authSvc.calls.length, 1);

  clock.now += 1; // a quarter of the TTL left
  assert.deepEqual(await authorizer.authorize(keyA, 7), accepted(1), 'answered from memory while the refresh runs');
  assert.deepEqual(await authorizer.authorize(keyA, 7), accepted(1));
  assert.equal(authSvc.calls.length, 2, 'one refresh for the entry, however many hits');
  authSvc.calls[1]?.settle(accepted(5));
  await Promise.resolve();

  clock.now += 59_999; // past the first answer's expiry, within the refreshed one's
  assert.deepEqual(await authorizer.authorize(keyA, 7), accepted(5));
  assert.equal(authSvc.calls.length, 3, 'the refreshed entry, at its own last quarter, is refreshed in turn');
  assert.deepEqual(await counted(), { hit: 4, miss: 1 });
});

test('a refresh that fails or is refused changes nothing: the entry lives out its TTL, and the first request after it asks auth-svc', async () => {
  const { authorizer, authSvc, ask, clock } = setup();
  await ask(keyA, 7, accepted(1));
  clock.now += 50_000;
  await authorizer.authorize(keyA, 7);
  authSvc.calls[1]?.settle(new Error('unavailable'));
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(await authorizer.authorize(keyA, 7), accepted(1), 'still the entry, never extended');
  assert.equal(authSvc.calls.length, 2, 'no second refresh of the same entry: a failing auth-svc is not asked once per request');

  clock.now += 10_000; // the first answer's TTL is over
  const after = authorizer.authorize(keyA, 7);
  assert.equal(authSvc.calls.length, 3);
  authSvc.calls[2]?.settle(new Error('invalid_api_key'));
  await assert.rejects(after, /invalid_api_key/);
});

test('a refresh that was running when the key was revoked is not stored', async () => {
  const { authorizer, authSvc, ask, clock } = setup();
  await ask(keyA, 7, accepted(1));
  clock.now += 50_000;
  await authorizer.authorize(keyA, 7);
  authorizer.invalidatePrefix(prefixA);
  authSvc.calls[1]?.settle(accepted(1)); // answered from auth-svc's state before the revocation
  await new Promise((resolve) => setImmediate(resolve));
  const next = authorizer.authorize(keyA, 7);
  assert.equal(authSvc.calls.length, 3, 'the revoked key is asked again, not answered from the refresh');
  authSvc.calls[2]?.settle(new Error('invalid_api_key'));
  await assert.rejects(next, /invalid_api_key/);
});
