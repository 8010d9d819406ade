// For dispatch-svc's integration tests: a database and a NATS prefix unique to the run (removed afterwards), the rows
// auth-svc would own (plan, organization, projects, API key), and dispatch-svc's services served in-process.
import { randomBytes } from 'node:crypto';
import { createRegistry, GrpcClient, GrpcServer, type Logger } from '@notify/platform';
import { createPool, type Pool } from '@notify/platform/database';
import { createDataKey } from '@notify/platform/mail';
import { connectNats, type JetStreamClient, type JetStreamManager, type NatsConnection } from '@notify/platform/nats';
import { type DeliveryJob, type dispatch, dispatchProto, readDeliveryJob, schemaHeader, type Topology } from '@notify/proto';
import { createTestDatabase } from '@notify/test/harness/database.ts';
import { testEnvironment } from '@notify/test/harness/environment.ts';
import { silentLogger } from '@notify/test/harness/logger.ts';
import { waitFor } from '@notify/test/harness/wait.ts';
import { buildDispatch } from '../build.ts';
import type { DispatchMetrics } from '../metrics.ts';
import type { JobPublisher } from '../outbox/job-publisher.ts';
import type { DispatchCallers, ServiceDeps } from '../services.ts';

const callers: DispatchCallers = {
  gateway: { name: 'gateway', token: 'gateway-token-for-dispatch-tests' },
  mailer: { name: 'mailer', token: 'mailer-token-for-dispatch-tests-' },
  bounce: { name: 'bounce', token: 'bounce-token-for-dispatch-tests-' },
  admin: { name: 'admin', token: 'admin-token-for-dispatch-tests-01' },
};

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
  readonly callers: DispatchCallers;
  /** Messages currently stored in the jobs stream. */
  jobsInStream(): Promise<number>;
  /** The last job JetStream stored, read as the mailer reads it, with the Nats-Msg-Id it was stored under. */
  lastJob(): Promise<{ msgId: string | undefined; job: DeliveryJob }>;
  /** Sends one message to ada@example.com with the project's `template` (the caller puts it) and returns its id. */
  acceptMessage(options?: { template?: string; dataJson?: string }): Promise<number>;
  /** A Send request of the seeded project and key, to ada@example.com with the `welcome` template, then `overrides`. */
  sendRequest(overrides?: Partial<dispatch.SendRequest>): dispatch.SendRequest;
  /** sendRequest as a Send call's decoding fills it, every field present, for the handlers called directly. */
  decodedSendRequest(overrides?: Partial<dispatch.SendRequest>): dispatch.SendRequest__Output;
  /** The seeded organization's usage row this month, as the quota counts it. */
  usedThisMonth(): Promise<number>;
  /** Waits until the outbox is empty: a published job's row is deleted after the send has answered. */
  outboxEmptied(): Promise<void>;
  /**
   * Makes messages and message_events the size of a system's and analyzes them, as autovacuum keeps them: what the
   * planner weighs its plans on. Each of `messageIds` gets `copies` copies, with their `queued` events.
   */
  growMessages(messageIds: readonly number[], copies: number): Promise<void>;
  close(): Promise<void>;
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

export async function startHarness(options: { idempotencyTtlMs?: number; webhookAllowPrivate?: boolean; dnsServers?: string[] } = {}): Promise<Harness> {
  const runId = randomBytes(4).toString('hex');
  // Undone in reverse order by close(), or at once if starting fails half-way, so no run leaves anything behind.
  const undo: (() => Promise<unknown>)[] = [];
  const close = async (): Promise<void> => {
    for (const step of undo.reverse()) await step().catch(() => undefined);
  };
  try {
    const logger = silentLogger('dispatch-test');
    const database = await createTestDatabase({ runId, logger });
    undo.push(() => database.drop());
    const pool = createPool(database.url, { max: 8, applicationName: 'dispatch-test', logger });
    undo.push(() => pool.end());
    const ids = await seed(pool);

    const nats = await connectNats(testEnvironment.natsUrl, 'dispatch-test', logger);
    undo.push(() => nats.close());
    const registry = createRegistry('dispatch-svc');
    const built = await buildDispatch(
      {
        natsPrefix: `t${runId}_`,
        natsStreamReplicas: 1,
        gatewayToken: callers.gateway.token,
        mailerToken: callers.mailer.token,
        bounceToken: callers.bounce.token,
        adminToken: callers.admin.token,
        idempotencyTtlMs: options.idempotencyTtlMs ?? 86_400_000,
        outboxRelayIntervalMs: 1_000,
        outboxRelayMinAgeMs: 5_000,
        scheduleReleaseIntervalMs: 100,
        deliverabilityIntervalMs: 60_000,
        testFault: 'none',
        webhookAllowPrivate: options.webhookAllowPrivate ?? false,
        webhookEndpointsPerProject: 20,
        dataKey: createDataKey(randomBytes(32)),
        renderWorkers: 1,
        messageRetentionHours: 720,
        retentionPurgeIntervalMs: 600_000,
        retentionPurgeBatchSize: 1_000,
        retentionPurgePauseMs: 0,
        dnsServers: options.dnsServers,
        domainVerifyIntervalMs: 100,
      },
      {
        pool,
        nats,
        logger,
        registry,
        crash: () => {
          throw new Error('dispatch-svc tests set no test fault');
        },
      },
    );
    const { names, js, jsm, metrics, publisher, deps } = built;
    undo.push(() => built.renderer.close());
    undo.push(async () => {
      for (const stream of [names.jobsStream, names.eventsStream, names.deliveryLimitsStream, names.deadLettersStream, names.webhooksStream])
        await jsm.streams.delete(stream).catch(() => false);
    });
    const server = new GrpcServer({ logger, registry });
    built.serve(server);
    const address = `127.0.0.1:${await server.listen(0, '127.0.0.1')}`;
    undo.push(() => server.close(1_000));
    const dispatch = new GrpcClient(dispatchProto.DispatchService.service, address, { token: callers.gateway.token, deadlineMs: 5_000 });
    const admin = new GrpcClient(dispatchProto.TemplateAdminService.service, address, { token: callers.admin.token, deadlineMs: 5_000 });
    undo.push(async () => {
      dispatch.close();
      admin.close();
    });

    const { projectId, organizationId, apiKeyId } = ids;
    const sendRequest = (overrides: Partial<dispatch.SendRequest> = {}): dispatch.SendRequest => ({
      projectId,
      organizationId,
      apiKeyId,
      template: 'welcome',
      to: 'ada@example.com',
      dataJson: JSON.stringify({ name: 'Ada' }),
      idempotencyKey: '',
      fingerprint: '',
      ...overrides,
    });
    const decodedSendRequest = (overrides: Partial<dispatch.SendRequest> = {}): dispatch.SendRequest__Output =>
      ({
        fieldsInvalid: false,
        tags: [],
        metadataJson: '',
        test: false,
        sendAt: '',
        fromAddress: '',
        fromName: '',
        keyFromDomains: [],
        monthlyQuota: 0,
        ...sendRequest(overrides),
      }) as dispatch.SendRequest__Output;

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
      callers,
      async jobsInStream() {
        return (await jsm.streams.info(names.jobsStream)).state.messages;
      },
      async lastJob() {
        const stored = await jsm.streams.getMessage(names.jobsStream, { last_by_subj: names.jobsSubject });
        if (!stored) throw new Error('no job in the stream');
        const read = readDeliveryJob(stored.data, stored.header.get(schemaHeader) || undefined);
        if (!read.ok) throw new Error(read.reason);
        return { msgId: stored.header.get('Nats-Msg-Id') || undefined, job: read.value };
      },
      sendRequest,
      decodedSendRequest,
      async acceptMessage(options = {}) {
        const response = await dispatch.call('Send', sendRequest({ template: options.template ?? 'welcome', dataJson: options.dataJson ?? '{}' }));
        return response.messageId;
      },
      async usedThisMonth() {
        const result = await pool.query<{ accepted: number }>(
          `SELECT coalesce(sum(accepted), 0)::int AS accepted FROM organization_usage WHERE organization_id = $1 AND month = date_trunc('month', now() AT TIME ZONE 'UTC')::date`,
          [ids.organizationId],
        );
        return result.rows[0]?.accepted ?? -1;
      },
      async outboxEmptied() {
        await waitFor(async () => (await pool.query('SELECT 1 FROM outbox LIMIT 1')).rowCount === 0, {
          timeoutMs: 5_000,
          intervalMs: 20,
          what: 'the outbox to be empty',
        });
      },
      async growMessages(messageIds, copies) {
        await pool.query(
          `WITH copies AS (
             INSERT INTO messages (project_id, organization_id, api_key_id, template_id, template_slug, template_version, recipient, data, state, celery_task_id)
             SELECT project_id, organization_id, api_key_id, template_id, template_slug, template_version, recipient, data, state, gen_random_uuid()
               FROM messages, generate_series(1, $2) WHERE id = ANY($1::bigint[]) RETURNING id)
           INSERT INTO message_events (message_id, state, attempt, occurred_at) SELECT id, 'queued', 0, now() FROM copies`,
          [messageIds, copies],
        );
        await pool.query('ANALYZE messages, message_events');
      },
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}
