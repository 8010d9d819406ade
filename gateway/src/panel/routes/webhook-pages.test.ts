// The webhook pages through the panel's real gRPC clients and its sessions on a real Redis, against stand-ins of
// PanelAuthService and PanelService: the list, adding an endpoint (its secret shown once), disabling, the attempts
// log and replay, each within the user's organization, for operators only where it changes something, behind CSRF.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { type GrpcServer, UserError } from '@notify/platform';
import { type auth, type dispatch, dispatchProto } from '@notify/proto';
import { panelClient, servePanelAccess } from '../../testing/panel-client.ts';
import { gatewayCaller, type ServedApp, serveApp } from '../../testing/serve-app.ts';
import { standIn, standInServer } from '../../testing/stand-in.ts';

const createdAt = '2026-01-31T09:00:00.000Z';
const organization = { id: 3, name: 'alpha', planId: 1, createdAt, messageRetention: '' };
const projects = [{ id: 21, organizationId: 3, name: 'web', createdAt }];
const operator: auth.PanelUser__Output = {
  id: 5,
  organizationId: 3,
  email: 'op@alpha.example',
  role: 'operator',
  createdAt,
  passwordChangedAt: createdAt,
  disabledAt: '',
};
const viewer: auth.PanelUser__Output = { ...operator, id: 6, email: 'viewer@alpha.example', role: 'viewer' };
const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

const endpoint: dispatch.Webhook__Output = {
  id: 7,
  projectId: 21,
  organizationId: 3,
  url: 'https://hooks.alpha.example/notify',
  eventTypes: ['message.sent', 'message.failed'],
  enabled: true,
  disabledReason: '',
  failingSince: '',
  previousSecretExpiresAt: '',
  createdAt,
  updatedAt: createdAt,
};

const attempt: dispatch.WebhookAttempt__Output = {
  id: 90,
  endpointId: 7,
  eventId: 42,
  webhookId: 'evt_42',
  eventType: 'message.sent',
  messageId: 41,
  attempt: 2,
  attemptedAt: '2026-01-31T09:05:00.000Z',
  statusCode: 503,
  latencyMs: 87,
  responseBody: '<h1>down</h1>',
  error: '',
};

/** What the stand-in PanelService was asked, to check the organization travels with every call. */
const calls: Array<{ method: string; request: Record<string, unknown> }> = [];

function inScope(request: { projectId: number; organizationId: number }): void {
  if (request.projectId !== 21 || request.organizationId !== 3) throw new UserError(status.NOT_FOUND, 'webhook_not_found', 'no such webhook');
}

let services: GrpcServer;
let gateway: ServedApp;
const { signIn, get, post } = panelClient(() => gateway);

before(async () => {
  services = standInServer();
  servePanelAccess(services, { users: [operator, viewer], organization, projects });
  services.add(
    dispatchProto.PanelService.service,
    standIn(dispatchProto.PanelService.service, {
      async ListProjectWebhooks(request) {
        inScope(request);
        return { webhooks: [endpoint] };
      },
      async CreateProjectWebhook(request) {
        calls.push({ method: 'CreateProjectWebhook', request: { ...request } });
        inScope(request);
        if (request.url === 'https://one-too-many.example/')
          throw new UserError(status.FAILED_PRECONDITION, 'webhook_limit_reached', 'project 21 has 20 webhook endpoints');
        if (!request.url.startsWith('https://')) {
          throw new UserError(status.INVALID_ARGUMENT, 'invalid_argument', 'invalid request', {
            fields: ['url: must use https (plain http is allowed only with NOTIFY_WEBHOOK_ALLOW_PRIVATE=true)'],
          });
        }
        return { webhook: { ...endpoint, id: 8, url: request.url }, secret };
      },
      async SetProjectWebhookEnabled(request) {
        calls.push({ method: 'SetProjectWebhookEnabled', request: { ...request } });
        inScope(request);
        if (request.webhookId !== 7) throw new UserError(status.NOT_FOUND, 'webhook_not_found', 'no such webhook');
        return { ...endpoint, enabled: request.enabled, disabledReason: request.enabled ? '' : 'operator' };
      },
      async ListProjectWebhookAttempts(request) {
        inScope(request);
        if (request.webhookId !== 7) throw new UserError(status.NOT_FOUND, 'webhook_not_found', 'no such webhook');
        return { attempts: [attempt, { ...attempt, id: 89, attempt: 1, statusCode: 0, responseBody: '', error: 'timed out after 10 s' }], nextBeforeId: 0 };
      },
      async ReplayProjectWebhookEvent(request) {
        calls.push({ method: 'ReplayProjectWebhookEvent', request: { ...request } });
        inScope(request);
        if (request.eventId === 43) throw new UserError(status.FAILED_PRECONDITION, 'webhook_event_undelivered', 'nothing to repeat');
        return { eventId: request.eventId, endpointIds: [request.webhookId] };
      },
    }),
    [gatewayCaller],
  );
  const address = `127.0.0.1:${await services.listen(0, '127.0.0.1')}`;
  gateway = await serveApp({ authAddress: address, dispatchAddress: address, panelEnv: {} });
});

after(async () => {
  await gateway?.close();
  await services?.close(1_000);
});

const base = '/panel/projects/21/webhooks';

describe('the webhooks page', () => {
  test('lists the endpoints, with the add form and a disable button for operators only', async () => {
    const page = await (await get(base, await signIn(operator))).text();
    assert.match(page, /<a href="\/panel\/projects\/21\/webhooks\/7">7<\/a>/);
    assert.match(page, /<code>https:\/\/hooks\.alpha\.example\/notify<\/code>/);
    assert.match(page, /<code>message\.sent<\/code>, <code>message\.failed<\/code>/);
    assert.match(page, /action="\/panel\/projects\/21\/webhooks\/7\/enabled"/);
    assert.match(page, /action="\/panel\/projects\/21\/webhooks" class="webhook-add"/);
    assert.match(page, /aria-current="page">Webhooks</);
    const seen = await (await get(base, await signIn(viewer))).text();
    assert.match(seen, /hooks\.alpha\.example/);
    assert.doesNotMatch(seen, /webhook-add|\/enabled"/);
  });

  test('adding an endpoint answers with its secret once; a later visit does not show it', async () => {
    const who = await signIn(operator);
    const response = await post(base, who, [
      ['_csrf', who.csrf],
      ['url', ' https://new.alpha.example/hook '],
      ['events', 'message.failed'],
      ['events', 'message.sent'],
    ]);
    const page = await response.text();
    assert.equal(response.status, 200, page);
    assert.match(page, new RegExp(`readonly value="${secret.replaceAll('+', '\\+').replaceAll('/', '\\/')}"`));
    assert.match(page, /Endpoint 8 was added/);
    assert.deepEqual(calls.find((call) => call.method === 'CreateProjectWebhook')?.request, {
      projectId: 21,
      organizationId: 3,
      url: 'https://new.alpha.example/hook',
      eventTypes: ['message.failed', 'message.sent'],
    });
    assert.doesNotMatch(await (await get(base, who)).text(), /whsec_/);
  });

  test("a refused URL comes back as the form with the fault in the user's language", async () => {
    const who = await signIn(operator);
    const response = await post(
      base,
      who,
      [
        ['_csrf', who.csrf],
        ['url', 'http://plain.example/'],
        ['events', 'message.sent'],
      ],
      { 'accept-language': 'es' },
    );
    const page = await response.text();
    assert.equal(response.status, 400);
    assert.match(page, /Escriba una URL https:\/\/ absoluta/);
    assert.match(page, /value="http:\/\/plain\.example\/" aria-describedby="url-hint url-fault" aria-invalid="true"/);
    assert.match(page, /value="message\.sent" checked/);
  });

  test("an endpoint past the project's limit comes back as the form, saying so", async () => {
    const who = await signIn(operator);
    const response = await post(base, who, [
      ['_csrf', who.csrf],
      ['url', 'https://one-too-many.example/'],
      ['events', 'message.sent'],
    ]);
    const page = await response.text();
    assert.equal(response.status, 409);
    assert.match(page, /This project has as many endpoints as it may have/);
    assert.match(page, /value="https:\/\/one-too-many\.example\/"/);
  });

  test("a viewer may not add, and a post without the session's token is refused", async () => {
    const seer = await signIn(viewer);
    assert.equal(
      (
        await post(base, seer, [
          ['_csrf', seer.csrf],
          ['url', 'https://x.example/'],
        ])
      ).status,
      403,
    );
    const who = await signIn(operator);
    assert.equal(
      (
        await post(base, who, [
          ['_csrf', 'x'.repeat(43)],
          ['url', 'https://x.example/'],
        ])
      ).status,
      403,
    );
    assert.equal(
      (
        await post(
          base,
          who,
          [
            ['_csrf', who.csrf],
            ['url', 'https://x.example/'],
          ],
          { 'sec-fetch-site': 'cross-site' },
        )
      ).status,
      403,
    );
    assert.equal(
      (
        await post(`${base}/7/enabled`, seer, [
          ['_csrf', seer.csrf],
          ['enabled', 'false'],
        ])
      ).status,
      403,
    );
  });

  test('disabling redirects to the list with a notice', async () => {
    const who = await signIn(operator);
    const response = await post(`${base}/7/enabled`, who, [
      ['_csrf', who.csrf],
      ['enabled', 'false'],
    ]);
    assert.equal(response.status, 303);
    assert.equal(response.headers.get('location'), `${base}?changed=disabled&webhook=7`);
    assert.deepEqual(calls.findLast((call) => call.method === 'SetProjectWebhookEnabled')?.request, {
      projectId: 21,
      organizationId: 3,
      webhookId: 7,
      enabled: false,
    });
    assert.match(await (await get(`${base}?changed=disabled&webhook=7`, who)).text(), /Endpoint 7 was disabled\./);
    assert.equal(
      (
        await post(`${base}/99/enabled`, who, [
          ['_csrf', who.csrf],
          ['enabled', 'true'],
        ])
      ).status,
      404,
    );
  });
});

describe('the attempts log', () => {
  test('shows each attempt with its status code, latency and the start of the response (as text), or its error', async () => {
    const page = await (await get(`${base}/7`, await signIn(operator))).text();
    assert.match(page, /<code>evt_42<\/code>/);
    assert.match(page, /<td>503<\/td>\s*<td>87 ms<\/td>\s*<td><pre class="response">&lt;h1&gt;down&lt;\/h1&gt;<\/pre><\/td>/);
    assert.match(page, /<td>no response<\/td>\s*<td>87 ms<\/td>\s*<td><span class="fault">timed out after 10 s<\/span><\/td>/);
    assert.equal(page.match(/\/events\/42\/replay/g)?.length, 1, 'one replay button per event');
    assert.doesNotMatch(await (await get(`${base}/7`, await signIn(viewer))).text(), /\/replay"/);
    assert.equal((await get(`${base}/99`, await signIn(operator))).status, 404);
  });

  test('replay sends the event again and says so; one with nothing to repeat says that', async () => {
    const who = await signIn(operator);
    const replayed = await post(`${base}/7/events/42/replay`, who, [['_csrf', who.csrf]]);
    assert.equal(replayed.status, 303);
    assert.equal(replayed.headers.get('location'), `${base}/7?replay=done&event=42`);
    assert.deepEqual(calls.findLast((call) => call.method === 'ReplayProjectWebhookEvent')?.request, {
      projectId: 21,
      organizationId: 3,
      webhookId: 7,
      eventId: 42,
    });
    assert.match(await (await get(`${base}/7?replay=done&event=42`, who)).text(), /Event evt_42 goes out again, with the same webhook-id\./);
    const undelivered = await post(`${base}/7/events/43/replay`, who, [['_csrf', who.csrf]]);
    assert.equal(undelivered.headers.get('location'), `${base}/7?replay=undelivered&event=43`);
    const seer = await signIn(viewer);
    assert.equal((await post(`${base}/7/events/42/replay`, seer, [['_csrf', seer.csrf]])).status, 403);
  });
});
