// A message's page through the panel's real gRPC clients and its sessions on a real Redis, against stand-ins of
// PanelAuthService and PanelService served by the platform's GrpcServer: how the message's trace id is shown, with and
// without NOTIFY_TRACE_URL_TEMPLATE. The whole panel is tested in test/e2e/panel.test.ts.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { type GrpcServer, UserError } from '@notify/platform';
import { type auth, authProto, type dispatch, dispatchProto } from '@notify/proto';
import { gatewayCaller, type ServedApp, serveApp } from '../../testing/serve-app.ts';
import { standIn, standInServer } from '../../testing/stand-in.ts';
import { sessionCookie } from '../sessions/cookies.ts';

const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
const grafana = 'https://grafana.example.com/explore?left={"datasource":"tempo","queries":[{"query":"{trace_id}"}]}';
const createdAt = '2026-01-31T09:00:00.000Z';
const user: auth.PanelUser__Output = {
  id: 5,
  organizationId: 3,
  email: 'viewer@alpha.example',
  role: 'viewer',
  createdAt,
  passwordChangedAt: createdAt,
  disabledAt: '',
};
const access: auth.PanelAccess__Output = {
  user,
  organization: { id: 3, name: 'alpha', planId: 1, createdAt, messageRetention: '' },
  projects: [{ id: 21, organizationId: 3, name: 'web', createdAt }],
};

function message(id: number, trace: string): dispatch.Message__Output {
  return {
    id,
    projectId: 21,
    organizationId: 3,
    template: 'welcome',
    templateVersion: 1,
    to: 'ada@alpha.example',
    state: 'sent',
    celeryTaskId: '9f0c2f8e-3c1d-4f7e-8a55-0d6f1b2a3c4d',
    idempotencyKey: '',
    attempts: 1,
    lastSmtpReply: '250 2.0.0 OK',
    failureReason: '',
    createdAt,
    updatedAt: createdAt,
    events: [],
    traceId: trace,
    tags: [],
    metadata: {},
    test: false,
    sendAt: '',
  };
}

const traced = 41;
const untraced = 42;
const messages = new Map([
  [traced, message(traced, traceId)],
  [untraced, message(untraced, '')],
]);

let services: GrpcServer;
let linked: ServedApp;
let plain: ServedApp;

before(async () => {
  services = standInServer();
  services.add(
    authProto.PanelAuthService.service,
    standIn(authProto.PanelAuthService.service, {
      async GetPanelAccess(request: auth.GetPanelAccessRequest__Output): Promise<auth.PanelAccess__Output> {
        if (request.userId !== user.id) throw new UserError(status.NOT_FOUND, 'panel_user_not_found', 'no such user');
        return access;
      },
    }),
    [gatewayCaller],
  );
  services.add(
    dispatchProto.PanelService.service,
    standIn(dispatchProto.PanelService.service, {
      async GetMessageView(request: dispatch.GetMessageViewRequest__Output): Promise<dispatch.MessageView__Output> {
        const found = messages.get(request.messageId);
        if (!found || request.projectId !== found.projectId || request.organizationId !== found.organizationId) {
          throw new UserError(status.NOT_FOUND, 'message_not_found', 'no such message');
        }
        return { message: found, renderedSubject: 'Welcome, Ada!', subjectError: '' };
      },
    }),
    [gatewayCaller],
  );
  const address = `127.0.0.1:${await services.listen(0, '127.0.0.1')}`;
  [linked, plain] = await Promise.all([
    serveApp({ authAddress: address, dispatchAddress: address, panelEnv: { NOTIFY_TRACE_URL_TEMPLATE: grafana } }),
    serveApp({ authAddress: address, dispatchAddress: address, panelEnv: {} }),
  ]);
});

after(async () => {
  await Promise.all([linked?.close(), plain?.close()]);
  await services?.close(1_000);
});

/** What the signed-in viewer's page of the message shows beside "Trace ID". */
async function traceShown(gateway: ServedApp, messageId: number): Promise<string> {
  assert.ok(gateway.panel, 'served with the panel');
  const { id } = await gateway.panel.sessions.create({ userId: user.id, organizationId: user.organizationId, passwordChangedAt: user.passwordChangedAt });
  const response = await fetch(`${gateway.url}/panel/projects/21/messages/${messageId}`, { headers: { cookie: `${sessionCookie}=${id}` } });
  const page = await response.text();
  assert.equal(response.status, 200, page);
  const shown = /<dt>Trace ID<\/dt><dd>(.*?)<\/dd>/.exec(page);
  assert.ok(shown, page);
  return shown[1] ?? '';
}

test('with NOTIFY_TRACE_URL_TEMPLATE the trace id links to its trace, opened in a new tab that learns nothing of the panel', async () => {
  const href = grafana.replace('{trace_id}', traceId).replaceAll('"', '&quot;');
  assert.equal(
    await traceShown(linked, traced),
    `<a href="${href}" target="_blank" rel="noopener noreferrer" title="Open the trace in a new tab"><code>${traceId}</code></a>`,
  );
});

test('without NOTIFY_TRACE_URL_TEMPLATE the trace id is text, to copy', async () => {
  assert.equal(await traceShown(plain, traced), `<code>${traceId}</code>`);
});

test('a message accepted before trace ids were kept shows none, template or not', async () => {
  assert.equal(await traceShown(linked, untraced), 'none');
  assert.equal(await traceShown(plain, untraced), 'none');
});
