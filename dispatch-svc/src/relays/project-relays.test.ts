// Projects' own SMTP relays against a real database: ProjectRelayAdminService (admin token) keeps a project's list
// sealed and answers only its relays' addresses; RelayRouteService (mailer token) hands the mailers the sealed lists,
// which open only with the data key and the project's own context.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { createRegistry, GrpcClient, GrpcServer } from '@notify/platform';
import { createDataKey, projectRelaySealContext } from '@notify/platform/mail';
import { dispatchProto } from '@notify/proto';
import { assertRefused } from '@notify/test/harness/refusal.ts';
import { type Harness, startHarness } from '../testing/harness.ts';
import { projectRelayAdminHandlers, relayRouteHandlers } from './project-relay-admin.ts';

const dataKey = createDataKey(randomBytes(32));
let h: Harness;
let server: GrpcServer;
let admin: GrpcClient<typeof dispatchProto.ProjectRelayAdminService.service>;
let routes: GrpcClient<typeof dispatchProto.RelayRouteService.service>;
let address: string;

before(async () => {
  h = await startHarness();
  server = new GrpcServer({ logger: h.logger, registry: createRegistry('dispatch-relays-test') });
  server.add(dispatchProto.ProjectRelayAdminService.service, projectRelayAdminHandlers({ pool: h.pool, dataKey }), [h.callers.admin]);
  server.add(dispatchProto.RelayRouteService.service, relayRouteHandlers({ pool: h.pool }), [h.callers.mailer]);
  address = `127.0.0.1:${await server.listen(0, '127.0.0.1')}`;
  admin = new GrpcClient(dispatchProto.ProjectRelayAdminService.service, address, { token: h.callers.admin.token, deadlineMs: 5_000 });
  routes = new GrpcClient(dispatchProto.RelayRouteService.service, address, { token: h.callers.mailer.token, deadlineMs: 5_000 });
});

after(async () => {
  admin?.close();
  routes?.close();
  await server?.close(1_000);
  await h?.close();
});

const secretUrl = 'smtp://bulk:hunter2@relay-a.example.net:2525, smtps://bulk:hunter2@relay-b.example.net';

test("a project's relays are stored sealed, answered as host:port only, and handed to the mailers for the data key to open", async () => {
  const set = await admin.call('SetProjectRelay', { projectId: h.ids.projectId, smtpUrl: secretUrl });
  assert.deepEqual(set, { projectId: h.ids.projectId, relays: ['relay-a.example.net:2525', 'relay-b.example.net:465'] });
  const stored = await h.pool.query(`SELECT * FROM project_relays`);
  assert.doesNotMatch(JSON.stringify(stored.rows), /hunter2/);
  const { projects } = await routes.call('ListProjectRelays', {});
  assert.equal(projects.length, 1);
  const [route] = projects;
  assert.equal(route?.projectId, h.ids.projectId);
  assert.equal(
    dataKey.open(route!.sealedSmtpUrl, projectRelaySealContext(h.ids.projectId)),
    'smtp://bulk:hunter2@relay-a.example.net:2525,smtps://bulk:hunter2@relay-b.example.net',
  );
  assert.throws(() => dataKey.open(route!.sealedSmtpUrl, projectRelaySealContext(h.ids.otherProjectId)));
});

test('an empty smtp_url puts the project back on the default relays', async () => {
  await admin.call('SetProjectRelay', { projectId: h.ids.otherProjectId, smtpUrl: 'smtp://relay-c.example.net' });
  const cleared = await admin.call('SetProjectRelay', { projectId: h.ids.otherProjectId, smtpUrl: '' });
  assert.deepEqual(cleared, { projectId: h.ids.otherProjectId, relays: [] });
  const { projects } = await routes.call('ListProjectRelays', {});
  assert.ok(projects.every((project) => project.projectId !== h.ids.otherProjectId));
});

test('a malformed list is refused without repeating it, an unknown project is not found', async () => {
  const refused = await assertRefused(
    admin.call('SetProjectRelay', { projectId: h.ids.projectId, smtpUrl: 'smtp://relay.example.net, http://user:hunter2@x' }),
    status.INVALID_ARGUMENT,
    'invalid_argument',
  );
  assert.doesNotMatch(refused.message, /hunter2/);
  assert.match(refused.message, /relay 2 must use smtp or smtps/);
  await assertRefused(admin.call('SetProjectRelay', { projectId: 999_999, smtpUrl: 'smtp://relay.example.net' }), status.NOT_FOUND, 'project_not_found');
  await assertRefused(admin.call('SetProjectRelay', { projectId: 999_999, smtpUrl: '' }), status.NOT_FOUND, 'project_not_found');
});

test('the mailers cannot set relays, nor the admin read the sealed lists', async () => {
  const mailerAsAdmin = new GrpcClient(dispatchProto.ProjectRelayAdminService.service, address, { token: h.callers.mailer.token, deadlineMs: 5_000 });
  const adminAsMailer = new GrpcClient(dispatchProto.RelayRouteService.service, address, { token: h.callers.admin.token, deadlineMs: 5_000 });
  try {
    await assertRefused(mailerAsAdmin.call('SetProjectRelay', { projectId: h.ids.projectId, smtpUrl: '' }), status.PERMISSION_DENIED, 'permission_denied');
    await assertRefused(adminAsMailer.call('ListProjectRelays', {}), status.PERMISSION_DENIED, 'permission_denied');
  } finally {
    mailerAsAdmin.close();
    adminAsMailer.close();
  }
});
