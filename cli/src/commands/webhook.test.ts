import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createRegistry, GrpcServer } from '@notify/platform';
import { type dispatch, dispatchProto } from '@notify/proto';
import { silentLogger } from '@notify/test/harness/logger.ts';
import { fileWriter } from '../testing/files.ts';
import { notifyctl, requestOf } from '../testing/notifyctl.ts';

const secretFile = fileWriter('secret');

describe('notifyctl webhook: command lines', () => {
  test('create takes a project, a URL and optional comma-separated event types', async () => {
    assert.deepEqual(await requestOf(['webhook', 'create', '--project', '3', '--url', 'https://example.com/hook']), {
      projectId: 3,
      url: 'https://example.com/hook',
      eventTypes: [],
    });
    assert.deepEqual(
      await requestOf(['webhook', 'create', '--project', '3', '--url', 'https://example.com/hook', '--events', 'message.sent, message.failed']),
      {
        projectId: 3,
        url: 'https://example.com/hook',
        eventTypes: ['message.sent', 'message.failed'],
      },
    );
  });

  test('the endpoint commands take --id; attempts pages and filters by message; replay takes evt_N or N', async () => {
    assert.deepEqual(await requestOf(['webhook', 'disable', '--id', '7']), { id: 7, enabled: false });
    assert.deepEqual(await requestOf(['webhook', 'enable', '--id', '7']), { id: 7, enabled: true });
    assert.deepEqual(await requestOf(['webhook', 'delete', '--id', '7']), { id: 7 });
    assert.deepEqual(await requestOf(['webhook', 'rotate-secret', '--id', '7']), { id: 7 });
    assert.deepEqual(await requestOf(['webhook', 'attempts', '--id', '7']), { id: 7, messageId: 0, limit: 50, beforeId: 0 });
    assert.deepEqual(await requestOf(['webhook', 'attempts', '--id', '7', '--message', '41', '--limit', '5', '--before', '90']), {
      id: 7,
      messageId: 41,
      limit: 5,
      beforeId: 90,
    });
    assert.deepEqual(await requestOf(['webhook', 'replay', '--event', 'evt_42']), { eventId: 42, endpointId: 0 });
    assert.deepEqual(await requestOf(['webhook', 'replay', '--event', '42', '--endpoint', '7']), { eventId: 42, endpointId: 7 });
  });

  test('listen defaults to 127.0.0.1:9000 and reads the secret from --secret-file, a whsec_ secret', async () => {
    assert.deepEqual(await requestOf(['webhook', 'listen']), { port: 9000, host: '127.0.0.1', verifying: false });
    assert.deepEqual(await requestOf(['webhook', 'listen', '--port', '0', '--secret-file', secretFile('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n')]), {
      port: 0,
      host: '127.0.0.1',
      verifying: true,
    });
  });

  test("mistakes are usage errors pointing at the command's help", async () => {
    const cases: [string[], RegExp][] = [
      [['webhook', 'create', '--project', '3'], /missing required option --url/],
      [
        ['webhook', 'create', '--project', '3', '--url', 'https://x.example/', '--events', 'message.sent,,'],
        /--events must be event types separated by commas/,
      ],
      [['webhook', 'replay', '--event', 'msg_4'], /--event must be an event id such as evt_42 \(or 42\), got 'msg_4'/],
      [['webhook', 'disable', '--id', 'x'], /--id must be a positive integer, got 'x'/],
      [['webhook', 'listen', '--secret-file', secretFile('hunter2')], /--secret-file must hold a signing secret such as whsec_/],
      [
        ['webhook', 'listen', '--secret', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
        /--secret would leave the secret in shell history and in ps; pass it with --secret-file FILE, or --secret-file - to read it from standard input/,
      ],
    ];
    for (const [argv, message] of cases) {
      const outcome = await notifyctl(argv, { ADMIN_TOKEN: 'admin-token-present' });
      assert.equal(outcome.code, 2, argv.join(' '));
      assert.match(outcome.stderr, message);
      assert.match(outcome.stderr, new RegExp(`Run 'notifyctl webhook ${argv[1]} --help' for usage`));
    }
  });

  test('help lists every webhook command with the admin token', async () => {
    const outcome = await notifyctl(['webhook', '--help']);
    assert.equal(outcome.code, 0);
    for (const command of ['create', 'list', 'disable', 'enable', 'delete', 'rotate-secret', 'attempts', 'replay', 'listen'])
      assert.match(outcome.stdout, new RegExp(`notifyctl webhook ${command}\\b`));
    assert.match(outcome.stdout, /ADMIN_TOKEN/);
    assert.match((await notifyctl(['help'])).stdout, /\bwebhook\b/);
  });

  test('asks for ADMIN_TOKEN before connecting', async () => {
    const outcome = await notifyctl(['webhook', 'list', '--project', '1']);
    assert.equal(outcome.code, 2);
    assert.match(outcome.stderr, /ADMIN_TOKEN is not set: webhooks need the admin token of dispatch-svc/);
  });
});

describe('notifyctl webhook: against a WebhookAdminService', () => {
  const token = 'admin-token-for-notifyctl-tests';
  const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
  const webhook: dispatch.Webhook__Output = {
    id: 7,
    projectId: 3,
    organizationId: 2,
    url: 'https://example.com/hook',
    eventTypes: ['message.sent', 'message.failed'],
    enabled: true,
    disabledReason: '',
    failingSince: '',
    previousSecretExpiresAt: '',
    createdAt: '2026-11-25T10:00:00.000Z',
    updatedAt: '2026-11-25T10:00:00.000Z',
  };
  let server: GrpcServer;
  let env: Record<string, string>;

  before(async () => {
    server = new GrpcServer({ logger: silentLogger(), registry: createRegistry('notifyctl-test') });
    const unused = async (): Promise<never> => {
      throw new Error('not used by these tests');
    };
    server.add(
      dispatchProto.WebhookAdminService.service,
      {
        CreateWebhook: async () => ({ webhook, secret }),
        ListWebhooks: async () => ({ webhooks: [webhook] }),
        SetWebhookEnabled: unused,
        DeleteWebhook: unused,
        RotateWebhookSecret: unused,
        ListWebhookAttempts: async () => ({
          attempts: [
            {
              id: 90,
              endpointId: 7,
              eventId: 42,
              webhookId: 'evt_42',
              eventType: 'message.sent',
              messageId: 41,
              attempt: 2,
              attemptedAt: '2026-11-25T10:05:00.000Z',
              statusCode: 503,
              latencyMs: 87,
              responseBody: 'upstream \u001b[31mdown',
              error: '',
            },
          ],
          nextBeforeId: 90,
        }),
        ReplayWebhookEvent: async (request) => ({ eventId: request.eventId, endpointIds: [7, 8] }),
      },
      [{ name: 'admin', token }],
    );
    const port = await server.listen(0, '127.0.0.1');
    env = { ADMIN_TOKEN: token, DISPATCH_SVC_ADDR: `127.0.0.1:${port}` };
  });

  after(() => server?.close(1_000));

  test('create prints the endpoint and its secret once, the warning on stderr', async () => {
    const outcome = await notifyctl(['webhook', 'create', '--project', '3', '--url', 'https://example.com/hook'], env);
    assert.equal(outcome.code, 0, outcome.stderr);
    assert.match(outcome.stdout, /^ID\s+PROJECT\s+URL/);
    assert.match(outcome.stdout, /\n7\s+3\s+https:\/\/example\.com\/hook\s+message\.sent,message\.failed/);
    assert.match(outcome.stdout, new RegExp(`\nsigning secret: ${secret}\n$`));
    assert.match(outcome.stderr, /only time the signing secret is shown/);
  });

  test('create --json prints {"webhook": {...}, "secret": "whsec_..."} alone on stdout', async () => {
    const outcome = await notifyctl(['webhook', 'create', '--project', '3', '--url', 'https://example.com/hook', '--json'], env);
    assert.equal(outcome.code, 0, outcome.stderr);
    assert.deepEqual(JSON.parse(outcome.stdout), { webhook, secret });
  });

  test('attempts shows status, latency and the response without control characters, and the next page', async () => {
    const outcome = await notifyctl(['webhook', 'attempts', '--id', '7'], env);
    assert.equal(outcome.code, 0, outcome.stderr);
    assert.match(outcome.stdout, /evt_42\s+message\.sent\s+41\s+2\s+503\s+87\s+upstream {2}\[31mdown\n/);
    assert.match(outcome.stderr, /more attempts: add --before 90/);
  });

  test('replay names the endpoints the event goes out to again', async () => {
    const outcome = await notifyctl(['webhook', 'replay', '--event', 'evt_42'], env);
    assert.equal(outcome.code, 0, outcome.stderr);
    assert.equal(outcome.stdout, 'evt_42 goes out again to endpoints 7, 8\n');
  });
});
