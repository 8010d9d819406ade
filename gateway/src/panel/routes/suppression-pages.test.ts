// The suppression page through the panel's real gRPC clients and its sessions on a real Redis, against stand-ins of
// PanelAuthService and PanelService: searching (everyone), removing (operators, behind CSRF), always within the user's
// organization.
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

let listed: dispatch.Suppression__Output[] = [];
const calls: Array<{ method: string; request: Record<string, unknown> }> = [];

function inScope(request: { projectId: number; organizationId: number }): void {
  if (request.projectId !== 21 || request.organizationId !== 3) throw new UserError(status.NOT_FOUND, 'project_not_found', 'no such project');
}

let services: GrpcServer;
let gateway: ServedApp;
const { signIn, get, post } = panelClient(() => gateway);

before(async () => {
  listed = [
    { projectId: 21, address: 'gone@example.com', reason: 'hard_bounce', messageId: 41, createdAt },
    { projectId: 21, address: 'quiet@example.com', reason: 'manual', messageId: 0, createdAt },
  ];
  services = standInServer();
  servePanelAccess(services, { users: [operator, viewer], organization, projects });
  services.add(
    dispatchProto.PanelService.service,
    standIn(dispatchProto.PanelService.service, {
      async ListProjectSuppressions(request) {
        calls.push({ method: 'ListProjectSuppressions', request: { ...request } });
        inScope(request);
        return { suppressions: listed.filter((entry) => entry.address.includes(request.search.toLowerCase())) };
      },
      async RemoveProjectSuppression(request) {
        calls.push({ method: 'RemoveProjectSuppression', request: { ...request } });
        inScope(request);
        if (!listed.some((entry) => entry.address === request.address)) throw new UserError(status.NOT_FOUND, 'suppression_not_found', 'not listed');
        listed = listed.filter((entry) => entry.address !== request.address);
        return {};
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

const base = '/panel/projects/21/suppressions';

describe('the suppression page', () => {
  test('lists the addresses with reason, date and causing message; operators get a remove button, viewers none', async () => {
    const page = await (await get(base, await signIn(operator))).text();
    assert.match(page, /<code>gone@example\.com<\/code><\/td>\s*<td>hard bounce<\/td>/);
    assert.match(page, /<a href="\/panel\/projects\/21\/messages\/41">41<\/a>/);
    assert.match(page, /action="\/panel\/projects\/21\/suppressions\/remove"/);
    assert.match(page, /aria-current="page">Suppressions</);
    const seen = await (await get(base, await signIn(viewer), { 'accept-language': 'es' })).text();
    assert.match(seen, /<td>añadida por un operador<\/td>/);
    assert.doesNotMatch(seen, /suppressions\/remove/);
  });

  test('searches by address, within the organization', async () => {
    const page = await (await get(`${base}?address=QUIET`, await signIn(viewer))).text();
    assert.match(page, /quiet@example\.com/);
    assert.doesNotMatch(page, /gone@example\.com/);
    assert.match(page, /name="address" type="search" maxlength="254" value="QUIET"/);
    assert.deepEqual(calls.findLast((call) => call.method === 'ListProjectSuppressions')?.request, { organizationId: 3, projectId: 21, search: 'QUIET' });
  });

  test('an operator removes an address and is told so; an address not listed is said to be so', async () => {
    const who = await signIn(operator);
    const response = await post(`${base}/remove`, who, [
      ['_csrf', who.csrf],
      ['address', 'quiet@example.com'],
    ]);
    assert.equal(response.status, 303);
    assert.equal(response.headers.get('location'), `${base}?removed=removed&address=quiet%40example.com`);
    assert.deepEqual(calls.findLast((call) => call.method === 'RemoveProjectSuppression')?.request, {
      organizationId: 3,
      projectId: 21,
      address: 'quiet@example.com',
    });
    const after = await (await get(`${base}?removed=removed&address=quiet%40example.com`, who)).text();
    assert.match(after, /quiet@example\.com was removed/);
    assert.doesNotMatch(after, /<code>quiet@example\.com<\/code>/);
    const again = await post(`${base}/remove`, who, [
      ['_csrf', who.csrf],
      ['address', 'quiet@example.com'],
    ]);
    assert.equal(again.headers.get('location'), `${base}?removed=not-listed&address=quiet%40example.com`);
  });

  test("a viewer may not remove, nor may a post without the session's token", async () => {
    const seer = await signIn(viewer);
    assert.equal(
      (
        await post(`${base}/remove`, seer, [
          ['_csrf', seer.csrf],
          ['address', 'gone@example.com'],
        ])
      ).status,
      403,
    );
    const who = await signIn(operator);
    assert.equal(
      (
        await post(`${base}/remove`, who, [
          ['_csrf', 'x'.repeat(43)],
          ['address', 'gone@example.com'],
        ])
      ).status,
      403,
    );
    assert.ok(
      listed.some((entry) => entry.address === 'gone@example.com'),
      'nothing was removed',
    );
  });
});
