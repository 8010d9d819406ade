// Reading a DeliveryJob off the wire. A job that cannot be read is never retried: the same bytes would fail again.
import type { DeliveryJob } from '@notify/proto';

export type ParsedJob = { ok: true; job: DeliveryJob } | { ok: false; reason: string; /** Known when the job names a message, so a `failed` event can be recorded. */ messageId?: number };

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const isId = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) > 0;
const isString = (value: unknown): value is string => typeof value === 'string';
// Control characters in a recipient would let data reach the SMTP envelope or headers unescaped.
const isRecipient = (value: unknown): value is string => isString(value) && value.length > 0 && value.length <= 254 && !/[\u0000-\u001f\u007f,;<>]/.test(value);

export function parseJob(bytes: Uint8Array): ParsedJob {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
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
    !(isString(value.acceptedAt) && !Number.isNaN(Date.parse(value.acceptedAt))) && 'acceptedAt',
    !(isObject(template) && isString(template.slug) && isId(template.version) && isString(template.subject) && isString(template.html) && isString(template.text)) &&
      'template',
  ].filter((problem): problem is string => problem !== false);
  if (problems.length > 0) {
    const reason = `malformed job: invalid ${problems.join(', ')}`;
    return messageId === undefined ? { ok: false, reason } : { ok: false, reason, messageId };
  }
  return { ok: true, job: value as unknown as DeliveryJob };
}
