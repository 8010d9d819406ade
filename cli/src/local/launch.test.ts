// The launcher end to end on private resources: its own database, NATS prefix, Redis prefix, data folder, SMTP port and
// service ports, all removed afterwards. Proves startStack (start order, readiness, kill, restart, ordered stop),
// the idempotent demo seed, notifyctl against real services, and the curl `npm start` prints.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { deletePrefixedKeys, dropPrefixedStreams } from '@notify/test/harness/resources.ts';
import { waitFor } from '@notify/test/harness/wait.ts';
import { run as notifyctl } from '../cli.ts';
import { dropDatabase } from './database.ts';
import { curlCommand, demoSendRequest } from './instructions.ts';
import { type Launched, launch } from './launch.ts';
import { seedDemo } from './seed.ts';
import type { ServiceName } from './stack.ts';

const runId = Math.random().toString(16).slice(2, 10);
const adminUrl = 'postgres://postgres@127.0.0.1:5432/postgres';
const databaseName = `notify_t_${runId}`;
const natsPrefix = `t${runId}_`;
const redisPrefix = `notify-t-${runId}:`;
const dataDir = mkdtempSync(join(tmpdir(), `notify-launch-${runId}-`));
chmodSync(dataDir, 0o755);
const quiet = { info: () => undefined, warn: () => undefined };

async function cleanup(): Promise<void> {
  await dropDatabase(adminUrl, databaseName);
  await dropPrefixedStreams('nats://127.0.0.1:4222', natsPrefix);
  await deletePrefixedKeys('redis://127.0.0.1:6379', redisPrefix);
  rmSync(dataDir, { recursive: true, force: true });
}

async function ctl(launched: Launched, argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await notifyctl(
    argv,
    {
      stdout: (text) => {
        stdout += text;
      },
      stderr: (text) => {
        stderr += text;
      },
    },
    launched.stack.env,
  );
  return { code, stdout, stderr };
}

describe('local launcher on private resources', { timeout: 90_000 }, () => {
  let launched: Launched;

  before(async () => {
    launched = await launch({ dataDir, output: null, databaseName, natsPrefix, redisPrefix, smtpPort: 0, mailerReplicas: 1, logLevel: 'info' });
  });

  after(async () => {
    await launched?.stop();
    await cleanup();
  });

  // On failure, the services' own words are what explain it.
  const explain = (error: unknown): never => {
    throw new Error(`${error instanceof Error ? error.message : String(error)}\n--- service output ---\n${launched?.stack.logs.text().slice(-20_000)}`);
  };

  test('the demo tenant is created through the admin APIs and its key kept in the data folder', () => {
    const { tenant } = launched;
    assert.ok(tenant.planId > 0 && tenant.organizationId > 0 && tenant.projectId > 0 && tenant.apiKeyId > 0);
    assert.equal(tenant.template, 'welcome');
    assert.deepEqual(
      tenant.created.map((what) => what.split(' ')[0]),
      ['plan', 'organization', 'project', 'template', 'API'],
    );
    assert.equal(readFileSync(join(dataDir, 'demo-api-key'), 'utf8'), `${tenant.apiKey}\n`);
    const secrets = JSON.parse(readFileSync(join(dataDir, 'dev-secrets.json'), 'utf8')) as Record<string, string>;
    assert.deepEqual(secrets, {
      gatewayToken: launched.stack.env.GATEWAY_TOKEN,
      mailerToken: launched.stack.env.MAILER_TOKEN,
      bounceToken: launched.stack.env.BOUNCE_TOKEN,
      adminToken: launched.stack.env.ADMIN_TOKEN,
      dataKey: launched.stack.env.NOTIFY_DATA_KEY,
    });
  });

  test('seeding again creates nothing and reuses the kept key', async () => {
    const again = await seedDemo({
      authAddress: launched.stack.env.AUTH_SVC_ADDR,
      dispatchAddress: launched.stack.env.DISPATCH_SVC_ADDR,
      adminToken: launched.stack.env.ADMIN_TOKEN,
      keyFile: join(dataDir, 'demo-api-key'),
      logger: quiet,
    }).catch(explain);
    assert.deepEqual(again, { ...launched.tenant, created: [] });
  });

  test('notifyctl reads the demo tenant back from the running services', async () => {
    const plans = await ctl(launched, ['plan', 'list', '--json']);
    assert.equal(plans.code, 0, plans.stderr);
    const plan = (JSON.parse(plans.stdout) as { plans: { id: number; name: string; monthlyQuota: number; suspended: boolean }[] }).plans.find(
      (p) => p.name === 'demo',
    );
    assert.deepEqual({ ...plan, createdAt: undefined }, { id: launched.tenant.planId, name: 'demo', monthlyQuota: 0, suspended: false, createdAt: undefined });

    const templates = await ctl(launched, ['template', 'list', '--project', String(launched.tenant.projectId)]);
    assert.equal(templates.code, 0, templates.stderr);
    assert.match(templates.stdout, /^ID\s+PROJECT\s+SLUG\s+VERSION\s+ACTIVE\s+UNSUBSCRIBE\s+SUBJECT\s+SCHEMA\s+UPDATED\n/);
    assert.match(templates.stdout, /\bwelcome\s+1\s+yes\s+no\s+Welcome, \{\{ name \}\}!\s+yes\b/);

    const keys = await ctl(launched, ['key', 'list', '--project', String(launched.tenant.projectId)]);
    assert.equal(keys.code, 0, keys.stderr);
    assert.ok(keys.stdout.includes(launched.tenant.apiKey.split('.')[0] ?? '?'), keys.stdout);
    assert.ok(!keys.stdout.includes(launched.tenant.apiKey), 'the secret part of a key is never listed');

    const refused = await ctl(launched, ['org', 'create', '--name', 'Demo', '--plan', String(launched.tenant.planId)]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /^notifyctl: [a-z_]+: .+\n$/);
  });

  test('the demo key holds every scope: it manages the project over the API too', async () => {
    const listed = await fetch(`${launched.stack.env.GATEWAY_URL}/api/v1/templates/`, {
      headers: { authorization: `Api-Key ${launched.tenant.apiKey}`, 'x-organization-id': String(launched.tenant.organizationId) },
    });
    assert.equal(listed.status, 200);
    const body = (await listed.json()) as { results: { slug: string }[] };
    assert.deepEqual(
      body.results.map((template) => template.slug),
      ['welcome'],
    );
  });

  test('the printed curl is accepted and the mail reaches the SMTP sink', async () => {
    const request = demoSendRequest(launched.stack.env.GATEWAY_URL, launched.tenant);
    const { stdout } = await promisify(execFile)('bash', ['-c', curlCommand(request)]);
    assert.match(stdout, /^HTTP\/1\.1 202 /, stdout);
    const body = JSON.parse(stdout.slice(stdout.indexOf('\r\n\r\n') + 4)) as Record<string, unknown>;
    assert.equal(body.status, 'queued');
    assert.equal(body.idempotent_replay, false);
    await waitFor(() => launched.sink.received() >= 1, { timeoutMs: 20_000, what: 'the demo mail in the sink' }).catch(explain);
    const mails = readdirSync(launched.mailDir).filter((name) => name.endsWith('.eml'));
    assert.equal(mails.length, 1);
    assert.match(readFileSync(join(launched.mailDir, mails[0] ?? ''), 'utf8'), /^Subject: Welcome, Ada!$/m);

    const listed = await ctl(launched, ['messages', 'list', '--project', String(launched.tenant.projectId), '--json']);
    assert.equal(listed.code, 0, listed.stderr);
    const messages = (JSON.parse(listed.stdout) as { messages: { id: number; to: string }[] }).messages;
    assert.deepEqual(
      messages.map((message) => [message.id, message.to]),
      [[body.message_id, 'ada@example.com']],
    );
  });

  test('a revoked kept key is replaced on the next seed', async () => {
    const revoked = await ctl(launched, ['key', 'revoke', '--id', String(launched.tenant.apiKeyId)]);
    assert.equal(revoked.code, 0, revoked.stderr);
    const again = await seedDemo({
      authAddress: launched.stack.env.AUTH_SVC_ADDR,
      dispatchAddress: launched.stack.env.DISPATCH_SVC_ADDR,
      adminToken: launched.stack.env.ADMIN_TOKEN,
      keyFile: join(dataDir, 'demo-api-key'),
      logger: quiet,
    });
    assert.equal(again.created.length, 1);
    assert.match(again.created[0] ?? '', /^API key /);
    assert.notEqual(again.apiKey, launched.tenant.apiKey);
    assert.equal(readFileSync(join(dataDir, 'demo-api-key'), 'utf8'), `${again.apiKey}\n`);
  });

  test("the bounce receiver greets on its SMTP port with the stack's data key and bounce domain", async () => {
    const { env } = launched.stack;
    assert.equal(Buffer.from(env.NOTIFY_DATA_KEY, 'base64').length, 32);
    assert.equal(launched.stack.serviceEnv('bounce-svc').NOTIFY_DATA_KEY, env.NOTIFY_DATA_KEY);
    assert.equal(launched.stack.serviceEnv('mailer-svc').BOUNCE_DOMAIN, env.BOUNCE_DOMAIN);
    const greeting = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(env.BOUNCE_SMTP_PORT), '127.0.0.1');
      socket.once('data', (data) => {
        socket.end('QUIT\r\n');
        resolve(data.toString());
      });
      socket.once('error', reject);
    });
    assert.match(greeting, /^220 .*bounce-svc/);
  });

  test('a killed service is seen to exit and comes back on restart', async () => {
    const { stack } = launched;
    const before = stack.pid('mailer-svc');
    stack.kill('mailer-svc', 'SIGKILL');
    assert.deepEqual(await stack.exited('mailer-svc'), { code: null, signal: 'SIGKILL' });
    assert.equal(stack.pid('mailer-svc'), undefined);
    assert.match(stack.logs.text('mailer-svc-0'), /\[killed by SIGKILL\]\n$/);
    await stack.restart('mailer-svc').catch(explain);
    assert.ok(stack.pid('mailer-svc') !== undefined && stack.pid('mailer-svc') !== before);
  });

  test('stopping ends every service cleanly, gateway first and auth-svc last, and a restart under way does not start again', async () => {
    const { stack } = launched;
    const order: ServiceName[] = [];
    const services: ServiceName[] = ['auth-svc', 'dispatch-svc', 'mailer-svc', 'webhook-svc', 'bounce-svc', 'gateway'];
    for (const service of services) void stack.exited(service).then(() => order.push(service));
    // A restart asked while the stack stops (as an interrupted bench may): it must not start the service again.
    const restarting = stack.exited('gateway').then(() =>
      stack.restart('webhook-svc').then(
        () => 'restarted',
        (error: Error) => error.message,
      ),
    );
    await launched.stop();
    assert.equal(await restarting, 'webhook-svc not restarted: the stack is stopping');
    for (const service of services) assert.deepEqual(await stack.exited(service), { code: 0, signal: null }, `${service} exit`);
    assert.equal(order[0], 'gateway');
    // The mailers, the webhook sender and the bounce receiver stop together, before the services they depend on.
    assert.deepEqual(order.slice(1, 4).sort(), ['bounce-svc', 'mailer-svc', 'webhook-svc']);
    assert.ok(services.every((service) => stack.pid(service) === undefined));
  });
});
