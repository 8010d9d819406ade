// docs/contract.md "Rate limit" against the running services with NOTIFY_PUBLIC_SEND_RATE=5/min: the draft-standard headers on
// every counted response, the 429 text and Retry-After, per-key budgets shared by two gateway processes through Redis,
// and only requests past checks 2-5 counted. (The rate's syntax: contract-rate-config.test.ts; Redis outages:
// contract-redis-outage.test.ts.)
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { assertAccepted, assertCoded, assertDetailOnly, assertEveryResponseHeaders, assertFieldErrors } from '../harness/contract-shapes.ts';
import { startGatewayReplica } from '../harness/gateway-process.ts';
import { sendVia } from '../harness/send-via.ts';
import { type HttpResult, type System, startSystem, type Tenant } from '../harness/system.ts';
import { anotherKey, validBody } from '../harness/tenants.ts';

const policy = '"send";q=5;w=60';
let system: System;
let alpha: Tenant;
let beta: Tenant;
const body = validBody('welcome');

before(async () => {
  system = await startSystem({ env: { NOTIFY_PUBLIC_SEND_RATE: '5/min' } });
  alpha = await system.createTenant('rate-alpha');
  beta = await system.createTenant('rate-beta');
  await system.putTemplate(alpha.projectId, 'welcome');
});

after(async () => {
  await system?.stop();
});

/** The `r` and `t` of a `RateLimit: "send";r=<remaining>;t=<seconds>` header, or a failed assertion. */
function rateLimit(response: HttpResult): { remaining: number; reset: number } {
  const header = response.headers.get('ratelimit') ?? '';
  const match = /^"send";r=(\d+);t=(\d+)$/.exec(header);
  assert.ok(match, `RateLimit "${header}" on ${response.status} ${response.text}`);
  return { remaining: Number(match[1]), reset: Number(match[2]) };
}

function assertCounted(response: HttpResult, remaining: number): void {
  assert.equal(response.headers.get('ratelimit-policy'), policy, `RateLimit-Policy on ${response.status} ${response.text}`);
  const limit = rateLimit(response);
  assert.equal(limit.remaining, remaining, `remaining on ${response.status} ${response.text}`);
  assert.ok(limit.reset >= 0 && limit.reset <= 60, `t=${limit.reset} within the window`);
}

function assertNotCounted(response: HttpResult): void {
  assert.equal(response.headers.get('ratelimit'), null, `RateLimit on ${response.status}`);
  assert.equal(response.headers.get('ratelimit-policy'), null, `RateLimit-Policy on ${response.status}`);
}

/** 429 `{detail}` naming N seconds, the same whole N >= 1 in Retry-After; returns N. */
function assertThrottled(response: HttpResult, windowSeconds = 60): number {
  assertDetailOnly(response, 429);
  assertEveryResponseHeaders(response);
  const match = /^Request was throttled\. Expected available in (\d+) seconds\.$/.exec(String(response.body.detail));
  assert.ok(match, `429 text: ${response.text}`);
  const seconds = Number(match[1]);
  assert.equal(response.headers.get('retry-after'), String(seconds), 'Retry-After names the same seconds as the text');
  assert.ok(seconds >= 1 && seconds <= windowSeconds, `${seconds} seconds within 1..${windowSeconds}`);
  return seconds;
}

test('every counted response carries RateLimit-Policy and RateLimit, 4xx after the rate check included, then 429 with the seconds', async () => {
  const key = await anotherKey(system, alpha, 'headers');
  const answers = [
    await system.send(key, body),
    await system.send(key, JSON.stringify(body), { 'content-type': 'text/plain' }),
    await system.send(key, { ...body, channel: 'sms' }),
    await system.send(key, '{not json'),
    await system.send(key, body),
  ];
  assertAccepted(answers[0] as HttpResult);
  assertCoded(answers[1] as HttpResult, 415, 'unsupported_media_type');
  assertFieldErrors(answers[2] as HttpResult, ['channel']);
  assertCoded(answers[3] as HttpResult, 400, 'parse_error');
  assertAccepted(answers[4] as HttpResult);
  answers.forEach((response, index) => {
    assertCounted(response, 4 - index);
  });
  const resets = answers.map((response) => rateLimit(response).reset);
  assert.ok(
    resets.every((reset, index) => index === 0 || reset <= (resets[index - 1] as number)),
    `t counts down: ${resets.join(',')}`,
  );

  const refused = await system.send(key, body);
  const seconds = assertThrottled(refused);
  assertCounted(refused, 0);
  assert.ok(seconds <= (resets[0] as number), 'the wait ends when the window that began with the first request does');
  // Still refused, whatever the body: the rate is checked before the media type and the fields.
  assertThrottled(await system.send(key, 'plain text', { 'content-type': 'text/plain' }));
  assertThrottled(await system.send(key, { ...body, to: 'not an address' }));
});

test('requests refused by checks 2-5 (400, 403 permission_denied, 403 plan_blocked) are not counted and carry no rate headers', async () => {
  const key = await anotherKey(system, alpha, 'uncounted');
  for (let attempt = 0; attempt < 6; attempt++) {
    const badHeader = await system.send({ apiKey: key.apiKey, organizationId: 0 }, body);
    assertCoded(badHeader, 400, 'invalid_header');
    assertNotCounted(badHeader);
    const foreign = await system.send({ apiKey: key.apiKey, organizationId: beta.organizationId }, body);
    assertCoded(foreign, 403, 'permission_denied');
    assertNotCounted(foreign);
  }
  // A suspended plan is check 5: before the rate, so not counted either. The plan change reaches auth-svc's cache at once.
  await system.authAdmin.call('UpdatePlan', { id: alpha.planId, suspended: true });
  try {
    for (let attempt = 0; attempt < 6; attempt++) {
      const blocked = await system.send(key, body);
      assertCoded(blocked, 403, 'plan_blocked');
      assertNotCounted(blocked);
    }
  } finally {
    await system.authAdmin.call('UpdatePlan', { id: alpha.planId, suspended: false });
  }
  // The whole budget is still there.
  for (let sent = 0; sent < 5; sent++) {
    const response = await system.send(key, body);
    assertAccepted(response);
    assertCounted(response, 4 - sent);
  }
  assertThrottled(await system.send(key, body));
  // Checks 2-5 still come first once the budget is spent: 400 and 403, not 429.
  assertCoded(await system.send({ apiKey: key.apiKey, organizationId: 0 }, body), 400, 'invalid_header');
  assertCoded(await system.send({ apiKey: key.apiKey, organizationId: beta.organizationId }, body), 403, 'permission_denied');
});

test('each API key has its own budget, even within one project', async () => {
  const first = await anotherKey(system, alpha, 'budget-1');
  const second = await anotherKey(system, alpha, 'budget-2');
  for (let sent = 0; sent < 5; sent++) assertAccepted(await system.send(first, body));
  assertThrottled(await system.send(first, body));
  const other = await system.send(second, body);
  assertAccepted(other);
  assertCounted(other, 4);
});

test('two gateway processes on one Redis share each key budget', async () => {
  const replica = await startGatewayReplica(system.stack);
  try {
    const key = await anotherKey(system, alpha, 'shared');
    const gateways = [system.gatewayUrl, replica.url];
    for (let sent = 0; sent < 5; sent++) {
      const response = await sendVia(gateways[sent % 2] as string, key, body);
      assertAccepted(response);
      assertCounted(response, 4 - sent);
    }
    for (const url of gateways) assertThrottled(await sendVia(url, key, body));
  } finally {
    await replica.stop();
  }
});

test('a per-second rate is announced with w=1 and its 429 still asks for at least 1 whole second', async () => {
  const replica = await startGatewayReplica(system.stack, { NOTIFY_PUBLIC_SEND_RATE: '2/second' });
  try {
    const key = await anotherKey(system, alpha, 'per-second');
    const sendOnce = (): Promise<HttpResult> => sendVia(replica.url, key, { ...body, channel: 'sms' }, '/api/v1/send');
    // Six at once: only two fit in a one-second window, however the window falls among them.
    const answers = await Promise.all(Array.from({ length: 6 }, () => sendOnce()));
    const throttled = answers.filter((response) => response.status === 429);
    assert.ok(throttled.length >= 2, answers.map((response) => response.status).join(','));
    for (const response of answers) {
      assert.equal(response.headers.get('ratelimit-policy'), '"send";q=2;w=1');
      assert.ok(rateLimit(response).reset <= 1);
    }
    for (const response of throttled) assert.equal(assertThrottled(response, 1), 1);
  } finally {
    await replica.stop();
  }
});
