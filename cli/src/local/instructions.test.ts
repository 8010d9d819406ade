import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { curlCommand, demoSendRequest, readyMessage, shellQuote } from './instructions.ts';
import type { StackEnvironment } from './stack.ts';

test('the demo request carries every header the contract requires and the welcome body', () => {
  const request = demoSendRequest('http://127.0.0.1:8080', { apiKey: 'nk_abc.s3cret', organizationId: 7 }, '5b0c4b52-3c1e-4a39-9f43-4a4f0c8d2f11');
  assert.equal(request.url, 'http://127.0.0.1:8080/api/v1/send/');
  assert.deepEqual(request.headers, {
    Authorization: 'Api-Key nk_abc.s3cret',
    'X-Organization-ID': '7',
    'Content-Type': 'application/json',
    'Idempotency-Key': '5b0c4b52-3c1e-4a39-9f43-4a4f0c8d2f11',
  });
  assert.deepEqual(JSON.parse(request.body), { template: 'welcome', to: 'ada@example.com', channel: 'email', data: { name: 'Ada' } });
});

test('a fresh Idempotency-Key is a UUID', () => {
  const key = demoSendRequest('http://x', { apiKey: 'k', organizationId: 1 }).headers['Idempotency-Key'];
  assert.match(key ?? '', /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
});

test('shell quoting survives any value, single quotes included', () => {
  for (const value of ["it's", 'a b', '$(rm -rf /)', '{"a":"b"}', 'plain-value_1.2']) {
    assert.equal(execFileSync('bash', ['-c', `printf %s ${shellQuote(value)}`], { encoding: 'utf8' }), value);
  }
});

test('the printed curl command is one shell command with each header and the body as separate words', () => {
  const request = demoSendRequest('http://127.0.0.1:8080', { apiKey: "odd'key", organizationId: 3 }, '00000000-0000-4000-8000-000000000000');
  const command = curlCommand(request).replace(/^curl /, "printf '%s\\n' ");
  const words = execFileSync('bash', ['-c', command], { encoding: 'utf8' }).trimEnd().split('\n');
  assert.deepEqual(words, [
    '-sS',
    '-i',
    '-X',
    'POST',
    'http://127.0.0.1:8080/api/v1/send/',
    '-H',
    "Authorization: Api-Key odd'key",
    '-H',
    'X-Organization-ID: 3',
    '-H',
    'Content-Type: application/json',
    '-H',
    'Idempotency-Key: 00000000-0000-4000-8000-000000000000',
    '--data',
    request.body,
  ]);
});

test('the ready message shows how to create a webhook endpoint for the demo project and listen to it', () => {
  const env: StackEnvironment = {
    GATEWAY_URL: 'http://127.0.0.1:8080',
    AUTH_SVC_ADDR: '127.0.0.1:50051',
    DISPATCH_SVC_ADDR: '127.0.0.1:50052',
    ADMIN_TOKEN: 'admin',
    GATEWAY_TOKEN: 'gateway',
    MAILER_TOKEN: 'mailer',
    BOUNCE_TOKEN: 'bounce',
    GRPC_TLS_CA_FILE: '',
    DATABASE_URL: 'postgres://127.0.0.1/notify',
    NATS_URL: 'nats://127.0.0.1:4222',
    NOTIFY_NATS_PREFIX: '',
    REDIS_URL: 'redis://127.0.0.1:6379',
    REDIS_KEY_PREFIX: 'notify:',
    SMTP_URL: 'smtp://127.0.0.1:2525',
    NOTIFY_DATA_KEY: `${'a'.repeat(43)}=`,
    BOUNCE_DOMAIN: 'bounces.notify.localhost',
    BOUNCE_SMTP_PORT: '2526',
  };
  const message = readyMessage({ request: demoSendRequest(env.GATEWAY_URL, { apiKey: 'k', organizationId: 1 }), env, mailDir: '.data/mail', projectId: 4 });
  assert.match(message, /npm run notifyctl -- webhook create --project 4 --url http:\/\/127\.0\.0\.1:9000\//);
  assert.match(message, /npm run notifyctl -- webhook listen --port 9000 --secret-file -/);
});
