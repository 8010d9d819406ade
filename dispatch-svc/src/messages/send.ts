// DispatchService.Send: concurrent sends are accepted together, in one transaction per batch (group commit), that
// writes each message, its idempotency record and its outbox row and counts it against its organization's monthly
// quota; a refused send writes nothing. After commit each job is published directly, and the outbox relay covers any
// publish that did not get confirmed. Each accepted message gets a `create` span in its request's trace, whose context
// is stored with it: every later step of its delivery, in whatever process, continues that trace.
import { randomUUID } from 'node:crypto';
import { status } from '@grpc/grpc-js';
import { activeContext, annotateRequestSpan, Batcher, notifyAttributes, traceparentOf, UserError, type Context, type Logger, type Span } from '@notify/platform';
import { startCreateSpan } from '@notify/platform/nats';
import { withTransaction, type Pool, type PoolClient } from '@notify/platform/database';
import type { DeliveryJob, dispatch } from '@notify/proto';
import { idempotencyKeyInUse, idempotencyKeyMismatch } from '../idempotency/idempotency-refusals.ts';
import { findIdempotencyRecords, projectKeyId, saveIdempotencyRecords, tryLockIdempotencyKeys, type NewIdempotencyRecord, type ProjectKey, type StoredResponse } from '../idempotency/idempotency-store.ts';
import type { DispatchMetrics } from '../metrics.ts';
import type { OutgoingJob } from '../outbox/delivery-job.ts';
import type { JobPublisher } from '../outbox/job-publisher.ts';
import { deleteOutboxRows, insertOutboxRows } from '../outbox/outbox-store.ts';
import { findTemplates, slugPattern, templateKey, type TemplateRow } from '../templates/template-store.ts';
import { encodeViolation, type VariablesSchemas } from '../templates/variables-schema.ts';
import { grantUsage } from '../usage/usage-store.ts';
import { deleteMessages, insertMessages, type NewMessage } from './message-store.ts';

export interface SendDeps {
  readonly pool: Pool;
  readonly publisher: JobPublisher;
  readonly schemas: VariablesSchemas;
  readonly metrics: DispatchMetrics;
  readonly logger: Logger;
  readonly idempotencyTtlMs: number;
}

interface SendInput {
  readonly data: Record<string, unknown>;
  /** Lower-cased UUID, or null when the caller sent none. */
  readonly idempotencyKey: string | null;
}

interface Pending {
  readonly request: dispatch.SendRequest__Output;
  readonly input: SendInput;
  /** The caller's trace: a batch serves many requests, so each send's own is kept for the span of its message. */
  readonly context: Context;
}

type Outcome = { readonly replay: true; readonly response: StoredResponse } | { readonly replay: false; readonly response: StoredResponse; readonly outgoing: OutgoingJob };

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const controlCharacters = /[\u0000-\u001f\u007f]/;
const isPositiveId = (value: number): boolean => Number.isSafeInteger(value) && value > 0;

/**
 * The gateway validates the public request; this re-checks what the database relies on, so a caller that skipped
 * that validation gets INVALID_ARGUMENT and not an internal error.
 */
function validate(request: dispatch.SendRequest__Output): SendInput {
  const faults: string[] = [];
  if (!isPositiveId(request.projectId)) faults.push('project_id: must be a positive integer');
  if (!isPositiveId(request.organizationId)) faults.push('organization_id: must be a positive integer');
  if (!isPositiveId(request.apiKeyId)) faults.push('api_key_id: must be a positive integer');
  if (!slugPattern.test(request.template)) faults.push('template: must be 1-100 characters of A-Z, a-z, 0-9, _ and -');
  if (request.to === '' || request.to.length > 254 || controlCharacters.test(request.to)) faults.push('to: must be one email address');
  let data: unknown;
  try {
    data = JSON.parse(request.dataJson);
  } catch {
    data = undefined;
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) faults.push('data: must be a JSON object');
  const key = request.idempotencyKey;
  if (key !== '' && !uuidPattern.test(key)) faults.push('idempotency_key: must be a UUID');
  if (key !== '' && request.fingerprint === '') faults.push('fingerprint: is required with an idempotency key');
  if (!Number.isSafeInteger(request.monthlyQuota) || request.monthlyQuota < 0) faults.push('monthly_quota: must be a non-negative integer');
  if (faults.length > 0) throw new UserError(status.INVALID_ARGUMENT, 'invalid_argument', `invalid send request: ${faults.join('; ')}`, { fields: faults });
  return { data: data as Record<string, unknown>, idempotencyKey: key === '' ? null : key.toLowerCase() };
}

/**
 * Sends per transaction, and transactions at once. While every batch is running, the sends that arrive wait for the
 * next one to start, so under load a transaction carries many sends and its statements and its commit (one WAL flush)
 * are shared; alone, a send is a batch of one and waits for nothing.
 */
const maxSendsPerBatch = 64;
const concurrentBatches = 4;
/** Published jobs' outbox rows are deleted together, one statement at a time. */
const maxOutboxDeletesPerStatement = 512;

/** SQLSTATE classes of a failure one send of a batch can cause: data exceptions, constraint violations, rollbacks. */
const sendSpecificFailure = /^(22|23|40)/;

const refused = (reason: unknown): PromiseRejectedResult => ({ status: 'rejected', reason });
const fulfilled = <T>(value: T): PromiseFulfilledResult<T> => ({ status: 'fulfilled', value });

/**
 * Steps 1-4 of each send of a batch, in one transaction: the idempotency keys, the templates, the rows of the sends
 * that passed, then the month's usage. Each statement serves the whole batch. A refused send leaves nothing behind.
 */
async function acceptBatch(client: PoolClient, deps: SendDeps, batch: readonly Pending[]): Promise<PromiseSettledResult<Outcome>[]> {
  const settled: (PromiseSettledResult<Outcome> | undefined)[] = batch.map(() => undefined);
  const open = (): number[] => batch.flatMap((_, index) => (settled[index] === undefined ? [index] : []));

  // 1. Idempotency keys: the lock of each (a second send of a key in the same batch finds it in use), then the records.
  const keyed = new Map<string, number>();
  for (const index of open()) {
    const { request, input } = batch[index] as Pending;
    if (input.idempotencyKey === null) continue;
    const id = projectKeyId({ projectId: request.projectId, idempotencyKey: input.idempotencyKey });
    if (keyed.has(id)) settled[index] = refused(idempotencyKeyInUse());
    else keyed.set(id, index);
  }
  if (keyed.size > 0) {
    const keyOf = (index: number): ProjectKey => ({ projectId: (batch[index] as Pending).request.projectId, idempotencyKey: (batch[index] as Pending).input.idempotencyKey ?? '' });
    const candidates = [...keyed.values()];
    const locked = await tryLockIdempotencyKeys(client, candidates.map(keyOf));
    const holders = candidates.filter((index, position) => {
      if (!locked[position]) settled[index] = refused(idempotencyKeyInUse());
      return locked[position];
    });
    const records = holders.length > 0 ? await findIdempotencyRecords(client, holders.map(keyOf)) : new Map();
    for (const index of holders) {
      const record = records.get(projectKeyId(keyOf(index)));
      if (!record || record.expired) continue;
      settled[index] = record.fingerprint === (batch[index] as Pending).request.fingerprint ? fulfilled({ replay: true, response: record.response }) : refused(idempotencyKeyMismatch());
    }
  }

  // 2. Templates, and the data against each template's variables.
  const templateOf = new Map<number, TemplateRow>();
  if (open().length > 0) {
    const wanted = new Map(open().map((index) => {
      const { projectId, template } = (batch[index] as Pending).request;
      return [templateKey(projectId, template), { projectId, slug: template }];
    }));
    const templates = await findTemplates(client, [...wanted.values()]);
    for (const index of open()) {
      const { request, input } = batch[index] as Pending;
      const template = templates.get(templateKey(request.projectId, request.template));
      const refusal = refuseTemplate(deps, request, input, template);
      if (refusal) settled[index] = refused(refusal);
      else if (template) templateOf.set(index, template);
    }
  }

  // 3. The rows of the sends still standing: messages with their first event, idempotency records, outbox rows.
  const accepted = open();
  if (accepted.length === 0) return settled as PromiseSettledResult<Outcome>[];
  const creations = accepted.map((index) => startCreateSpan({ destination: deps.publisher.subject }, (batch[index] as Pending).context));
  const newMessages = accepted.map((index, position): NewMessage => {
    const { request, input } = batch[index] as Pending;
    const template = templateOf.get(index) as TemplateRow;
    return {
      projectId: request.projectId,
      organizationId: request.organizationId,
      apiKeyId: request.apiKeyId,
      templateId: template.id,
      templateSlug: template.slug,
      templateVersion: template.version,
      recipient: request.to,
      data: input.data,
      celeryTaskId: randomUUID(),
      idempotencyKey: input.idempotencyKey,
      traceparent: traceparentOf(creations[position] as Span),
    };
  });
  let inserted: { id: number; createdAt: Date }[];
  try {
    inserted = await insertMessages(client, newMessages);
    inserted.forEach((row, position) => creations[position]?.setAttributes({ [notifyAttributes.messageId]: row.id, 'messaging.message.id': String(row.id) }));
  } finally {
    for (const span of creations) span.end();
  }
  const records: NewIdempotencyRecord[] = [];
  const jobs = accepted.map((index, position): DeliveryJob => {
    const { request, input } = batch[index] as Pending;
    const message = newMessages[position] as NewMessage;
    const row = inserted[position] as { id: number; createdAt: Date };
    const template = templateOf.get(index) as TemplateRow;
    const response: StoredResponse = { message_id: row.id, status: 'queued', celery_task_id: message.celeryTaskId, idempotent_replay: false };
    if (input.idempotencyKey !== null) {
      records.push({ projectId: request.projectId, idempotencyKey: input.idempotencyKey, fingerprint: request.fingerprint, messageId: row.id, response });
    }
    const job: DeliveryJob = {
      messageId: row.id,
      celeryTaskId: message.celeryTaskId,
      projectId: request.projectId,
      organizationId: request.organizationId,
      to: request.to,
      data: input.data,
      template: { slug: template.slug, version: template.version, subject: template.subject, html: template.html, text: template.text },
      acceptedAt: row.createdAt.toISOString(),
    };
    settled[index] = fulfilled({ replay: false, response, outgoing: { job, traceparent: message.traceparent } });
    return job;
  });
  if (records.length > 0) await saveIdempotencyRecords(client, records, deps.idempotencyTtlMs);
  await insertOutboxRows(client, jobs);

  // 4. The month's usage, per organization: the first sends of the batch are counted first. Last, so that each
  // organization's usage row stays locked only until the commit right after (concurrent batches wait on it); the
  // rows of a send the quota refuses go again with their message (the foreign keys cascade), unseen by anyone.
  const perOrganization = new Map<number, { wanted: number; monthlyQuota: number }>();
  for (const index of accepted) {
    const { organizationId, monthlyQuota } = (batch[index] as Pending).request;
    const entry = perOrganization.get(organizationId) ?? { wanted: 0, monthlyQuota };
    // Sends of one organization carry the same plan unless it just changed; the strictest quota then applies.
    const strictest = entry.monthlyQuota === 0 ? monthlyQuota : monthlyQuota === 0 ? entry.monthlyQuota : Math.min(entry.monthlyQuota, monthlyQuota);
    perOrganization.set(organizationId, { wanted: entry.wanted + 1, monthlyQuota: strictest });
  }
  const granted = await grantUsage(client, [...perOrganization].map(([organizationId, entry]) => ({ organizationId, ...entry })));
  const overQuota: number[] = [];
  accepted.forEach((index, position) => {
    const { organizationId } = (batch[index] as Pending).request;
    const left = granted.get(organizationId) ?? 0;
    if (left > 0) {
      granted.set(organizationId, left - 1);
      return;
    }
    settled[index] = refused(new UserError(status.FAILED_PRECONDITION, 'plan_blocked', "the organization's monthly quota is used up"));
    overQuota.push((inserted[position] as { id: number }).id);
  });
  if (overQuota.length > 0) await deleteMessages(client, overQuota);
  return settled as PromiseSettledResult<Outcome>[];
}

/** Why a send cannot use its template, if it cannot. */
function refuseTemplate(deps: SendDeps, request: dispatch.SendRequest__Output, input: SendInput, template: TemplateRow | undefined): UserError | undefined {
  if (!template) return new UserError(status.NOT_FOUND, 'template_not_found', `no template "${request.template}" in this project`);
  if (!template.active) return new UserError(status.FAILED_PRECONDITION, 'template_inactive', `template "${request.template}" is not active`);
  const violations = deps.schemas.violations(template, input.data);
  if (violations.length === 0) return undefined;
  // Structured, so that the gateway can tell the caller in its own language.
  const fields = violations.map(encodeViolation);
  return new UserError(status.INVALID_ARGUMENT, 'data_invalid', `data does not match the variables of template "${template.slug}"`, { fields });
}

/**
 * A batch in its transaction. When the database refuses it for something one send can cause (a value it rejects, a
 * constraint, a deadlock), each send is tried again on its own, so that a send fails only for itself.
 */
async function acceptInTransaction(deps: SendDeps, batch: readonly Pending[]): Promise<readonly PromiseSettledResult<Outcome>[]> {
  try {
    return await withTransaction(deps.pool, (client) => acceptBatch(client, deps, batch));
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (batch.length === 1 || typeof code !== 'string' || !sendSpecificFailure.test(code)) throw error;
    deps.logger.warn({ err: error, sends: batch.length }, 'a batch of sends failed; accepting each on its own');
    return Promise.all(batch.map((pending) => acceptInTransaction(deps, [pending]).then(([result]) => result ?? refused(error), refused)));
  }
}

/** A stored 202 body as SendResponse; CheckIdempotency answers replays with it too. */
export const toSendResponse = (stored: StoredResponse, replay: boolean): dispatch.SendResponse__Output => ({
  messageId: stored.message_id,
  status: stored.status,
  celeryTaskId: stored.celery_task_id,
  idempotentReplay: replay,
});

export type SendHandler = (request: dispatch.SendRequest__Output) => Promise<dispatch.SendResponse__Output>;

export function createSendHandler(deps: SendDeps): SendHandler {
  const acceptor = new Batcher<Pending, Outcome>({ maxBatchSize: maxSendsPerBatch, concurrency: concurrentBatches, run: (batch) => acceptInTransaction(deps, batch) });
  const outboxCleaner = new Batcher<number, void>({
    maxBatchSize: maxOutboxDeletesPerStatement,
    concurrency: 1,
    run: async (messageIds) => {
      await deleteOutboxRows(deps.pool, messageIds);
      return messageIds.map(() => fulfilled(undefined));
    },
  });

  /** Publishes a committed job; a failure is only logged, since the outbox row stays for the relay. */
  async function publishDirect(outgoing: OutgoingJob): Promise<void> {
    const { job } = outgoing;
    try {
      await deps.publisher.publish(outgoing, 'direct');
    } catch (error) {
      deps.logger.warn({ err: error, messageId: job.messageId }, 'job not confirmed by JetStream; the outbox relay will publish it');
      return;
    }
    try {
      await outboxCleaner.submit(job.messageId);
    } catch (error) {
      // The relay will publish it again; JetStream drops the duplicate within its window.
      deps.logger.warn({ err: error, messageId: job.messageId }, 'published job left in the outbox');
    }
  }

  return async (request) => {
    const input = validate(request);
    const outcome = await acceptor.submit({ request, input, context: activeContext() });
    annotateRequestSpan({ [notifyAttributes.messageId]: outcome.response.message_id });
    if (outcome.replay) {
      deps.metrics.messagesReplayed.inc();
      return toSendResponse(outcome.response, true);
    }
    deps.metrics.messagesAccepted.inc();
    await publishDirect(outcome.outgoing);
    return toSendResponse(outcome.response, false);
  };
}
