// Panel users through auth-svc's real gRPC surfaces, on a run-unique database: created by an operator (admin token),
// signed in and resolved by the gateway (gateway token).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { createRegistry, GrpcClient, GrpcServer } from '@notify/platform';
import { createPool, type Pool } from '@notify/platform/database';
import { connectNats, type NatsConnection } from '@notify/platform/nats';
import { authProto, topology } from '@notify/proto';
import { createTestDatabase, type TestDatabase } from '@notify/test/harness/database.ts';
import { testEnvironment } from '@notify/test/harness/environment.ts';
import { silentLogger } from '@notify/test/harness/logger.ts';
import { refusal } from '@notify/test/harness/refusal.ts';
import { type AuthService, createAuthService } from '../auth-service.ts';
import { hashPassword } from './password.ts';

const runId = randomBytes(4).toString('hex');
const gatewayToken = `gateway-${runId}-0123456789abcdef`;
const adminToken = `admin-${runId}-0123456789abcdef`;
const logger = silentLogger('auth-svc-test');

let database: TestDatabase;
let pool: Pool;
let nats: NatsConnection;
let service: AuthService;
let server: GrpcServer;
let admin: GrpcClient<typeof authProto.AuthAdminService.service>;
let panel: GrpcClient<typeof authProto.PanelAuthService.service>;
const ids = { acme: 0, globex: 0, acmeBilling: 0, acmeShop: 0, globexMain: 0 };

before(async () => {
  database = await createTestDatabase({ runId });
  pool = createPool(database.url, { max: 4, applicationName: 'auth-svc-test', logger });
  nats = await connectNats(testEnvironment.natsUrl, 'auth-svc-test', logger);
  const registry = createRegistry('auth-svc');
  service = await createAuthService({ pool, nats, invalidationSubject: topology(`t${runId}_`).keyInvalidationSubject, cacheTtlMs: 1_000, logger, registry });
  server = new GrpcServer({ logger, registry });
  server.add(authProto.AuthAdminService.service, service.admin, [{ name: 'admin', token: adminToken }]);
  server.add(authProto.PanelAuthService.service, service.panel, [{ name: 'gateway', token: gatewayToken }]);
  const address = `127.0.0.1:${await server.listen(0, '127.0.0.1')}`;
  admin = new GrpcClient(authProto.AuthAdminService.service, address, { token: adminToken, deadlineMs: 5_000 });
  panel = new GrpcClient(authProto.PanelAuthService.service, address, { token: gatewayToken, deadlineMs: 5_000 });

  const plan = await admin.call('CreatePlan', { name: 'basic', monthlyQuota: 0, suspended: false });
  ids.acme = (await admin.call('CreateOrganization', { name: 'Acme', planId: plan.id })).id;
  ids.globex = (await admin.call('CreateOrganization', { name: 'Globex', planId: plan.id })).id;
  ids.acmeBilling = (await admin.call('CreateProject', { organizationId: ids.acme, name: 'billing' })).id;
  ids.acmeShop = (await admin.call('CreateProject', { organizationId: ids.acme, name: 'shop' })).id;
  ids.globexMain = (await admin.call('CreateProject', { organizationId: ids.globex, name: 'main' })).id;
});

after(async () => {
  admin?.close();
  panel?.close();
  await server?.close(1_000);
  await service?.close();
  await nats?.drain();
  await pool?.end();
  await database?.drop();
});

const password = 'a long enough password';

test('a panel user signs in with the password an operator set, and only the hash of it is stored', async () => {
  const created = await admin.call('CreatePanelUser', { organizationId: ids.acme, email: '  Ana@Acme.Example ', password, role: 'operator' });
  assert.equal(created.email, 'ana@acme.example');
  assert.equal(created.role, 'operator');
  assert.equal(created.disabledAt, '');

  const signedIn = await panel.call('VerifyPanelCredentials', { email: 'ANA@acme.example', password });
  assert.deepEqual(signedIn, created);

  const { rows } = await pool.query('SELECT password_hash, password_salt, scrypt_n, scrypt_r, scrypt_p FROM panel_users WHERE id = $1', [created.id]);
  const row = rows[0] as { password_hash: Buffer; password_salt: Buffer; scrypt_n: number; scrypt_r: number; scrypt_p: number };
  assert.equal(row.password_salt.length, 16);
  assert.equal(row.password_hash.length, 32);
  assert.deepEqual([row.scrypt_n, row.scrypt_r, row.scrypt_p], [32768, 8, 3]);
  assert.ok(!row.password_hash.toString('latin1').includes(password));
});

test('a wrong password, an unknown email and a disabled user are refused alike', async () => {
  const user = await admin.call('CreatePanelUser', { organizationId: ids.acme, email: 'soon-disabled@acme.example', password, role: 'viewer' });
  await admin.call('DisablePanelUser', { id: user.id });
  for (const attempt of [
    { email: 'ana@acme.example', password: 'not the password at all' },
    { email: 'nobody@acme.example', password },
    { email: 'soon-disabled@acme.example', password },
    { email: 'ana@acme.example', password: '' },
  ]) {
    const error = await refusal(panel.call('VerifyPanelCredentials', attempt));
    assert.equal(error.status, status.UNAUTHENTICATED, attempt.email);
    assert.equal(error.reason, 'invalid_credentials');
  }
});

test('an email can belong to one panel user only, whatever its case or organization', async () => {
  const error = await refusal(admin.call('CreatePanelUser', { organizationId: ids.globex, email: 'ANA@acme.example', password, role: 'viewer' }));
  assert.equal(error.status, status.ALREADY_EXISTS);
});

test('every fault of a new panel user is reported at once', async () => {
  const error = await refusal(admin.call('CreatePanelUser', { organizationId: 0, email: 'not an email', password: 'short', role: 'admin' }));
  assert.equal(error.status, status.INVALID_ARGUMENT);
  assert.deepEqual(error.fields, [
    'organization_id: must be a positive id',
    'email: must be one email address',
    'role: must be one of viewer, operator',
    'password: must be at least 12 characters',
  ]);
});

test("a signed-in user's access names their organization and only its projects", async () => {
  const user = await admin.call('CreatePanelUser', { organizationId: ids.acme, email: 'viewer@acme.example', password, role: 'viewer' });
  const access = await panel.call('GetPanelAccess', { userId: user.id });
  assert.equal(access.user?.email, 'viewer@acme.example');
  assert.equal(access.organization?.name, 'Acme');
  assert.deepEqual(
    access.projects.map((project) => project.id),
    [ids.acmeBilling, ids.acmeShop],
  );

  await admin.call('DisablePanelUser', { id: user.id });
  const error = await refusal(panel.call('GetPanelAccess', { userId: user.id }));
  assert.equal(error.status, status.NOT_FOUND);
  assert.equal(error.reason, 'panel_user_not_found');
});

test('a new password replaces the old one and marks when sessions must start again', async () => {
  const user = await admin.call('CreatePanelUser', { organizationId: ids.globex, email: 'bo@globex.example', password, role: 'viewer' });
  const changed = await admin.call('SetPanelUserPassword', { id: user.id, password: 'a brand new password' });
  assert.ok(Date.parse(changed.passwordChangedAt) > Date.parse(user.passwordChangedAt));
  assert.equal((await refusal(panel.call('VerifyPanelCredentials', { email: 'bo@globex.example', password }))).reason, 'invalid_credentials');
  assert.equal((await panel.call('VerifyPanelCredentials', { email: 'bo@globex.example', password: 'a brand new password' })).id, user.id);
  assert.deepEqual(
    (await admin.call('ListPanelUsers', { organizationId: ids.globex })).users.map((listed) => listed.email),
    ['bo@globex.example'],
  );
});

test('a hash made with weaker parameters is upgraded at the next sign-in, without signing the user out', async () => {
  const user = await admin.call('CreatePanelUser', { organizationId: ids.globex, email: 'old@globex.example', password, role: 'viewer' });
  const weak = await hashPassword(password, { n: 2 ** 14, r: 8, p: 1 });
  await pool.query('UPDATE panel_users SET password_hash = $2, password_salt = $3, scrypt_n = $4, scrypt_r = $5, scrypt_p = $6 WHERE id = $1', [
    user.id,
    weak.hash,
    weak.salt,
    weak.n,
    weak.r,
    weak.p,
  ]);
  const signedIn = await panel.call('VerifyPanelCredentials', { email: 'old@globex.example', password });
  assert.equal(signedIn.passwordChangedAt, user.passwordChangedAt);
  const { rows } = await pool.query<{ scrypt_n: number }>('SELECT scrypt_n FROM panel_users WHERE id = $1', [user.id]);
  assert.equal(rows[0]?.scrypt_n, 32768);
  assert.equal((await panel.call('VerifyPanelCredentials', { email: 'old@globex.example', password })).id, user.id);
});

test("a project's API keys are listed without secrets, and another organization's project is not found", async () => {
  const created = await admin.call('CreateApiKey', { projectId: ids.acmeBilling, name: 'production' });
  const { keys } = await panel.call('ListPanelApiKeys', { organizationId: ids.acme, projectId: ids.acmeBilling });
  assert.deepEqual(
    keys.map((key) => key.prefix),
    [created.key?.prefix],
  );
  assert.ok(!JSON.stringify(keys).includes(created.apiKey.split('.')[1] ?? 'secret'));
  const error = await refusal(panel.call('ListPanelApiKeys', { organizationId: ids.globex, projectId: ids.acmeBilling }));
  assert.equal(error.status, status.NOT_FOUND);
  assert.equal(error.reason, 'project_not_found');
});

test("an operator's rate for a key is stored and shown; a key of another project or organization is not found and keeps its rate", async () => {
  const created = await admin.call('CreateApiKey', { projectId: ids.acmeShop, name: 'shop' });
  const id = created.key?.id ?? 0;
  const set = await panel.call('SetPanelApiKeyRate', { organizationId: ids.acme, projectId: ids.acmeShop, keyId: id, sendRate: '30/min' });
  assert.equal(set.sendRate, '30/min');
  const { keys } = await panel.call('ListPanelApiKeys', { organizationId: ids.acme, projectId: ids.acmeShop });
  assert.equal(keys.find((key) => key.id === id)?.sendRate, '30/min');
  for (const [organizationId, projectId] of [
    [ids.globex, ids.acmeShop],
    [ids.acme, ids.acmeBilling],
    [ids.globex, ids.globexMain],
  ] as const) {
    const error = await refusal(panel.call('SetPanelApiKeyRate', { organizationId, projectId, keyId: id, sendRate: '1/s' }));
    assert.equal(error.status, status.NOT_FOUND);
    assert.equal(error.reason, 'api_key_not_found');
  }
  assert.equal(
    (await refusal(panel.call('SetPanelApiKeyRate', { organizationId: ids.acme, projectId: ids.acmeShop, keyId: id, sendRate: 'fast' }))).status,
    status.INVALID_ARGUMENT,
  );
  assert.equal(
    (await panel.call('SetPanelApiKeyRate', { organizationId: ids.acme, projectId: ids.acmeShop, keyId: id, sendRate: '' })).sendRate,
    '',
    'empty: the default',
  );
});
