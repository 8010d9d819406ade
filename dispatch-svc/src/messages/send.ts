// DispatchService.Send, the one call of a send: checks 10-14 of docs/contract.md's "Order of checks" (the Idempotency-Key's record, the
// gateway's verdict on the fields, the template, its data, the monthly quota), then acceptance. Concurrent sends are
// judged and accepted together, in one transaction per batch (group commit), that writes each message, its
// idempotency record and its outbox row and counts it against its organization's monthly quota; a refused send writes
// nothing. After commit each job is published directly, and the outbox relay covers any publish that did not get
// confirmed. Each accepted message gets a `create` span in its request's trace, whose context is stored with it: every
// later step of its delivery, in whatever process, continues that trace.
import { randomUUID } from 'node:crypto';
import { status } from '@grpc/grpc-js';
import { activeContext, annotateRequestSpan, Batcher, fulfilled, notifyAttributes, traceparentOf, UserError, type Context, type Logger, type Span } from '@notify/platform';
import { startCreateSpan } from '@notify/platform/nats';
import { withTransaction, type Pool, type PoolClient } from '@notify/platform/database';
import type { DeliveryJob, dispatch } from '@notify/proto';
import { idempotencyKeyInUse, idempotencyKeyMismatch } from '../idempotency/idempotency-refusals.ts';
import { findIdempotencyRecords, projectKeyId, saveIdempotencyRecords, tryLockIdempotencyKeys, type IdempotencyRecord, type NewIdempotencyRecord, type ProjectKey, type StoredResponse } from '../idempotency/idempotency-store.ts';
import type { DispatchMetrics } from '../metrics.ts';
import { jobContentBytes, type OutgoingJob } from '../outbox/delivery-job.ts';
import type { JobPublisher } from '../outbox/job-publisher.ts';
import { deleteOutboxRows, insertOutboxRows } from '../outbox/outbox-store.ts';
import { findTemplates, slugPattern, templateKey, type TemplateRow } from '../templates/template-store.ts';
import { encodeViolation, type VariablesSchemas } from '../templates/variables-schema.ts';
import { findSuppressions, suppressionKey, type Suppression } from '../suppressions/suppression-store.ts';
import { insertScheduledJobs, type ScheduledJob } from '../scheduled/schedule-store.ts';
import { grantUsage } from '../usage/usage-store.ts';
import { labelFaults, labelsOf } from './labels.ts';
import { deleteMessages, insertMessages, type NewMessage } from './message-store.ts';

export interface SendDeps {
  readonly pool: Pool;
  readonly publisher: JobPublisher;
  readonly schemas: VariablesSchemas;
  readonly metrics: DispatchMetrics;
  readonly logger: Logger;
  readonly idempotencyTtlMs: number;
  /** Largest data and template texts one job may carry (jobContentLimit of the NATS server's max_payload). */
  readonly maxJobContentBytes: number;
}

export interface SendInput {
  /** `{}` when the gateway found the fields invalid: nothing of the body is read then. */
  readonly data: Record<string, unknown>;
  /** Lower-cased UUID, or null when the caller sent none. */
  readonly idempotencyKey: string | null;
  readonly tags: readonly string[];
  readonly metadata: Record<string, string>;
  /** The caller's `send_at`: the message is accepted `scheduled` until then. Null to send at once. */
  readonly sendAt: Date | null;
}

export interface Pending {
  readonly request: dispatch.SendRequest__Output;
  readonly input: SendInput;
  /** The caller's trace: a batch serves many requests, so each send's own is kept for the span of its message. */
  readonly context: Context;
}

export type Outcome =
  /** `replayableForMs`: how long the key's record stays live, from the transaction's start (toSendResponse). */
  | { readonly replay: true; readonly response: StoredResponse; readonly replayableForMs: number }
  /** `outgoing` is null for a scheduled send: its job waits in the schedule, for the releaser. */
  | { readonly replay: false; readonly response: StoredResponse; readonly outgoing: OutgoingJob | null; readonly organizationAccepted: number };

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const controlCharacters = /[\u0000-\u001f\u007f]/;
const isPositiveId = (value: number): boolean => Number.isSafeInteger(value) && value > 0;

/**
 * The gateway validates the public request; this re-checks what the database relies on, so a caller that skipped
 * that validation gets INVALID_ARGUMENT and not an internal error. The body's fields are not looked at when the
 * gateway already refused them (`fields_invalid`).
 */
export function validate(request: dispatch.SendRequest__Output): SendInput {
  const faults: string[] = [];
  if (!isPositiveId(request.projectId)) faults.push('project_id: must be a positive integer');
  if (!isPositiveId(request.organizationId)) faults.push('organization_id: must be a positive integer');
  if (!isPositiveId(request.apiKeyId)) faults.push('api_key_id: must be a positive integer');
  let data: unknown = {};
  if (!request.fieldsInvalid) {
    if (!slugPattern.test(request.template)) faults.push('template: must be 1-100 characters of A-Z, a-z, 0-9, _ and -');
    if (request.to === '' || request.to.length > 254 || controlCharacters.test(request.to)) faults.push('to: must be one email address');
    try {
      data = JSON.parse(request.dataJson);
    } catch {
      data = undefined;
    }
    if (typeof data !== 'object' || data === null || Array.isArray(data)) faults.push('data: must be a JSON object');
    faults.push(...labelFaults(request));
    if (request.sendAt !== '' && Number.isNaN(Date.parse(request.sendAt))) faults.push('send_at: must be an RFC 3339 time');
  }
  const key = request.idempotencyKey;
  if (key !== '' && !uuidPattern.test(key)) faults.push('idempotency_key: must be a UUID');
  if (key !== '' && request.fingerprint === '') faults.push('fingerprint: is required with an idempotency key');
  if (!Number.isSafeInteger(request.monthlyQuota) || request.monthlyQuota < 0) faults.push('monthly_quota: must be a non-negative integer');
  if (faults.length > 0) throw new UserError(status.INVALID_ARGUMENT, 'invalid_argument', `invalid send request: ${faults.join('; ')}`, { fields: faults });
  const sendAt = request.fieldsInvalid || request.sendAt === '' ? null : new Date(request.sendAt);
  return { data: data as Record<string, unknown>, idempotencyKey: key === '' ? null : key.toLowerCase(), ...labelsOf(request), sendAt };
}

/** The gateway's field validation refused the body, and no idempotency record answered first; the gateway renders the 422. */
export function fieldsInvalid(): UserError {
  return new UserError(status.INVALID_ARGUMENT, 'fields_invalid', 'the request\'s fields are invalid (check 11)');
}

/**
 * Sends per transaction, and transactions at once. The sends that arrive while a transaction runs wait for it and go
 * together in the next one, so under load a transaction carries many sends and its statements and its commit (one WAL
 * flush) are shared; alone, a send is a batch of one and waits for nothing. Four transactions started whenever fewer
 * ran made each smaller (0.16-0.20 commits per accepted send at saturation against 0.06-0.13 one at a time) for no
 * more sends per second, and PostgreSQL spent about a third more CPU per send (docs/benchmark.md, "a send
 * transaction waits for the one running"). A transaction that has run `stuckAfterMs` is waiting (a lock another
 * transaction holds, a slow disk), not working: the next starts beside it, so that one stuck send never holds every
 * other (a send whose Idempotency-Key is in flight is still answered 409 within that time, not after the first one's
 * wait).
 */
const maxSendsPerBatch = 64;
const concurrentBatches = 4;
/**
 * Several times a transaction's time at saturation: one at a time on a two-core machine, 1,450 sends a second made
 * fewer than 150 commits a second (under 7 ms each).
 */
const stuckAfterMs = 50;
/** Published jobs' outbox rows are deleted together, one statement at a time. */
const maxOutboxDeletesPerStatement = 512;
/**
 * And at most ten such statements a second unless one is full (each is a commit of its own): nobody waits for these
 * deletes, the relay leaves rows alone until OUTBOX_RELAY_MIN_AGE (5 s by default), and one it publishes again before
 * its delete is a copy JetStream drops.
 */
const outboxDeleteSpacingMs = 100;

/** SQLSTATE classes of a failure one send of a batch can cause: data exceptions, constraint violations, rollbacks. */
export const sendSpecificFailure = /^(22|23|40)/;

/** SQLSTATE class 22, data exception: alone in its transaction, a send the database refuses so holds the value at fault. */
const dataException = /^22/;

/** The send's data holds a value PostgreSQL cannot store (U+0000 in a string of its jsonb); the gateway's 422 on `data`. */
export function unstorableData(): UserError {
  return new UserError(status.INVALID_ARGUMENT, 'data_unstorable', 'the data holds a value the database cannot store, such as U+0000');
}

const refused = (reason: unknown): PromiseRejectedResult => ({ status: 'rejected', reason });

/**
 * The sends of one batch on their way through the steps of acceptBatch: a step settles the sends it refuses (or
 * answers, as a replay), and the steps after it see only the sends still open.
 */
class BatchVerdicts {
  readonly sends: readonly Pending[];
  readonly #settled: (PromiseSettledResult<Outcome> | undefined)[];

  constructor(sends: readonly Pending[]) {
    this.sends = sends;
    this.#settled = sends.map(() => undefined);
  }

  send(index: number): Pending {
    return this.sends[index] as Pending;
  }

  /** Indexes of the sends no step has settled yet, in arrival order. */
  open(): number[] {
    return this.sends.flatMap((_, index) => (this.#settled[index] === undefined ? [index] : []));
  }

  refuse(index: number, reason: unknown): void {
    this.#settled[index] = refused(reason);
  }

  answer(index: number, outcome: Outcome): void {
    this.#settled[index] = fulfilled(outcome);
  }

  /** Every send's verdict, once the last step has settled them all. */
  results(): PromiseSettledResult<Outcome>[] {
    return this.#settled.map((result) => result ?? refused(new Error('a send of the batch was left without a verdict')));
  }
}

/** A send whose rows were written (step 4), waiting for the quota's verdict (step 5). */
interface Written {
  readonly index: number;
  readonly messageId: number;
  readonly response: StoredResponse;
  readonly outgoing: OutgoingJob | null;
}

/**
 * The steps of one batch, in one transaction: each statement serves the whole batch, and a refused send leaves
 * nothing behind. The order is the contract's: the idempotency record (check 10) before the fields (11), the
 * template (12) and its data (13), then the suppression list (a 422 on `to`, docs/contract.md "Recipients that must not
 * be mailed"): a suppressed recipient creates nothing and uses no quota; the quota, judged for the contract before all of them by the gateway (check 5), is
 * counted last here, so that the usage rows are locked only until the commit right after.
 */
export async function acceptBatch(client: PoolClient, deps: SendDeps, sends: readonly Pending[]): Promise<PromiseSettledResult<Outcome>[]> {
  const batch = new BatchVerdicts(sends);
  await judgeIdempotencyKeys(client, batch);
  refuseInvalidFields(batch);
  const templates = await judgeTemplates(client, deps, batch);
  await refuseSuppressedRecipients(client, batch);
  const written = await writeAcceptedRows(client, deps, batch, templates);
  await countMonthlyUsage(client, batch, written);
  return batch.results();
}

/**
 * Step 1 (check 10): each Idempotency-Key's lock, taken without waiting (a key another transaction holds, or that an
 * earlier send of this batch holds, is in use: 409), then the live records of the keys held: the same fingerprint is a
 * replay of the stored response, another one a mismatch. A live record the lock's statement saw is final; the keys it
 * saw none for are read again, after the locks (tryLockIdempotencyKeys).
 */
async function judgeIdempotencyKeys(client: PoolClient, batch: BatchVerdicts): Promise<void> {
  const keyed = new Map<string, number>();
  for (const index of batch.open()) {
    const { request, input } = batch.send(index);
    if (input.idempotencyKey === null) continue;
    const id = projectKeyId({ projectId: request.projectId, idempotencyKey: input.idempotencyKey });
    if (keyed.has(id)) batch.refuse(index, idempotencyKeyInUse());
    else keyed.set(id, index);
  }
  if (keyed.size === 0) return;
  const keyOf = (index: number): ProjectKey => ({ projectId: batch.send(index).request.projectId, idempotencyKey: batch.send(index).input.idempotencyKey ?? '' });
  const candidates = [...keyed.values()];
  const judge = (index: number, record: IdempotencyRecord): void => {
    if (record.fingerprint === batch.send(index).request.fingerprint) batch.answer(index, { replay: true, response: record.response as StoredResponse, replayableForMs: record.remainingMs });
    else batch.refuse(index, idempotencyKeyMismatch());
  };
  const locks = await tryLockIdempotencyKeys(client, candidates.map(keyOf));
  const unseen = candidates.filter((index, position) => {
    const lock = locks[position];
    if (!lock?.locked) batch.refuse(index, idempotencyKeyInUse());
    else if (lock.live) judge(index, lock.live);
    return lock?.locked === true && lock.live === undefined;
  });
  // A statement of its own, after the locks: it sees what a request that held one of them committed.
  if (unseen.length === 0) return;
  const records = await findIdempotencyRecords(client, unseen.map(keyOf));
  for (const index of unseen) {
    const record = records.get(projectKeyId(keyOf(index)));
    if (record && !record.expired) judge(index, record);
  }
}

/** Step 2 (check 11): the gateway refused these sends' fields; with their keys judged, nothing is left to decide. */
function refuseInvalidFields(batch: BatchVerdicts): void {
  for (const index of batch.open()) {
    if (batch.send(index).request.fieldsInvalid) batch.refuse(index, fieldsInvalid());
  }
}

/**
 * Step 3 (checks 12-13): each send's template, active, with data that satisfies its declared variables, and a job
 * (data and template) small enough for JetStream.
 */
async function judgeTemplates(client: PoolClient, deps: SendDeps, batch: BatchVerdicts): Promise<Map<number, TemplateRow>> {
  const templateOf = new Map<number, TemplateRow>();
  const open = batch.open();
  if (open.length === 0) return templateOf;
  const wanted = new Map(
    open.map((index) => {
      const { projectId, template } = batch.send(index).request;
      return [templateKey(projectId, template), { projectId, slug: template }];
    }),
  );
  const templates = await findTemplates(client, [...wanted.values()]);
  for (const index of open) {
    const { request, input } = batch.send(index);
    const template = templates.get(templateKey(request.projectId, request.template));
    const refusal = refuseTemplate(deps, request, input, template);
    if (refusal) batch.refuse(index, refusal);
    else if (template) templateOf.set(index, template);
  }
  return templateOf;
}

/** Why a send cannot use its template, if it cannot. */
function refuseTemplate(deps: SendDeps, request: dispatch.SendRequest__Output, input: SendInput, template: TemplateRow | undefined): UserError | undefined {
  if (!template) return new UserError(status.NOT_FOUND, 'template_not_found', `no template "${request.template}" in this project`);
  if (!template.active) return new UserError(status.FAILED_PRECONDITION, 'template_inactive', `template "${request.template}" is not active`);
  const violations = deps.schemas.violations(template, input.data);
  if (violations.length === 0) return jobContentBytes(request.dataJson, template) > deps.maxJobContentBytes ? messageTooLarge(deps.maxJobContentBytes) : undefined;
  // Structured, so that the gateway can tell the caller in its own language.
  const fields = violations.map(encodeViolation);
  return new UserError(status.INVALID_ARGUMENT, 'data_invalid', `data does not match the variables of template "${template.slug}"`, { fields });
}

/** The message's job would not fit in a JetStream message; the limit goes to the gateway to be put in words. */
function messageTooLarge(limit: number): UserError {
  return new UserError(status.RESOURCE_EXHAUSTED, 'payload_too_large', `the message's data and template come to more than the ${limit} bytes a job may carry`, { fields: [String(limit)] });
}

/**
 * Step 4: a recipient on the project's suppression list is refused on `to` with the entry's reason and date (the
 * gateway words it); one lookup of the list's primary key for the whole batch.
 */
async function refuseSuppressedRecipients(client: PoolClient, batch: BatchVerdicts): Promise<void> {
  const open = batch.open();
  const wanted = open.map((index) => ({ projectId: batch.send(index).request.projectId, address: batch.send(index).request.to }));
  const suppressed = await findSuppressions(client, wanted);
  if (suppressed.size === 0) return;
  for (const [position, index] of open.entries()) {
    const { projectId, address } = wanted[position] as { projectId: number; address: string };
    const entry = suppressed.get(suppressionKey(projectId, address));
    if (entry) batch.refuse(index, recipientSuppressed(entry));
  }
}

/** Structured like data_invalid: [reason, date] for the gateway to put in words in the caller's language. */
function recipientSuppressed(entry: Suppression): UserError {
  const since = entry.createdAt.toISOString().slice(0, 10);
  return new UserError(status.FAILED_PRECONDITION, 'recipient_suppressed', `${entry.address} is suppressed (${entry.reason}, since ${since})`, { fields: [entry.reason, since] });
}

/**
 * Step 5: the rows of the sends still standing: messages with their first event (each under a `create` span of its
 * request's trace), idempotency records, outbox rows; a scheduled send's job goes to the schedule instead of the
 * outbox, and waits there for the releaser (no job exists until it is due).
 */
async function writeAcceptedRows(client: PoolClient, deps: SendDeps, batch: BatchVerdicts, templateOf: ReadonlyMap<number, TemplateRow>): Promise<Written[]> {
  const accepted = batch.open();
  if (accepted.length === 0) return [];
  const creations = accepted.map((index) => startCreateSpan({ destination: deps.publisher.subject }, batch.send(index).context));
  const newMessages = accepted.map((index, position): NewMessage => {
    const { request, input } = batch.send(index);
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
      tags: input.tags,
      metadata: input.metadata,
      test: request.test,
      sendAt: input.sendAt,
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
  const jobs: DeliveryJob[] = [];
  const scheduled: ScheduledJob[] = [];
  const written = accepted.map((index, position): Written => {
    const { request, input } = batch.send(index);
    const message = newMessages[position] as NewMessage;
    const row = inserted[position] as { id: number; createdAt: Date };
    const template = templateOf.get(index) as TemplateRow;
    const response: StoredResponse = input.sendAt
      ? { message_id: row.id, status: 'scheduled', celery_task_id: message.celeryTaskId, idempotent_replay: false, send_at: input.sendAt.toISOString() }
      : { message_id: row.id, status: 'queued', celery_task_id: message.celeryTaskId, idempotent_replay: false };
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
      template: { slug: template.slug, version: template.version, subject: template.subject, html: template.html, text: template.text, unsubscribe: template.unsubscribe },
      acceptedAt: row.createdAt.toISOString(),
      ...(request.test ? { test: true } : {}),
    };
    if (input.sendAt) {
      scheduled.push({ job, sendAt: input.sendAt });
      return { index, messageId: row.id, response, outgoing: null };
    }
    jobs.push(job);
    return { index, messageId: row.id, response, outgoing: { job, traceparent: message.traceparent } };
  });
  if (records.length > 0) await saveIdempotencyRecords(client, records, deps.idempotencyTtlMs);
  if (jobs.length > 0) await insertOutboxRows(client, jobs);
  if (scheduled.length > 0) await insertScheduledJobs(client, scheduled);
  return written;
}

/**
 * Step 6 (the quota): the month's usage, per organization, the first sends of the batch counted first; each accepted
 * send learns its organization's count, which the gateway remembers for check 5. Last, so that each organization's
 * usage row stays locked only until the commit right after (concurrent batches wait on it); the rows of a send the
 * quota refuses go again with their message (the foreign keys cascade), unseen by anyone.
 */
async function countMonthlyUsage(client: PoolClient, batch: BatchVerdicts, allWritten: readonly Written[]): Promise<void> {
  // A test key's message never counts (its send was still judged against the plan, check 5, like any other): it is
  // accepted as it is, with no month count for the gateway to remember.
  const written = allWritten.filter(({ index, response, outgoing }) => {
    if (!batch.send(index).request.test) return true;
    batch.answer(index, { replay: false, response, outgoing, organizationAccepted: 0 });
    return false;
  });
  if (written.length === 0) return;
  const perOrganization = new Map<number, { wanted: number; monthlyQuota: number }>();
  for (const { index } of written) {
    const { organizationId, monthlyQuota } = batch.send(index).request;
    const entry = perOrganization.get(organizationId) ?? { wanted: 0, monthlyQuota };
    // Sends of one organization carry the same plan unless it just changed; the strictest quota then applies.
    const strictest = entry.monthlyQuota === 0 ? monthlyQuota : monthlyQuota === 0 ? entry.monthlyQuota : Math.min(entry.monthlyQuota, monthlyQuota);
    perOrganization.set(organizationId, { wanted: entry.wanted + 1, monthlyQuota: strictest });
  }
  const grants = await grantUsage(client, [...perOrganization].map(([organizationId, entry]) => ({ organizationId, ...entry })));
  const left = new Map([...grants].map(([organizationId, grant]) => [organizationId, grant.granted]));
  const overQuota: number[] = [];
  for (const { index, messageId, response, outgoing } of written) {
    const { organizationId } = batch.send(index).request;
    const remaining = left.get(organizationId) ?? 0;
    if (remaining > 0) {
      left.set(organizationId, remaining - 1);
      batch.answer(index, { replay: false, response, outgoing, organizationAccepted: grants.get(organizationId)?.accepted ?? 0 });
      continue;
    }
    batch.refuse(index, new UserError(status.FAILED_PRECONDITION, 'plan_blocked', "the organization's monthly quota is used up"));
    overQuota.push(messageId);
  }
  if (overQuota.length > 0) await deleteMessages(client, overQuota);
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
    if (batch.length === 1 && typeof code === 'string' && dataException.test(code)) throw unstorableData();
    if (batch.length === 1 || typeof code !== 'string' || !sendSpecificFailure.test(code)) throw error;
    deps.logger.warn({ err: error, sends: batch.length }, 'a batch of sends failed; accepting each on its own');
    return Promise.all(batch.map((pending) => acceptInTransaction(deps, [pending]).then(([result]) => result ?? refused(error), refused)));
  }
}

/**
 * A stored 202 body as SendResponse, with the organization's month count when this send was counted (0 for a replay),
 * and how long its key's record stays live from the transaction's start (0 without a key, and for a batch's items).
 */
export const toSendResponse = (stored: StoredResponse, replay: boolean, organizationAccepted: number, replayableForMs = 0): dispatch.SendResponse__Output => ({
  messageId: stored.message_id,
  status: stored.status,
  celeryTaskId: stored.celery_task_id,
  idempotentReplay: replay,
  organizationAccepted,
  sendAt: stored.send_at ?? '',
  replayableForMs,
});

export type SendHandler = (request: dispatch.SendRequest__Output) => Promise<dispatch.SendResponse__Output>;

/** Publishes a committed job; a failure is only logged, since the outbox row stays for the relay. */
export type PublishAccepted = (outgoing: OutgoingJob) => Promise<void>;

/**
 * The publication after commit that Send and SendBatch share: the job, then its outbox row's deletion (batched), which
 * the caller does not wait for.
 */
export function publishAccepted(deps: SendDeps): PublishAccepted {
  const outboxCleaner = new Batcher<number, void>({
    maxBatchSize: maxOutboxDeletesPerStatement,
    concurrency: 1,
    spacingMs: outboxDeleteSpacingMs,
    run: async (messageIds) => {
      await deleteOutboxRows(deps.pool, messageIds);
      return messageIds.map(() => fulfilled(undefined));
    },
  });

  return async function publishDirect(outgoing: OutgoingJob): Promise<void> {
    const { job } = outgoing;
    try {
      await deps.publisher.publish(outgoing, 'direct');
    } catch (error) {
      deps.logger.warn({ err: error, messageId: job.messageId }, 'job not confirmed by JetStream; the outbox relay will publish it');
      return;
    }
    // Not awaited: once JetStream holds the job, the row is only what the relay would publish again (a copy JetStream
    // drops), and the send's answer need not wait for its delete to commit behind the others.
    void outboxCleaner.submit(job.messageId).catch((error: unknown) => {
      deps.logger.warn({ err: error, messageId: job.messageId }, 'published job left in the outbox');
    });
  };
}

export function createSendHandler(deps: SendDeps, publishDirect: PublishAccepted = publishAccepted(deps)): SendHandler {
  const acceptor = new Batcher<Pending, Outcome>({ maxBatchSize: maxSendsPerBatch, concurrency: concurrentBatches, overlapAfterMs: stuckAfterMs, run: (batch) => acceptInTransaction(deps, batch) });

  return async (request) => {
    const input = validate(request);
    // Without a key there is no record to judge before check 11: refused at once, without a transaction.
    if (request.fieldsInvalid && input.idempotencyKey === null) throw fieldsInvalid();
    const outcome = await acceptor.submit({ request, input, context: activeContext() });
    annotateRequestSpan({ [notifyAttributes.messageId]: outcome.response.message_id });
    if (outcome.replay) {
      deps.metrics.messagesReplayed.inc();
      return toSendResponse(outcome.response, true, 0, outcome.replayableForMs);
    }
    deps.metrics.messagesAccepted.inc();
    if (outcome.outgoing) await publishDirect(outcome.outgoing);
    // A new record lives NOTIFY_IDEMPOTENCY_TTL from its transaction's start (saveIdempotencyRecords).
    return toSendResponse(outcome.response, false, outcome.organizationAccepted, input.idempotencyKey === null ? 0 : deps.idempotencyTtlMs);
  };
}
