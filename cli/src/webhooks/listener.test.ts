// `notifyctl webhook listen`'s receiver: requests signed as the contract says verify (with either of two signatures,
// as after a rotation), anything else is printed as invalid and answered 401.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, before, test } from 'node:test';
import { type Listener, listen } from './listener.ts';
import { secretKey, verifySignature } from './signature.ts';

const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const otherSecret = 'whsec_c2VjcmV0LXRoYXQtd2FzLXJvdGF0ZWQtYXdheS0xMjM0NTY3OA==';
const key = secretKey(secret)!;
const now = new Date('2026-11-25T10:00:00Z');
const nowSeconds = now.getTime() / 1000;

/** `v1,<base64>` as the sender signs: HMAC-SHA256 of "{id}.{timestamp}.{body}" under the secret's key. */
const sign = (signingSecret: string, id: string, timestamp: number, body: string): string =>
  `v1,${createHmac('sha256', secretKey(signingSecret)!).update(`${id}.${timestamp}.${body}`).digest('base64')}`;

const body = JSON.stringify({ type: 'message.sent', timestamp: now.toISOString(), data: { message_id: 41, status: 'sent', sequence: 3 } });

let output = '';
let listener: Listener;
let jsonOutput = '';
let jsonListener: Listener;

before(async () => {
  listener = await listen({
    host: '127.0.0.1',
    port: 0,
    key,
    io: {
      stdout: (text) => {
        output += text;
      },
      stderr: () => undefined,
    },
    json: false,
    now: () => now,
  });
  jsonListener = await listen({
    host: '127.0.0.1',
    port: 0,
    key: undefined,
    io: {
      stdout: (text) => {
        jsonOutput += text;
      },
      stderr: () => undefined,
    },
    json: true,
    now: () => now,
  });
});

after(async () => {
  await listener?.close();
  await jsonListener?.close();
});

const post = (port: number, headers: Record<string, string>, payload = body) =>
  fetch(`http://127.0.0.1:${port}/`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: payload });

test('a signature made with the secret verifies, also beside one made with another secret', () => {
  const request = (signature: string) => ({ id: 'evt_7', timestamp: String(nowSeconds), signature, body: Buffer.from(body) });
  assert.deepEqual(verifySignature(key, request(sign(secret, 'evt_7', nowSeconds, body)), nowSeconds), { ok: true });
  assert.deepEqual(verifySignature(key, request(`${sign(otherSecret, 'evt_7', nowSeconds, body)} ${sign(secret, 'evt_7', nowSeconds, body)}`), nowSeconds), {
    ok: true,
  });
  assert.deepEqual(verifySignature(key, request(sign(otherSecret, 'evt_7', nowSeconds, body)), nowSeconds), {
    ok: false,
    problem: 'no v1 signature matches the secret',
  });
  assert.deepEqual(verifySignature(key, request(sign(secret, 'evt_8', nowSeconds, body)), nowSeconds), {
    ok: false,
    problem: 'no v1 signature matches the secret',
  });
});

test('the Standard Webhooks reference test vector verifies', () => {
  // From the specification's libraries: msg_p5jXN8AQM9LWM0D4loKWxJek at 1614265330.
  const request = {
    id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
    timestamp: '1614265330',
    signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
    body: Buffer.from('{"test": 2432232314}'),
  };
  assert.deepEqual(verifySignature(key, request, 1614265330), { ok: true });
});

test('an old timestamp or a missing header does not verify', () => {
  const old = nowSeconds - 301;
  assert.deepEqual(
    verifySignature(key, { id: 'evt_7', timestamp: String(old), signature: sign(secret, 'evt_7', old, body), body: Buffer.from(body) }, nowSeconds),
    {
      ok: false,
      problem: 'webhook-timestamp is more than 5 minutes away',
    },
  );
  assert.equal(verifySignature(key, { id: 'evt_7', timestamp: undefined, signature: 'v1,x', body: Buffer.from(body) }, nowSeconds).ok, false);
});

test('only whsec_ secrets with a base64 key are accepted', () => {
  assert.equal(secretKey(secret)?.length, 24);
  assert.equal(secretKey('MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'), undefined);
  assert.equal(secretKey('whsec_'), undefined);
  assert.equal(secretKey('whsec_not base64!'), undefined);
});

test('the receiver prints each event with its verdict and answers 204, or 401 when it does not verify', async () => {
  const good = await post(listener.port, {
    'webhook-id': 'evt_7',
    'webhook-timestamp': String(nowSeconds),
    'webhook-signature': sign(secret, 'evt_7', nowSeconds, body),
  });
  assert.equal(good.status, 204);
  const bad = await post(listener.port, {
    'webhook-id': 'evt_8',
    'webhook-timestamp': String(nowSeconds),
    'webhook-signature': sign(otherSecret, 'evt_8', nowSeconds, body),
  });
  assert.equal(bad.status, 401);
  assert.equal((await fetch(`http://127.0.0.1:${listener.port}/`)).status, 405);
  assert.deepEqual(output.trimEnd().split('\n'), [
    '2026-11-25T10:00:00.000Z  evt_7  message.sent message 41 sent (sequence 3)  signature verified',
    '2026-11-25T10:00:00.000Z  evt_8  message.sent message 41 sent (sequence 3)  signature INVALID: no v1 signature matches the secret',
  ]);
});

test('without a secret, --json prints one JSON line per request, unverified', async () => {
  const response = await post(jsonListener.port, { 'webhook-id': 'evt_9', 'webhook-timestamp': String(nowSeconds), 'webhook-signature': 'v1,AAAA' });
  assert.equal(response.status, 204);
  assert.deepEqual(JSON.parse(jsonOutput), { receivedAt: now.toISOString(), webhookId: 'evt_9', verified: null, problem: null, event: JSON.parse(body) });
});
