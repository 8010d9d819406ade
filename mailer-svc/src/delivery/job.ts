// Reading a DeliveryJob off the wire. A job that cannot be read is never retried: the same bytes would fail again.
import type { DeliveryJob } from '@notify/proto';

/**
 * Present when an operator re-queued a failed message (dispatch-svc's dead letters): a new delivery whose attempts
 * are numbered after `attemptBase`, so the events of the earlier delivery can never be taken for its own, and whose
 * age counts from `at`. Written by dispatch-svc/src/outbox/delivery-job.ts; it belongs in proto/src/messaging.ts.
 */
export interface Requeue {
  attemptBase: number;
  at: string;
}

export type MailerJob = DeliveryJob & { requeue?: Requeue };

export type ParsedJob = { ok: true; job: MailerJob } | { ok: false; reason: string; /** Known when the job names a message, so a `failed` event can be recorded. */ messageId?: number };

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const isId = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) > 0;
const isString = (value: unknown): value is string => typeof value === 'string';
const isTimestamp = (value: unknown): value is string => isString(value) && !Number.isNaN(Date.parse(value));
// Control characters in a recipient would let data reach the SMTP envelope or headers unescaped.
const isRecipient = (value: unknown): value is string => isString(value) && value.length > 0 && value.length <= 254 && !/[\u0000-\u001f\u007f,;<>]/.test(value);
const isRequeue = (value: unknown): boolean => value === undefined || (isObject(value) && isId(value.attemptBase) && isTimestamp(value.at));
/** One decoder for every job: without `stream`, decode() keeps no state between calls. `fatal` refuses invalid UTF-8. */
const utf8 = new TextDecoder('utf-8', { fatal: true });

export function parseJob(bytes: Uint8Array): ParsedJob {
  let value: unknown;
  try {
    value = JSON.parse(utf8.decode(bytes));
  } catch {
    return { ok: false, reason: 'malformed job: not UTF-8 JSON' };
  }
  if (!isObject(value)) return { ok: false, reason: 'malformed job: not a JSON object' };
  const messageId = isId(value.messageId) ? value.messageId : undefined;
  const template = value.template;
  const problems = [
    messageId === undefined && 'messageId',
    !isString(value.celeryTaskId) && 'celeryTaskId',
    !isId(value.projectId) && 'projectId',
    !isId(value.organizationId) && 'organizationId',
    !isRecipient(value.to) && 'to',
    !isObject(value.data) && 'data',
    !isTimestamp(value.acceptedAt) && 'acceptedAt',
    !(isObject(template) && isString(template.slug) && isId(template.version) && isString(template.subject) && isString(template.html) && isString(template.text)) &&
      'template',
    !isRequeue(value.requeue) && 'requeue',
  ].filter((problem): problem is string => problem !== false);
  if (problems.length > 0) {
    const reason = `malformed job: invalid ${problems.join(', ')}`;
    return messageId === undefined ? { ok: false, reason } : { ok: false, reason, messageId };
  }
  return { ok: true, job: value as unknown as MailerJob };
}

/** Attempts of this delivery are numbered after this: 0 for a first delivery. */
export function attemptBase(job: MailerJob): number {
  return job.requeue?.attemptBase ?? 0;
}

/** When this delivery began: the message's acceptance, or its re-queueing. Its age bounds the retries. */
export function deliveryStart(job: MailerJob): number {
  return Date.parse(job.requeue?.at ?? job.acceptedAt);
}
