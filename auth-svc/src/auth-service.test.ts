// Two auth-svc "replicas" in one process, each with its own cache, gRPC server and NATS connection,
// sharing a run-unique database and NATS prefix, driven through real gRPC clients.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { Counter, createRegistry, ExpiringCache, GrpcClient, GrpcServer, type Registry, RemoteError } from '@notify/platform';
import { createPool, type Pool } from '@notify/platform/database';
import { connectNats, type NatsConnection } from '@notify/platform/nats';
import { type auth, authProto, readKeyAnnouncement, schemaHeader, topology } from '@notify/proto';
import { createTestDatabase, type TestDatabase } from '@notify/test/harness/database.ts';
import { testEnvironment } from '@notify/test/harness/environment.ts';
import { silentLogger } from '@notify/test/harness/logger.ts';
import { assertRefused, refusal } from '@notify/test/harness/refusal.ts';
import { waitFor } from '@notify/test/harness/wait.ts';
import { type AuthService, createAuthService } from './auth-service.ts';
import type { KeyRecord } from './keys/key-lookup.ts';
import { KeyResolver } from './keys/key-resolver.ts';

const runId = randomBytes(4).toString('hex');
let database: TestDatabase;
const gatewayToken = `gateway-${runId}-0123456789abcdef`;
const adminToken = `admin-${runId}-0123456789abcdef`;
const logger = silentLogger('auth-svc-test');

interface Replica {
  pool: Pool;
  nats: NatsConnection;
  registry: Registry;
  service: AuthService;
  server: GrpcServer;
  internal: GrpcClient<auth.AuthServiceDefinition>;
  admin: GrpcClient<auth.AuthAdminServiceDefinition>;
  address: string;
}

async function startReplica(): Promise<Replica> {
  const pool = createPool(database.url, { max: 4, applicationName: 'auth-svc-test', logger });
  const nats = await connectNats(testEnvironment.natsUrl, 'auth-svc-test', logger);
  const registry = createRegistry('auth-svc');
  // A long TTL: whatever a replica forgets within the test, it forgets because it was told to.
  const service = await createAuthService({
    pool,
    nats,
    invalidationSubject: topology(`t${runId}_`).keyInvalidationSubject,
    cacheTtlMs: 60_000,
    logger,
    registry,
    usageFlushIntervalMs: 100,
  });
  const server = new GrpcServer({ logger, registry });
  server.add(authProto.AuthService.service, service.authorize, [{ name: 'gateway', token: gatewayToken }]);
  server.add(authProto.AuthAdminService.service, service.admin, [{ name: 'admin', token: adminToken }]);
  const address = `127.0.0.1:${await server.listen(0, '127.0.0.1')}`;
  return {
    pool,
    nats,
    registry,
    service,
    server,
    address,
    internal: new GrpcClient(authProto.AuthService.service, address, { token: gatewayToken, deadlineMs: 2_000 }),
    admin: new GrpcClient(authProto.AuthAdminService.service, address, { token: adminToken, deadlineMs: 2_000 }),
  };
}

async function stopReplica(replica: Replica): Promise<void> {
  replica.internal.close();
  replica.admin.close();
  replica.server.stopServing();
  await replica.server.close(1_000);
  await replica.service.close();
  await replica.nats.drain();
  await replica.pool.end();
}

let first: Replica;
let second: Replica;

before(async () => {
  database = await createTestDatabase({ runId });
  [first, second] = await Promise.all([startReplica(), startReplica()]);
});

after(async () => {
  await Promise.all([first, second].filter(Boolean).map(stopReplica));
  await database?.drop();
});

async function metricValue(registry: Registry, name: string, labels: Record<string, string>): Promise<number> {
  const metric = await registry.getSingleMetric(name)?.get();
  const sample = metric?.values.find((value) => Object.entries(labels).every(([key, label]) => value.labels[key] === label));
  return sample?.value ?? 0;
}

let sequence = 0;
/** A fresh plan, organization, project and key, named uniquely so tests do not collide. */
async function tenant(options: { monthlyQuota?: number } = {}) {
  sequence += 1;
  const plan = await first.admin.call('CreatePlan', { name: `plan ${sequence}`, monthlyQuota: options.monthlyQuota ?? 1000, suspended: false });
  const organization = await first.admin.call('CreateOrganization', { name: `org ${sequence}`, planId: plan.id });
  const project = await first.admin.call('CreateProject', { organizationId: organization.id, name: 'default' });
  const created = await first.admin.call('CreateApiKey', { projectId: project.id, name: 'production' });
  assert.ok(created.key);
  return { plan, organization, project, key: created.key, apiKey: created.apiKey };
}

test('an issued key authorizes for its organization with its plan', async () => {
  const { plan, organization, project, key, apiKey } = await tenant({ monthlyQuota: 5000 });
  assert.match(apiKey, /^nk_[0-9a-f]{16}\.[A-Za-z0-9_-]{43}$/);
  assert.equal(apiKey.split('.')[0], key.prefix);
  assert.equal(key.revokedAt, '');
  assert.equal(key.lastUsedAt, '');
  assert.ok(!Number.isNaN(Date.parse(key.createdAt)));

  const authorized = await first.internal.call('Authorize', { apiKey, organizationId: organization.id });
  assert.deepEqual(authorized, {
    keyId: key.id,
    projectId: project.id,
    organizationId: organization.id,
    plan: { planId: plan.id, name: plan.name, suspended: false, monthlyQuota: 5000 },
    sendRate: '',
    test: false,
    scopes: ['send', 'messages:read'],
    fromDomains: [],
  });
});

test('a valid key is refused with PERMISSION_DENIED for another organization or for organization 0', async () => {
  const { apiKey } = await tenant();
  const other = await tenant();
  for (const organizationId of [other.organization.id, 0]) {
    const error = await refusal(first.internal.call('Authorize', { apiKey, organizationId }));
    assert.equal(error.status, status.PERMISSION_DENIED);
    assert.equal(error.reason, 'permission_denied');
  }
});

test('malformed, unknown and wrong-secret keys are UNAUTHENTICATED with the same message, each with its reason for the gateway', async () => {
  const { organization, apiKey } = await tenant();
  const [prefix, secret] = apiKey.split('.') as [string, string];
  const wrongSecret = `${prefix}.${secret.startsWith('A') ? 'B' : 'A'}${secret.slice(1)}`;
  const unknown = `nk_${randomBytes(8).toString('hex')}.${secret}`;
  const messages = new Set<string>();
  const reasons: string[] = [];
  for (const candidate of ['', 'not-a-key', `${apiKey}x`, unknown, wrongSecret]) {
    const error = await refusal(first.internal.call('Authorize', { apiKey: candidate, organizationId: organization.id }));
    assert.equal(error.status, status.UNAUTHENTICATED);
    reasons.push(error.reason);
    messages.add(error.message);
  }
  assert.deepEqual(reasons, ['api_key_unknown', 'api_key_unknown', 'api_key_unknown', 'api_key_unknown', 'api_key_wrong_secret']);
  assert.equal(messages.size, 1);
  assert.equal(await metricValue(first.registry, 'notify_auth_authorize_total', { outcome: 'malformed' }), 3);
});

test('an unknown prefix is answered from the cache the second time', async () => {
  const unknown = `nk_${randomBytes(8).toString('hex')}.${randomBytes(32).toString('base64url')}`;
  const misses = await metricValue(second.registry, 'notify_auth_cache_lookups_total', { result: 'miss' });
  const hits = await metricValue(second.registry, 'notify_auth_cache_lookups_total', { result: 'hit' });
  for (let i = 0; i < 3; i += 1) await refusal(second.internal.call('Authorize', { apiKey: unknown, organizationId: 1 }));
  assert.equal(await metricValue(second.registry, 'notify_auth_cache_lookups_total', { result: 'miss' }), misses + 1);
  assert.equal(await metricValue(second.registry, 'notify_auth_cache_lookups_total', { result: 'hit' }), hits + 2);
});

test('concurrent lookups of one prefix share a single database query', async () => {
  const { key } = await tenant();
  const pool = createPool(database.url, { max: 4, applicationName: 'auth-svc-test', logger });
  let queries = 0;
  pool.on('acquire', () => {
    queries += 1;
  });
  const resolver = new KeyResolver({
    pool,
    cache: new ExpiringCache<KeyRecord | null>({ ttlMs: 60_000, maxEntries: 10 }),
    lookups: new Counter({ name: 'lookups', help: 'test', labelNames: ['result'], registers: [] }),
  });
  const records = await Promise.all(Array.from({ length: 10 }, () => resolver.resolve(key.prefix)));
  await pool.end();
  assert.equal(queries, 1);
  for (const record of records) assert.equal(record?.keyId, key.id);
});

test('a caller without the right token is refused before any handler', async () => {
  const { organization, apiKey } = await tenant();
  const wrong = new GrpcClient(authProto.AuthService.service, first.address, { token: 'not-the-gateway-token', deadlineMs: 2_000 });
  const adminWithGatewayToken = new GrpcClient(authProto.AuthAdminService.service, first.address, { token: gatewayToken, deadlineMs: 2_000 });
  try {
    assert.equal((await refusal(wrong.call('Authorize', { apiKey, organizationId: organization.id }))).status, status.UNAUTHENTICATED);
    assert.equal((await refusal(adminWithGatewayToken.call('ListPlans', {}))).status, status.PERMISSION_DENIED);
  } finally {
    wrong.close();
    adminWithGatewayToken.close();
  }
});

test('a key revoked on one replica is refused by another within 2 seconds, though it had it cached', async () => {
  const { organization, key, apiKey } = await tenant();
  const request = { apiKey, organizationId: organization.id };
  await second.internal.call('Authorize', request);
  const hits = await metricValue(second.registry, 'notify_auth_cache_lookups_total', { result: 'hit' });
  await second.internal.call('Authorize', request);
  assert.equal(await metricValue(second.registry, 'notify_auth_cache_lookups_total', { result: 'hit' }), hits + 1, 'the key is cached on the second replica');

  const revoked = await first.admin.call('RevokeApiKey', { id: key.id });
  assert.notEqual(revoked.revokedAt, '');
  // The revoking replica refuses at once; the other one as soon as the NATS message arrives.
  assert.equal((await refusal(first.internal.call('Authorize', request))).status, status.UNAUTHENTICATED);
  await waitFor(
    async () => {
      const outcome = await second.internal.call('Authorize', request).then(
        () => undefined,
        (error: unknown) => error,
      );
      return outcome instanceof RemoteError && outcome.status === status.UNAUTHENTICATED && outcome.reason === 'api_key_revoked';
    },
    { timeoutMs: 2_000, intervalMs: 25, what: 'the other replica to refuse the revoked key' },
  );

  const again = await second.admin.call('RevokeApiKey', { id: key.id });
  // last_used_at may move between the two calls (usage is flushed in the background); the revocation must not.
  assert.deepEqual({ ...again, lastUsedAt: '' }, { ...revoked, lastUsedAt: '' }, 'revoking twice keeps the first revocation');
});

test('a plan change reaches the keys every replica has cached', async () => {
  const { plan, organization, apiKey } = await tenant({ monthlyQuota: 300 });
  const request = { apiKey, organizationId: organization.id };
  assert.equal((await second.internal.call('Authorize', request)).plan?.suspended, false);

  const updated = await first.admin.call('UpdatePlan', { id: plan.id, suspended: true });
  assert.equal(updated.suspended, true);
  assert.equal(updated.monthlyQuota, 300, 'a field left out keeps its value');
  await waitFor(async () => (await second.internal.call('Authorize', request)).plan?.suspended === true, {
    timeoutMs: 2_000,
    intervalMs: 25,
    what: 'the other replica to see the plan suspended',
  });

  const requota = await first.admin.call('UpdatePlan', { id: plan.id, monthlyQuota: 0 });
  assert.deepEqual([requota.monthlyQuota, requota.suspended], [0, true]);
  await waitFor(async () => (await second.internal.call('Authorize', request)).plan?.monthlyQuota === 0, {
    timeoutMs: 2_000,
    intervalMs: 25,
    what: 'the other replica to see the new quota',
  });
});

test('a test key is issued with the nk_test_ prefix, authorizes like any key, and says it is a test key', async () => {
  const { organization, project } = await tenant();
  const { key, apiKey } = await first.admin.call('CreateApiKey', { projectId: project.id, name: 'ci', test: true });
  assert.ok(key);
  assert.match(apiKey, /^nk_test_[0-9a-f]{16}\.[A-Za-z0-9_-]{43}$/);
  assert.equal(key.test, true);
  assert.equal((await first.internal.call('Authorize', { apiKey, organizationId: organization.id })).test, true);
  const { keys } = await first.admin.call('ListApiKeys', { projectId: project.id });
  assert.deepEqual(
    keys.map((listed) => [listed.name, listed.test]),
    [
      ['production', false],
      ['ci', true],
    ],
  );
});

test('a key rate set on one replica is what another replica authorizes with within a second, though it had the key cached', async () => {
  const { organization, project, key, apiKey } = await tenant();
  const request = { apiKey, organizationId: organization.id };
  assert.equal((await second.internal.call('Authorize', request)).sendRate, '');
  const updated = await first.admin.call('UpdateApiKey', { id: key.id, sendRate: ' 600/min ' });
  assert.equal(updated.sendRate, '600/min', 'stored trimmed');
  await waitFor(async () => (await second.internal.call('Authorize', request)).sendRate === '600/min', {
    timeoutMs: 1_000,
    intervalMs: 25,
    what: 'the other replica to see the new rate',
  });
  assert.equal((await first.admin.call('UpdateApiKey', { id: key.id })).sendRate, '600/min', 'no rate given: unchanged');
  assert.equal((await first.admin.call('UpdateApiKey', { id: key.id, sendRate: '' })).sendRate, '', 'empty: back to the default');
  await waitFor(async () => (await second.internal.call('Authorize', request)).sendRate === '', {
    timeoutMs: 1_000,
    intervalMs: 25,
    what: 'the other replica to see the default again',
  });
  const created = await first.admin.call('CreateApiKey', { projectId: project.id, name: 'bulk', sendRate: '10/s' });
  assert.equal(created.key?.sendRate, '10/s');
});

test('a key rate not in the NOTIFY_PUBLIC_SEND_RATE grammar is INVALID_ARGUMENT and changes nothing', async () => {
  const { project, key } = await tenant();
  for (const sendRate of ['lots', '600/fortnight', '0/min', '-5/s']) {
    const error = await refusal(first.admin.call('UpdateApiKey', { id: key.id, sendRate }));
    assert.equal(error.status, status.INVALID_ARGUMENT, sendRate);
    assert.match(error.message, /send_rate: must /, sendRate);
  }
  assert.equal((await refusal(first.admin.call('CreateApiKey', { projectId: project.id, name: 'x', sendRate: '5/week' }))).status, status.INVALID_ARGUMENT);
  const { keys } = await first.admin.call('ListApiKeys', { projectId: project.id });
  assert.deepEqual(
    keys.map((listed) => listed.sendRate),
    [''],
  );
  assert.equal((await refusal(first.admin.call('UpdateApiKey', { id: 987_654_321, sendRate: '1/s' }))).status, status.NOT_FOUND);
});

test('listing keys shows their use but never their secret', async () => {
  const { organization, project, key, apiKey } = await tenant();
  await first.internal.call('Authorize', { apiKey, organizationId: organization.id });
  let listed: auth.ApiKey__Output | undefined;
  await waitFor(
    async () => {
      const { keys } = await first.admin.call('ListApiKeys', { projectId: project.id });
      listed = keys.find((candidate) => candidate.id === key.id);
      return listed?.lastUsedAt !== '';
    },
    { timeoutMs: 2_000, intervalMs: 25, what: 'the key to be listed as used' },
  );
  assert.ok(listed);
  assert.equal(listed.prefix, key.prefix);
  assert.deepEqual(Object.keys(listed).sort(), [
    'createdAt',
    'fromDomains',
    'id',
    'lastUsedAt',
    'name',
    'prefix',
    'projectId',
    'revokedAt',
    'scopes',
    'sendRate',
    'test',
  ]);
  const secret = apiKey.split('.')[1] as string;
  const everything = JSON.stringify(await first.admin.call('ListApiKeys', { projectId: project.id }));
  assert.ok(!everything.includes(secret));
});

test('the admin lists return what was created', async () => {
  const { plan, organization, project } = await tenant();
  assert.ok((await first.admin.call('ListPlans', {})).plans.some((listed) => listed.id === plan.id && listed.name === plan.name));
  assert.ok((await first.admin.call('ListOrganizations', {})).organizations.some((listed) => listed.id === organization.id && listed.planId === plan.id));
  assert.deepEqual((await first.admin.call('ListProjects', { organizationId: organization.id })).projects, [project]);
});

test('bad admin input is INVALID_ARGUMENT naming every fault', async () => {
  const cases: Array<[string, () => Promise<unknown>, RegExp]> = [
    [
      'empty plan name and negative quota',
      () => first.admin.call('CreatePlan', { name: ' ', monthlyQuota: -1, suspended: false }),
      /name: must not be empty.*monthly_quota/,
    ],
    ['control characters in a name', () => first.admin.call('CreateOrganization', { name: 'a\nb', planId: 1 }), /name: must not contain control characters/],
    ['a missing plan id', () => first.admin.call('CreateOrganization', { name: 'no plan', planId: 0 }), /plan_id: must be a positive id/],
    ['an overlong project name', () => first.admin.call('CreateProject', { organizationId: 1, name: 'x'.repeat(201) }), /name: must be at most 200 characters/],
    ['an update that changes nothing', () => first.admin.call('UpdatePlan', { id: 1 }), /set monthly_quota, suspended or both/],
  ];
  for (const [what, call, message] of cases) {
    const error = await refusal(call());
    assert.equal(error.status, status.INVALID_ARGUMENT, what);
    assert.equal(error.reason, 'invalid_argument', what);
    assert.match(error.message, message, what);
    assert.ok(error.fields.length > 0, what);
  }
});

test('references to missing rows are NOT_FOUND and duplicates ALREADY_EXISTS', async () => {
  const { plan, organization, project } = await tenant();
  const missing = 999_999_999;
  for (const call of [
    () => first.admin.call('CreateOrganization', { name: `orphan ${runId}`, planId: missing }),
    () => first.admin.call('CreateProject', { organizationId: missing, name: 'p' }),
    () => first.admin.call('CreateApiKey', { projectId: missing, name: 'k' }),
    () => first.admin.call('RevokeApiKey', { id: missing }),
    () => first.admin.call('UpdatePlan', { id: missing, suspended: true }),
    () => first.admin.call('ListProjects', { organizationId: missing }),
    () => first.admin.call('ListApiKeys', { projectId: missing }),
  ]) {
    const error = await refusal(call());
    assert.equal(error.status, status.NOT_FOUND, error.message);
    assert.equal(error.reason, 'not_found');
  }
  for (const call of [
    () => first.admin.call('CreatePlan', { name: plan.name, monthlyQuota: 0, suspended: false }),
    () => first.admin.call('CreateOrganization', { name: organization.name, planId: plan.id }),
    () => first.admin.call('CreateProject', { organizationId: organization.id, name: ` ${project.name} ` }),
  ]) {
    const error = await refusal(call());
    assert.equal(error.status, status.ALREADY_EXISTS, error.message);
    assert.equal(error.reason, 'already_exists');
  }
});

test('ListKeyPrefixes pages through the prefix of every key in order, revoked ones included', async () => {
  const keys = [await tenant(), await tenant(), await tenant()];
  await first.admin.call('RevokeApiKey', { id: keys[1]?.key.id ?? 0 });
  const pages: string[][] = [];
  for (let after = ''; ; ) {
    const page = (await second.internal.call('ListKeyPrefixes', { after, limit: 2 })).prefixes;
    pages.push(page);
    if (page.length < 2) break;
    after = page[page.length - 1] as string;
  }
  const listed = pages.flat();
  assert.deepEqual(listed, [...listed].sort(), 'in prefix order');
  assert.equal(new Set(listed).size, listed.length, 'no prefix twice across pages');
  for (const { apiKey } of keys) assert.ok(listed.includes(apiKey.split('.')[0] as string));
  const { rows } = await first.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM api_keys');
  assert.equal(listed.length, rows[0]?.n);
  assert.ok(pages.slice(0, -1).every((page) => page.length === 2));
});

test('a new key is announced with its prefix, so the gateways learn it names a key', async () => {
  const announced: string[] = [];
  const subscription = first.nats.subscribe(topology(`t${runId}_`).keyInvalidationSubject, {
    callback: (_error, message) => void announced.push(JSON.stringify(readKeyAnnouncement(message.data, message.headers?.get(schemaHeader)))),
  });
  await first.nats.flush();
  const { apiKey } = await tenant();
  const prefix = apiKey.split('.')[0] as string;
  for (let wait = 0; wait < 100 && !announced.includes(JSON.stringify({ keyPrefix: prefix })); wait++) await new Promise((resolve) => setTimeout(resolve, 10));
  subscription.unsubscribe();
  assert.ok(announced.includes(JSON.stringify({ keyPrefix: prefix })), `announced: ${announced.join(', ')}`);
});

test("UpdateOrganization sets an organization's message retention, lists it, and clears it with ''", async () => {
  const { organization } = await tenant();
  assert.equal(organization.messageRetention, '');
  assert.equal((await first.admin.call('UpdateOrganization', { id: organization.id, messageRetention: '90d' })).messageRetention, '90d');
  assert.equal((await first.admin.call('UpdateOrganization', { id: organization.id, messageRetention: '48h' })).messageRetention, '2d');
  assert.equal((await first.admin.call('ListOrganizations', {})).organizations.find((listed) => listed.id === organization.id)?.messageRetention, '2d');
  assert.equal((await first.admin.call('UpdateOrganization', { id: organization.id, messageRetention: '' })).messageRetention, '');

  for (const [what, request, message] of [
    ['a retention in weeks', { id: organization.id, messageRetention: '2w' }, /message_retention: must be a number of days or hours/],
    ['a retention of nothing', { id: organization.id, messageRetention: '0h' }, /message_retention: must be at least 1h/],
    ['no change at all', { id: organization.id }, /set message_retention/],
  ] as const) {
    const error = await refusal(first.admin.call('UpdateOrganization', request));
    assert.equal(error.status, status.INVALID_ARGUMENT, what);
    assert.match(error.message, message, what);
  }
  assert.equal((await refusal(first.admin.call('UpdateOrganization', { id: 999_999_999, messageRetention: '1d' }))).status, status.NOT_FOUND);
});

/** Sending domains of `organizationId` (no usable key: only their names matter here), named uniquely per run. */
async function sendingDomains(organizationId: number, ...labels: string[]): Promise<string[]> {
  const domains = labels.map((label) => `${label}-${runId}-${sequence}.example`);
  for (const domain of domains)
    await first.pool.query(
      `INSERT INTO sending_domains (organization_id, domain, selector, public_key, sealed_private_key) VALUES ($1, $2, 'notify', 'p', 's')`,
      [organizationId, domain],
    );
  return domains;
}

const keyCount = async (projectId: number): Promise<number> =>
  (await first.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM api_keys WHERE project_id = $1', [projectId])).rows[0]?.n ?? -1;

test("a key limited to sending domains keeps them lower-cased, once each and sorted, and authorizes with them; another organization's is from_domain_unknown", async () => {
  const { organization, project } = await tenant();
  const [mail, news] = await sendingDomains(organization.id, 'mail', 'news');
  const other = await tenant();
  const [foreign] = await sendingDomains(other.organization.id, 'foreign');
  assert.ok(mail && news && foreign);

  const created = await first.admin.call('CreateApiKey', { projectId: project.id, name: 'limited', fromDomains: [` ${news.toUpperCase()}. `, mail, news] });
  assert.deepEqual(created.key?.fromDomains, [mail, news]);
  const authorized = await first.internal.call('Authorize', { apiKey: created.apiKey, organizationId: organization.id });
  assert.deepEqual(authorized.fromDomains, [mail, news]);
  const { keys } = await first.admin.call('ListApiKeys', { projectId: project.id });
  assert.deepEqual(
    keys.map((key) => key.fromDomains),
    [[], [mail, news]],
    'the tenant key has no limit',
  );

  const before = await keyCount(project.id);
  const unknown = await assertRefused(
    first.admin.call('CreateApiKey', { projectId: project.id, name: 'wider', fromDomains: [mail, foreign, 'nowhere.example'] }),
    status.INVALID_ARGUMENT,
    'from_domain_unknown',
  );
  assert.deepEqual(unknown.fields, [foreign, 'nowhere.example'].sort());
  const many = Array.from({ length: 51 }, (_, index) => `d${index}.example`);
  const tooMany = await assertRefused(
    first.admin.call('CreateApiKey', { projectId: project.id, name: 'many', fromDomains: many }),
    status.INVALID_ARGUMENT,
    'invalid_argument',
  );
  assert.match(tooMany.message, /from_domains: at most 50 domains/);
  assert.equal(await keyCount(project.id), before, 'nothing was written');
});

test('a limited key issues only keys within its domains, its own list when it names none, and the audit row records them', async () => {
  const { organization, project } = await tenant();
  const [mail, news, shop] = await sendingDomains(organization.id, 'mail', 'news', 'shop');
  assert.ok(mail && news && shop);
  const full = await first.admin.call('CreateApiKey', { projectId: project.id, name: 'full', scopes: ['full'] });
  const byFull = await first.internal.call('CreateProjectApiKey', { callerKeyId: full.key?.id, name: 'limited', scopes: ['full'], fromDomains: [news, mail] });
  const limited = byFull.key;
  assert.deepEqual(limited?.fromDomains, [mail, news]);
  const { rows } = await first.pool.query<{ detail: { from_domains: string[] } }>(
    "SELECT detail FROM audit_events WHERE action = 'api_key.create' AND target = $1",
    [String(limited?.id)],
  );
  assert.deepEqual(rows[0]?.detail.from_domains, [mail, news]);
  assert.deepEqual(
    (await first.internal.call('CreateProjectApiKey', { callerKeyId: full.key?.id, name: 'unlimited', scopes: ['send'] })).key?.fromDomains,
    [],
    'an unlimited caller naming none issues an unlimited key',
  );

  const inherited = await first.internal.call('CreateProjectApiKey', { callerKeyId: limited?.id, name: 'inherits', scopes: ['send'] });
  assert.deepEqual(inherited.key?.fromDomains, [mail, news]);
  const narrower = await first.internal.call('CreateProjectApiKey', { callerKeyId: limited?.id, name: 'narrower', scopes: ['send'], fromDomains: [news] });
  assert.deepEqual(narrower.key?.fromDomains, [news]);

  const before = await keyCount(project.id);
  const wider = await assertRefused(
    first.internal.call('CreateProjectApiKey', { callerKeyId: limited?.id, name: 'wider', scopes: ['send'], fromDomains: [mail, shop] }),
    status.PERMISSION_DENIED,
    'from_domain_not_allowed',
  );
  assert.deepEqual(wider.fields, [shop]);
  await assertRefused(
    first.internal.call('CreateProjectApiKey', { callerKeyId: limited?.id, name: 'unknown', scopes: ['send'], fromDomains: ['nowhere.example'] }),
    status.PERMISSION_DENIED,
    'from_domain_not_allowed',
  );
  await assertRefused(
    first.internal.call('CreateProjectApiKey', { callerKeyId: full.key?.id, name: 'unknown', scopes: ['send'], fromDomains: ['nowhere.example'] }),
    status.INVALID_ARGUMENT,
    'from_domain_unknown',
  );
  assert.equal(await keyCount(project.id), before, 'nothing was written');
});

test('a limited key revokes only keys limited within its domains, itself included', async () => {
  const { organization, project } = await tenant();
  const [mail, news] = await sendingDomains(organization.id, 'mail', 'news');
  assert.ok(mail && news);
  const issue = async (name: string, fromDomains: string[]) =>
    (await first.admin.call('CreateApiKey', { projectId: project.id, name, scopes: ['full'], fromDomains })).key?.id ?? 0;
  const limited = await issue('limited', [mail]);
  const unlimited = await issue('unlimited', []);
  const wider = await issue('wider', [mail, news]);
  const within = await issue('within', [mail]);

  const refusedUnlimited = await assertRefused(
    first.internal.call('RevokeProjectApiKey', { callerKeyId: limited, id: unlimited }),
    status.PERMISSION_DENIED,
    'from_domain_not_allowed',
  );
  assert.deepEqual(refusedUnlimited.fields, [], 'a key without a limit: no domain to name');
  const refusedWider = await assertRefused(
    first.internal.call('RevokeProjectApiKey', { callerKeyId: limited, id: wider }),
    status.PERMISSION_DENIED,
    'from_domain_not_allowed',
  );
  assert.deepEqual(refusedWider.fields, [news]);
  const { rows } = await first.pool.query<{ id: number }>('SELECT id FROM api_keys WHERE project_id = $1 AND revoked_at IS NOT NULL', [project.id]);
  assert.deepEqual(rows, [], 'nothing was revoked');

  assert.notEqual((await first.internal.call('RevokeProjectApiKey', { callerKeyId: limited, id: within })).revokedAt, '');
  assert.notEqual((await first.internal.call('RevokeProjectApiKey', { callerKeyId: limited, id: limited })).revokedAt, '');
});
