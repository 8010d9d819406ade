// The erasure form through the panel's real gRPC clients and its sessions on a real Redis, against stand-ins of
// PanelAuthService and PanelService: shown to operators on the overview, posted behind CSRF, always within the user's
// organization, answered with what was changed and never with the address.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { type GrpcServer, UserError } from '@notify/platform';
import { type auth, dispatchProto } from '@notify/proto';
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

const erasures: Array<Record<string, unknown>> = [];

let services: GrpcServer;
let gateway: ServedApp;
const { signIn, get, post } = panelClient(() => gateway);

before(async () => {
  services = standInServer();
  servePanelAccess(services, { users: [operator, viewer], organization, projects });
  services.add(
    dispatchProto.PanelService.service,
    standIn(dispatchProto.PanelService.service, {
      async GetOverview() {
        return { lastHour: null, lastDay: null, asOf: createdAt };
      },
      async SearchMessages() {
        return { messages: [], nextCursor: '' };
      },
      async EraseProjectRecipient(request) {
        erasures.push({ ...request });
        if (request.projectId !== 21 || request.organizationId !== 3) throw new UserError(status.NOT_FOUND, 'project_not_found', 'no such project');
        if (!request.address.includes('@')) throw new UserError(status.INVALID_ARGUMENT, 'invalid_argument', 'address: must be one email address');
        return { messages: 4, canceled: 1, events: 2, outbox: 0, webhookEvents: 3, webhookAttempts: 3, idempotencyRecords: 0, suppressions: 2 };
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

const erasePath = '/panel/projects/21/erase';

describe('the erasure form', () => {
  test('is on the overview for operators only', async () => {
    const page = await (await get('/panel/projects/21', await signIn(operator))).text();
    assert.match(page, /<form method="post" action="\/panel\/projects\/21\/erase">/);
    assert.match(page, /<input id="erasure-address" name="address" type="email" required maxlength="254"/);
    const seen = await (await get('/panel/projects/21', await signIn(viewer), { 'accept-language': 'es' })).text();
    assert.doesNotMatch(seen, /\/erase"/);
  });

  test('an operator erases an address and is shown what changed, in the organization, without the address', async () => {
    const who = await signIn(operator);
    const response = await post(erasePath, who, [
      ['_csrf', who.csrf],
      ['address', ' Erin@Example.com '],
    ]);
    assert.equal(response.status, 200);
    const page = await response.text();
    assert.deepEqual(erasures.at(-1), { organizationId: 3, projectId: 21, address: 'Erin@Example.com' });
    assert.match(page, /The address and data of 4 messages were replaced by erased@erased\.invalid\./);
    assert.match(page, /<th scope="row">Scheduled sends canceled<\/th><td>1<\/td>/);
    assert.match(page, /<th scope="row">Suppression entries kept as a hash<\/th><td>2<\/td>/);
    assert.doesNotMatch(page, /erin@example\.com/i);
  });

  test('an address the service refuses comes back 400 with the form and nothing erased', async () => {
    const who = await signIn(operator);
    const response = await post(
      erasePath,
      who,
      [
        ['_csrf', who.csrf],
        ['address', 'not-an-address'],
      ],
      { 'accept-language': 'es' },
    );
    assert.equal(response.status, 400);
    const page = await response.text();
    assert.match(page, /role="alert">Eso no es una dirección de correo; no se borró nada\./);
    assert.match(page, /action="\/panel\/projects\/21\/erase"/);
  });

  test("a viewer may not erase, nor may a post without the session's token", async () => {
    const before = erasures.length;
    const seer = await signIn(viewer);
    assert.equal(
      (
        await post(erasePath, seer, [
          ['_csrf', seer.csrf],
          ['address', 'erin@example.com'],
        ])
      ).status,
      403,
    );
    const who = await signIn(operator);
    assert.equal(
      (
        await post(erasePath, who, [
          ['_csrf', 'x'.repeat(43)],
          ['address', 'erin@example.com'],
        ])
      ).status,
      403,
    );
    assert.equal(erasures.length, before, 'nothing was erased');
  });
});
