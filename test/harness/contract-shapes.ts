// The response shapes docs/contract.md allows, as assertions shared by the contract suites: each names the response it
// looked at, so a failure shows what the gateway actually answered.
import assert from 'node:assert/strict';
import type pg from 'pg';
import type { HttpResult } from './system.ts';

export const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const snakeCase = /^[a-z]+(?:_[a-z]+)*$/;

function show(response: HttpResult): string {
  return `${response.status} ${response.text}`;
}

/** 401 and 429: exactly `{detail}` with a non-empty text. */
export function assertDetailOnly(response: HttpResult, status: 401 | 429): void {
  assert.equal(response.status, status, show(response));
  assert.deepEqual(Object.keys(response.body), ['detail'], show(response));
  assert.equal(typeof response.body.detail, 'string', show(response));
  assert.notEqual(response.body.detail, '', show(response));
}

/** 401 with the challenge naming the only scheme the API accepts. */
export function assertUnauthenticated(response: HttpResult): void {
  assertDetailOnly(response, 401);
  assert.equal(response.headers.get('www-authenticate'), 'Api-Key', show(response));
}

/** Every other error status: exactly `{detail, code}` with the given code; 5xx adds `request_id`, equal to X-Request-ID. */
export function assertCoded(response: HttpResult, status: number, code: string): void {
  assert.equal(response.status, status, show(response));
  const keys = status >= 500 ? ['code', 'detail', 'request_id'] : ['code', 'detail'];
  assert.deepEqual(Object.keys(response.body).sort(), keys, show(response));
  assert.equal(response.body.code, code, show(response));
  assert.equal(typeof response.body.detail, 'string', show(response));
  assert.notEqual(response.body.detail, '', show(response));
  if (status >= 500) assert.equal(response.body.request_id, response.headers.get('x-request-id'), show(response));
}

/** 422: exactly the given fields, each an array of at least one non-empty string. */
export function assertFieldErrors(response: HttpResult, fields: readonly string[]): void {
  assert.equal(response.status, 422, show(response));
  assert.deepEqual(Object.keys(response.body).sort(), [...fields].sort(), show(response));
  for (const field of fields) {
    const messages = response.body[field];
    assert.ok(Array.isArray(messages) && messages.length > 0, `${field}: ${show(response)}`);
    for (const message of messages) assert.ok(typeof message === 'string' && message.length > 0, `${field}: ${show(response)}`);
  }
}

/** 202 with the seed's four fields and nothing else. */
export function assertAccepted(response: HttpResult): void {
  assert.equal(response.status, 202, show(response));
  assert.deepEqual(Object.keys(response.body).sort(), ['celery_task_id', 'idempotent_replay', 'message_id', 'status'], show(response));
  assert.ok(Number.isInteger(response.body.message_id), show(response));
  assert.equal(response.body.status, 'queued', show(response));
  assert.match(String(response.body.celery_task_id), uuidPattern);
  assert.equal(typeof response.body.idempotent_replay, 'boolean', show(response));
}

/** 202 for a scheduled send: the seed's four fields, status `scheduled`, and `send_at` (RFC 3339, UTC). */
export function assertScheduled(response: HttpResult): void {
  assert.equal(response.status, 202, show(response));
  assert.deepEqual(Object.keys(response.body).sort(), ['celery_task_id', 'idempotent_replay', 'message_id', 'send_at', 'status'], show(response));
  assert.ok(Number.isInteger(response.body.message_id), show(response));
  assert.equal(response.body.status, 'scheduled', show(response));
  assert.match(String(response.body.celery_task_id), uuidPattern);
  assert.equal(typeof response.body.idempotent_replay, 'boolean', show(response));
  assert.match(String(response.body.send_at), /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/, show(response));
}

/** Headers every response carries: X-Request-ID (the caller's sane one, else a UUID) and Cache-Control: no-store. */
export function assertEveryResponseHeaders(response: HttpResult, sentRequestId?: string): void {
  const requestId = response.headers.get('x-request-id');
  if (sentRequestId === undefined) assert.match(requestId ?? '', uuidPattern, `X-Request-ID of ${show(response)}`);
  else assert.equal(requestId, sentRequestId, `X-Request-ID of ${show(response)}`);
  assert.equal(response.headers.get('cache-control'), 'no-store', `Cache-Control of ${show(response)}`);
}

/**
 * Why a response matches none of the contract's shapes, or undefined when it matches one: 202 with exactly the four
 * fields; 401 and 429 exactly `{detail}`; 422 field -> strings; any other 4xx `{detail, code}` with a snake_case code.
 * A 5xx is never acceptable here (the callers of this check keep every dependency up).
 */
export function contractShapeProblem(status: number, body: unknown): string | undefined {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return 'the body is not a JSON object';
  const record = body as Record<string, unknown>;
  const keys = Object.keys(record).sort().join(',');
  // A batch's answer (POST /api/v1/send/batch/).
  if (status === 200 && keys === 'results') return batchResultsProblem(record.results);
  if (status === 202) {
    // A scheduled send (send_at) adds its time to the seed's four fields, and says so in its status.
    const scheduled = keys === 'celery_task_id,idempotent_replay,message_id,send_at,status';
    if (keys !== 'celery_task_id,idempotent_replay,message_id,status' && !scheduled) return `202 with keys ${keys}`;
    const state = scheduled ? record.status === 'scheduled' && !Number.isNaN(Date.parse(String(record.send_at))) : record.status === 'queued';
    return Number.isInteger(record.message_id) && state && uuidPattern.test(String(record.celery_task_id)) && typeof record.idempotent_replay === 'boolean'
      ? undefined
      : '202 with wrong field types';
  }
  // A message read (GET /api/v1/messages/{id}/), or canceled (DELETE: the message, now canceled).
  if (status === 200)
    return Number.isInteger(record.message_id) && typeof record.status === 'string' && Array.isArray(record.events) ? undefined : `200 with ${keys}`;
  if (status === 401 || status === 429) return keys === 'detail' && typeof record.detail === 'string' ? undefined : `${status} with keys ${keys}`;
  if (status === 422) {
    if (keys === '') return '422 without fields';
    const fine = Object.values(record).every(
      (messages) => Array.isArray(messages) && messages.length > 0 && messages.every((message) => typeof message === 'string'),
    );
    return fine ? undefined : '422 whose values are not arrays of strings';
  }
  if (status >= 400 && status < 500) {
    if (keys !== 'code,detail') return `${status} with keys ${keys}`;
    return typeof record.detail === 'string' && typeof record.code === 'string' && snakeCase.test(record.code)
      ? undefined
      : `${status} with a malformed detail or code`;
  }
  return `status ${status} is not one the contract allows here`;
}

const isMessages = (messages: unknown): boolean =>
  Array.isArray(messages) && messages.length > 0 && messages.every((message) => typeof message === 'string' && message !== '');

/**
 * Why the `results` of a batch's 200 match none of its entry shapes (docs/integrators.md "Batch sends"), or undefined:
 * entries in order from index 0; 202 with a send's 202 fields (`status` named `message_status`); a refusal with
 * `errors` (field -> strings), a snake_case `code` unless 422, and `retry_after` (seconds) exactly on 429.
 */
export function batchResultsProblem(results: unknown): string | undefined {
  if (!Array.isArray(results) || results.length === 0 || results.length > 500) return 'results is not a list of 1-500 entries';
  for (const [position, entry] of results.entries()) {
    if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) return `entry ${position} is not an object`;
    const record = entry as Record<string, unknown>;
    const keys = Object.keys(record).sort().join(',');
    if (record.index !== position) return `entry ${position} has index ${String(record.index)}`;
    if (record.status === 202) {
      // An item with send_at is accepted `scheduled` and carries its time, as a scheduled send's 202 does.
      const scheduled = keys === 'celery_task_id,idempotent_replay,index,message_id,message_status,send_at,status';
      if (keys !== 'celery_task_id,idempotent_replay,index,message_id,message_status,status' && !scheduled) return `202 entry with keys ${keys}`;
      const state = scheduled ? record.message_status === 'scheduled' && !Number.isNaN(Date.parse(String(record.send_at))) : record.message_status === 'queued';
      const fine =
        Number.isInteger(record.message_id) && state && uuidPattern.test(String(record.celery_task_id)) && typeof record.idempotent_replay === 'boolean';
      if (!fine) return '202 entry with wrong field types';
      continue;
    }
    const errors = record.errors;
    if (
      errors === null ||
      typeof errors !== 'object' ||
      Array.isArray(errors) ||
      Object.keys(errors).length === 0 ||
      !Object.values(errors).every(isMessages)
    ) {
      return `entry ${position} (${String(record.status)}) without field errors`;
    }
    const expected =
      record.status === 422 ? 'errors,index,status' : record.status === 429 ? 'code,errors,index,retry_after,status' : 'code,errors,index,status';
    if (![403, 404, 413, 422, 429].includes(record.status as number) || keys !== expected)
      return `entry ${position}: status ${String(record.status)} with keys ${keys}`;
    if (record.code !== undefined && !snakeCase.test(String(record.code))) return `entry ${position} with a malformed code`;
    if (record.status === 429 && !(Number.isInteger(record.retry_after) && (record.retry_after as number) >= 1))
      return `429 entry ${position} without retry_after`;
  }
  return undefined;
}

/**
 * Rows a send writes synchronously; a refused request must leave both counts unchanged. (Outbox rows and message
 * events change later, as earlier accepted messages are delivered, so they cannot be compared.)
 */
export async function writtenRows(db: pg.Pool): Promise<{ messages: number; idempotency: number }> {
  const { rows } = await db.query<{ messages: number; idempotency: number }>(
    'SELECT (SELECT count(*)::int FROM messages) AS messages, (SELECT count(*)::int FROM idempotency_keys) AS idempotency',
  );
  const counts = rows[0];
  if (!counts) throw new Error('no counts');
  return counts;
}
