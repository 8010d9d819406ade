// DispatchService.Send: one transaction writes the message, its idempotency record and its outbox row, and counts it
// against the organization's monthly quota; after commit the job is published directly, and the outbox relay covers
// any publish that did not get confirmed.
import { randomUUID } from 'node:crypto';
import { status } from '@grpc/grpc-js';
import { UserError, type Logger } from '@notify/platform';
import { withTransaction, type Pool, type PoolClient } from '@notify/platform/database';
import type { DeliveryJob, dispatch } from '@notify/proto';
import { idempotencyKeyInUse, idempotencyKeyMismatch } from '../idempotency/idempotency-refusals.ts';
import { deleteIdempotencyRecord, findIdempotencyRecord, insertIdempotencyRecord, tryLockIdempotencyKey, type StoredResponse } from '../idempotency/idempotency-store.ts';
import type { DispatchMetrics } from '../metrics.ts';
import type { JobPublisher } from '../outbox/job-publisher.ts';
import { deleteOutboxRow, insertOutboxRow } from '../outbox/outbox-store.ts';
import { findTemplate, slugPattern } from '../templates/template-store.ts';
import { encodeViolation, type VariablesSchemas } from '../templates/variables-schema.ts';
import { countAcceptedMessage } from '../usage/usage-store.ts';
import { insertMessage } from './message-store.ts';

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

type Outcome = { readonly replay: true; readonly response: StoredResponse } | { readonly replay: false; readonly response: StoredResponse; readonly job: DeliveryJob };

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

/** Steps 1-4 of a send, inside one transaction: idempotency, template, the three rows, then the month's usage. */
async function accept(client: PoolClient, deps: SendDeps, request: dispatch.SendRequest__Output, input: SendInput): Promise<Outcome> {
  const { projectId } = request;
  if (input.idempotencyKey !== null) {
    if (!(await tryLockIdempotencyKey(client, projectId, input.idempotencyKey))) throw idempotencyKeyInUse();
    const record = await findIdempotencyRecord(client, projectId, input.idempotencyKey);
    if (record && !record.expired) {
      if (record.fingerprint === request.fingerprint) return { replay: true, response: record.response };
      throw idempotencyKeyMismatch();
    }
    if (record) await deleteIdempotencyRecord(client, projectId, input.idempotencyKey);
  }

  const template = await findTemplate(client, projectId, request.template);
  if (!template) throw new UserError(status.NOT_FOUND, 'template_not_found', `no template "${request.template}" in this project`);
  if (!template.active) throw new UserError(status.FAILED_PRECONDITION, 'template_inactive', `template "${request.template}" is not active`);
  const violations = deps.schemas.violations(template, input.data);
  if (violations.length > 0) {
    // Structured, so that the gateway can tell the caller in its own language.
    const fields = violations.map(encodeViolation);
    throw new UserError(status.INVALID_ARGUMENT, 'data_invalid', `data does not match the variables of template "${template.slug}"`, { fields });
  }

  const celeryTaskId = randomUUID();
  const message = await insertMessage(client, {
    projectId,
    organizationId: request.organizationId,
    apiKeyId: request.apiKeyId,
    templateId: template.id,
    templateSlug: template.slug,
    templateVersion: template.version,
    recipient: request.to,
    data: input.data,
    celeryTaskId,
    idempotencyKey: input.idempotencyKey,
  });
  const response: StoredResponse = { message_id: message.id, status: 'queued', celery_task_id: celeryTaskId, idempotent_replay: false };
  if (input.idempotencyKey !== null) {
    await insertIdempotencyRecord(client, {
      projectId,
      idempotencyKey: input.idempotencyKey,
      fingerprint: request.fingerprint,
      messageId: message.id,
      response,
      ttlMs: deps.idempotencyTtlMs,
    });
  }
  const job: DeliveryJob = {
    messageId: message.id,
    celeryTaskId,
    projectId,
    organizationId: request.organizationId,
    to: request.to,
    data: input.data,
    template: { slug: template.slug, version: template.version, subject: template.subject, html: template.html, text: template.text },
    acceptedAt: message.createdAt.toISOString(),
  };
  await insertOutboxRow(client, job);
  // Last, so the organization's usage row stays locked only for the commit; refusing rolls back the rows above.
  if (!(await countAcceptedMessage(client, request.organizationId, request.monthlyQuota))) {
    throw new UserError(status.FAILED_PRECONDITION, 'plan_blocked', "the organization's monthly quota is used up");
  }
  return { replay: false, response, job };
}

/** Publishes a committed job; a failure is only logged, since the outbox row stays for the relay. */
async function publishDirect(deps: SendDeps, job: DeliveryJob): Promise<void> {
  try {
    await deps.publisher.publish(job, 'direct');
  } catch (error) {
    deps.logger.warn({ err: error, messageId: job.messageId }, 'job not confirmed by JetStream; the outbox relay will publish it');
    return;
  }
  try {
    await deleteOutboxRow(deps.pool, job.messageId);
  } catch (error) {
    // The relay will publish it again; JetStream drops the duplicate within its window.
    deps.logger.warn({ err: error, messageId: job.messageId }, 'published job left in the outbox');
  }
}

/** A stored 202 body as SendResponse; CheckIdempotency answers replays with it too. */
export const toSendResponse = (stored: StoredResponse, replay: boolean): dispatch.SendResponse__Output => ({
  messageId: stored.message_id,
  status: stored.status,
  celeryTaskId: stored.celery_task_id,
  idempotentReplay: replay,
});

export async function send(deps: SendDeps, request: dispatch.SendRequest__Output): Promise<dispatch.SendResponse__Output> {
  const input = validate(request);
  const outcome = await withTransaction(deps.pool, (client) => accept(client, deps, request, input));
  if (outcome.replay) {
    deps.metrics.messagesReplayed.inc();
    return toSendResponse(outcome.response, true);
  }
  deps.metrics.messagesAccepted.inc();
  await publishDirect(deps, outcome.job);
  return toSendResponse(outcome.response, false);
}
