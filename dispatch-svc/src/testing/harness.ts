// For dispatch-svc's integration tests: a database and a NATS prefix unique to the run (removed afterwards), the rows
// auth-svc would own (plan, organization, projects, API key), and dispatch-svc's services served in-process.
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import pg from 'pg';
import { createLogger, createRegistry, GrpcClient, GrpcServer, type Logger } from '@notify/platform';
import { createPool, migrate, type Pool } from '@notify/platform/database';
import {
  connectNats,
  ensureStreams,
  jetstream,
  jetstreamManager,
  topology,
  type JetStreamClient,
  type JetStreamManager,
  type NatsConnection,
  type Topology,
} from '@notify/platform/nats';
import { dispatchProto } from '@notify/proto';
import { ensureEventsConsumer } from '../events/event-consumer.ts';
import { createDispatchMetrics, type DispatchMetrics } from '../metrics.ts';
import { createJobPublisher, type JobPublisher } from '../outbox/job-publisher.ts';
import { addDispatchServices, type ServiceDeps } from '../services.ts';
import { LiquidSyntax } from '@notify/templating';
import { VariablesSchemas } from '../templates/variables-schema.ts';

const postgresAdminUrl = process.env['TEST_POSTGRES_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const natsUrl = process.env['TEST_NATS_URL'] ?? 'nats://127.0.0.1:4222';
const internalToken = 'internal-token-for-dispatch-tests';
const adminToken = 'admin-token-for-dispatch-tests-01';

export interface Harness {
  readonly pool: Pool;
  readonly logger: Logger;
  readonly metrics: DispatchMetrics;
  readonly registry: ReturnType<typeof createRegistry>;
  readonly nats: NatsConnection;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly names: Topology;
  readonly publisher: JobPublisher;
  /** The dependencies the services run with; tests may build variants (another publisher) from them. */
  readonly deps: ServiceDeps;
  readonly dispatch: GrpcClient<typeof dispatchProto.DispatchService.service>;
  readonly admin: GrpcClient<typeof dispatchProto.TemplateAdminService.service>;
  /** Where the services listen, for clients with other tokens. */
  readonly address: string;
  readonly ids: { organizationId: number; projectId: number; otherProjectId: number; apiKeyId: number };
  readonly tokens: { internal: string; admin: string };
  /** Messages currently stored in the jobs stream. */
  jobsInStream(): Promise<number>;
  /** Sends one message to ada@example.com with the project's `template` (the caller puts it) and returns its id. */
  acceptMessage(options?: { template?: string; dataJson?: string }): Promise<number>;
  close(): Promise<void>;
}

const silent = (): Logger => createLogger('dispatch-test', 'silent', new Writable({ write: (_chunk, _encoding, done) => done() }));

async function createDatabase(name: string): Promise<string> {
  const admin = new pg.Client({ connectionString: postgresAdminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(postgresAdminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

async function dropDatabase(name: string): Promise<void> {
  const admin = new pg.Client({ connectionString: postgresAdminUrl });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}

/** The rows auth-svc owns that messages and templates reference, written directly. */
async function seed(pool: Pool): Promise<Harness['ids']> {
  const one = async (sql: string, values: unknown[]): Promise<number> => {
    const result = await pool.query<{ id: number }>(`${sql} RETURNING id`, values);
    const id = result.rows[0]?.id;
    if (id === undefined) throw new Error(`seed returned no id: ${sql}`);
    return id;
  };
  const planId = await one('INSERT INTO plans (name) VALUES ($1)', ['test plan']);
  const organizationId = await one('INSERT INTO organizations (name, plan_id) VALUES ($1, $2)', ['Test Org', planId]);
  const projectId = await one('INSERT INTO projects (organization_id, name) VALUES ($1, $2)', [organizationId, 'main']);
  const otherProjectId = await one('INSERT INTO projects (organization_id, name) VALUES ($1, $2)', [organizationId, 'other']);
  const apiKeyId = await one('INSERT INTO api_keys (project_id, name, prefix, secret_hash) VALUES ($1, $2, $3, $4)', [
    projectId,
    'test key',
    'ntfy_test',
    randomBytes(32),
  ]);
  return { organizationId, projectId, otherProjectId, apiKeyId };
}

export async function startHarness(options: { idempotencyTtlMs?: number } = {}): Promise<Harness> {
  const runId = randomBytes(4).toString('hex');
  const database = `notify_t_${runId}`;
  // Undone in reverse order by close(), or at once if starting fails half-way, so no run leaves anything behind.
  const undo: (() => Promise<unknown>)[] = [];
  const close = async (): Promise<void> => {
    for (const step of undo.reverse()) await step().catch(() => undefined);
  };
  try {
    const databaseUrl = await createDatabase(database);
    undo.push(() => dropDatabase(database));
    const logger = silent();
    await migrate(databaseUrl, logger);
    const pool = createPool(databaseUrl, { max: 8, applicationName: 'dispatch-test', logger });
    undo.push(() => pool.end());
    const ids = await seed(pool);

    const names = topology(`t${runId}_`);
    const nats = await connectNats(natsUrl, 'dispatch-test', logger);
    undo.push(() => nats.close());
    const jsm = await jetstreamManager(nats);
    undo.push(async () => {
      for (const stream of [names.jobsStream, names.eventsStream]) await jsm.streams.delete(stream).catch(() => false);
    });
    await ensureStreams(jsm, names, { replicas: 1, duplicateWindowMs: 120_000 });
    await ensureEventsConsumer(jsm, names);
    const js = jetstream(nats);

    const registry = createRegistry('dispatch-svc');
    const metrics = createDispatchMetrics(registry);
    const publisher = createJobPublisher({ js, subject: names.jobsSubject, metrics });
    const deps: ServiceDeps = {
      pool,
      publisher,
      schemas: new VariablesSchemas(),
      liquid: new LiquidSyntax(),
      metrics,
      logger,
      idempotencyTtlMs: options.idempotencyTtlMs ?? 86_400_000,
      internalToken,
      adminToken,
    };
    const server = new GrpcServer({ logger, registry });
    addDispatchServices(server, deps);
    const address = `127.0.0.1:${await server.listen(0, '127.0.0.1')}`;
    undo.push(() => server.close(1_000));
    const dispatch = new GrpcClient(dispatchProto.DispatchService.service, address, { token: internalToken, deadlineMs: 5_000 });
    const admin = new GrpcClient(dispatchProto.TemplateAdminService.service, address, { token: adminToken, deadlineMs: 5_000 });
    undo.push(async () => {
      dispatch.close();
      admin.close();
    });

    return {
      pool,
      logger,
      metrics,
      registry,
      nats,
      js,
      jsm,
      names,
      publisher,
      deps,
      dispatch,
      admin,
      address,
      ids,
      tokens: { internal: internalToken, admin: adminToken },
      async jobsInStream() {
        return (await jsm.streams.info(names.jobsStream)).state.messages;
      },
      async acceptMessage(options = {}) {
        const response = await dispatch.call('Send', {
          projectId: ids.projectId,
          organizationId: ids.organizationId,
          apiKeyId: ids.apiKeyId,
          template: options.template ?? 'welcome',
          to: 'ada@example.com',
          dataJson: options.dataJson ?? '{}',
        });
        return response.messageId;
      },
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/** Polls `check` until it returns true or `timeoutMs` passes. */
export async function eventually(check: () => Promise<boolean>, timeoutMs = 5_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}
