// Single sends carried in SendMany calls, against a stand-in of dispatch-svc on the platform's GrpcServer: each item's
// answer becomes exactly what its own Send call's would have (the stand-in serves both with one judge, so the two are
// compared), a failed call fails each of its sends as Send would have, and a queued send keeps its own deadline.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { createRegistry, GrpcClient, type GrpcServer, OperationalError, type Registry, RemoteError, UserError } from '@notify/platform';
import { type dispatch, dispatchProto } from '@notify/proto';
import { ApiError, FieldErrors } from '../errors/api-error.ts';
import { text } from '../i18n/messages.ts';
import { gatewayCaller } from '../testing/serve-app.ts';
import { sendManyItem, standIn, standInServer } from '../testing/stand-in.ts';
import { type DispatchClient, dispatchSend, refusalOf } from './dispatch.ts';
import { type SendDispatcher, sendDispatcher, sendManyItems } from './send-many.ts';

/** Sends per SendMany call the stand-ins received, in order. */
const calls: number[] = [];
const servers: GrpcServer[] = [];
const clients: DispatchClient[] = [];

/** dispatch-svc's verdict on a send, chosen by its template. */
async function judge(request: dispatch.SendRequest__Output): Promise<dispatch.SendResponse__Output> {
  const refusals: Record<string, () => Error> = {
    missing: () => new UserError(status.NOT_FOUND, 'template_not_found', 'no such template'),
    inactive: () => new UserError(status.FAILED_PRECONDITION, 'template_inactive', 'inactive'),
    strict: () =>
      new UserError(status.INVALID_ARGUMENT, 'data_invalid', 'data refused', { fields: [JSON.stringify({ path: 'name', keyword: 'required', params: {} })] }),
    unstorable: () => new UserError(status.INVALID_ARGUMENT, 'data_unstorable', 'U+0000'),
    suppressed: () => new UserError(status.FAILED_PRECONDITION, 'recipient_suppressed', 'suppressed', { fields: ['hard_bounce', '2026-11-25'] }),
    mismatch: () => new UserError(status.FAILED_PRECONDITION, 'idempotency_key_mismatch', 'other body'),
    busy: () => new UserError(status.ABORTED, 'idempotency_key_in_use', 'in flight'),
    quota: () => new UserError(status.FAILED_PRECONDITION, 'plan_blocked', 'quota used up'),
    fields: () => new UserError(status.INVALID_ARGUMENT, 'fields_invalid', 'fields refused by the gateway'),
    down: () => new OperationalError('PostgreSQL is down'),
    broken: () => new Error('a bug in dispatch-svc'),
  };
  if (request.template === 'sleepy') await new Promise((resolve) => setTimeout(resolve, 3_000));
  const refusal = refusals[request.template];
  if (refusal) throw refusal();
  return {
    messageId: Number(request.to.split('@')[0]),
    status: 'queued',
    celeryTaskId: `task-${request.to}`,
    idempotentReplay: false,
    organizationAccepted: 1,
    sendAt: '',
    replayableForMs: 0,
  };
}

async function serve(handlers: Partial<Parameters<typeof standIn<typeof dispatchProto.DispatchService.service>>[1]>): Promise<string> {
  const server = standInServer();
  server.add(dispatchProto.DispatchService.service, standIn(dispatchProto.DispatchService.service, handlers), [gatewayCaller]);
  servers.push(server);
  return `127.0.0.1:${await server.listen(0, '127.0.0.1')}`;
}

const sendMany = async (request: dispatch.SendManyRequest__Output): Promise<dispatch.SendManyResponse__Output> => {
  calls.push(request.items.length);
  return { results: await Promise.all(request.items.map((item) => sendManyItem(item, judge))) };
};

let address: string;
before(async () => {
  address = await serve({ SendMany: sendMany, Send: judge });
});

after(async () => {
  for (const client of clients) client.close();
  await Promise.all(servers.map((server) => server.close(100)));
});

function client(at: string, deadlineMs = 2_000): DispatchClient {
  const made = new GrpcClient(dispatchProto.DispatchService.service, at, { token: gatewayCaller.token, deadlineMs });
  clients.push(made);
  return made;
}

function dispatcher(at: string, options: { deadlineMs?: number; calls?: number; registry?: Registry } = {}): SendDispatcher {
  return sendDispatcher(client(at, options.deadlineMs), {
    maxItems: 64,
    calls: options.calls ?? 4,
    registry: options.registry ?? createRegistry('send-many-test'),
  });
}

const request = (template: string, id: number): dispatch.SendRequest => ({
  projectId: 1,
  organizationId: 2,
  apiKeyId: 3,
  template,
  to: `${id}@example.com`,
  dataJson: '{}',
  monthlyQuota: 0,
  fieldsInvalid: template === 'fields',
});

/** What the caller would be answered, comparable across the two paths. */
function answered(outcome: unknown): unknown {
  if (outcome instanceof ApiError) return { status: outcome.status, code: outcome.code, detail: outcome.detail, headers: outcome.headers };
  if (outcome instanceof FieldErrors) return { fields: [...outcome.fields] };
  if (outcome instanceof RemoteError) return { unexpected: true, status: outcome.status, reason: outcome.reason, fields: outcome.fields };
  return outcome;
}

const ownFieldErrors = FieldErrors.of('to', text('to.email'));
const templates = ['welcome', 'missing', 'inactive', 'strict', 'unstorable', 'suppressed', 'mismatch', 'busy', 'quota', 'fields', 'down', 'broken', 'welcome'];

test("the sends that arrive together share one SendMany call, each answered exactly as its own Send call's answer maps", async () => {
  const registry = createRegistry('send-many-items');
  const sends = dispatcher(address, { registry });
  const unary = client(address);
  const before = calls.length;
  const batched = await Promise.allSettled(templates.map((template, id) => dispatchSend(sends, request(template, id), ownFieldErrors)));
  assert.deepEqual(calls.slice(before), [templates.length]);

  for (const [id, template] of templates.entries()) {
    const own = await unary.call('Send', request(template, id)).then(
      (response) => ({
        accepted: { message_id: response.messageId, status: response.status, celery_task_id: response.celeryTaskId, idempotent_replay: false },
        organizationAccepted: 1,
        replayableForMs: 0,
      }),
      (error: unknown) => answered(refusalOf(error, ownFieldErrors)),
    );
    const outcome = batched[id] as PromiseSettledResult<unknown>;
    assert.deepEqual(outcome.status === 'fulfilled' ? outcome.value : answered(outcome.reason), own, template);
  }
  // A few spot checks of what that mapping is, so that the comparison cannot pass on two wrong answers.
  assert.deepEqual(answered((batched[1] as PromiseRejectedResult).reason), {
    status: 404,
    code: 'template_not_found',
    detail: text('template_not_found'),
    headers: {},
  });
  assert.equal((batched[9] as PromiseRejectedResult).reason, ownFieldErrors);
  assert.equal(((batched[10] as PromiseRejectedResult).reason as ApiError).status, 503);
  assert.deepEqual(answered((batched[11] as PromiseRejectedResult).reason), { unexpected: true, status: status.INTERNAL, reason: 'internal', fields: [] });
  assert.equal((batched[12] as PromiseFulfilledResult<{ accepted: { message_id: number } }>).value.accepted.message_id, 12);

  const metric = await registry.getSingleMetricAsString('notify_gateway_send_many_items');
  assert.match(metric, /^notify_gateway_send_many_items_count\{[^}]*\} 1$/m);
  assert.match(metric, new RegExp(`^notify_gateway_send_many_items_sum\\{[^}]*\\} ${templates.length}$`, 'm'));
});

test('alone, a send is a call of its own; while every call is in flight, the sends that arrive go together in the next', async () => {
  const sends = dispatcher(address, { calls: 1 });
  const before = calls.length;
  await dispatchSend(sends, request('welcome', 1));
  const first = dispatchSend(sends, request('welcome', 2));
  await new Promise((resolve) => setImmediate(resolve));
  await Promise.all([first, ...[3, 4, 5].map((id) => dispatchSend(sends, request('welcome', id)))]);
  assert.deepEqual(calls.slice(before), [1, 1, 3]);
});

test('a failed SendMany call fails each of its sends as a failed Send would: dispatch-svc down is 503 for every one', async () => {
  const down = await serve({
    SendMany: async () => {
      throw new OperationalError('no database');
    },
  });
  const sends = dispatcher(down);
  const outcomes = await Promise.allSettled(['welcome', 'missing', 'welcome'].map((template, id) => dispatchSend(sends, request(template, id))));
  for (const outcome of outcomes) {
    assert.equal(outcome.status, 'rejected');
    assert.deepEqual(answered(outcome.reason), {
      status: 503,
      code: 'service_unavailable',
      detail: text('service_unavailable'),
      headers: { 'Retry-After': '5' },
    });
  }
});

test('a send queued behind a call in flight keeps its own deadline, its time queued included', async () => {
  const sends = dispatcher(address, { deadlineMs: 1_000, calls: 1 });
  const first = dispatchSend(sends, request('sleepy', 1)).catch((error: unknown) => error);
  await new Promise((resolve) => setTimeout(resolve, 500));
  const queuedAt = performance.now();
  const queued = await dispatchSend(sends, request('sleepy', 2)).catch((error: unknown) => error);
  const waited = performance.now() - queuedAt;
  for (const outcome of [await first, queued])
    assert.deepEqual(answered(outcome), { status: 503, code: 'service_unavailable', detail: text('service_unavailable'), headers: { 'Retry-After': '5' } });
  // Its own Send call would have failed 1 s after it was made; a fresh deadline once it left the queue, 1.5 s.
  assert.ok(waited >= 950 && waited < 1_300, `the queued send failed after ${waited} ms`);
  assert.equal(((queued as ApiError).cause as RemoteError).status, status.DEADLINE_EXCEEDED);
});

test('a dispatch-svc without SendMany (a release before it, during an upgrade) still gets each send, as a Send call of its own', async () => {
  const older = await serve({ Send: judge });
  const sends = dispatcher(older);
  const [accepted, missing] = await Promise.allSettled([dispatchSend(sends, request('welcome', 7)), dispatchSend(sends, request('missing', 8))]);
  assert.equal(accepted?.status === 'fulfilled' && accepted.value.accepted.message_id, 7);
  assert.equal(missing?.status === 'rejected' && (missing.reason as ApiError).status, 404);
});

test('a SendMany call carries no more sends than bodies of the largest size fit in its gRPC message', () => {
  assert.equal(sendManyItems(64, 262_144, 16 * 1024 * 1024), 64);
  assert.equal(sendManyItems(64, 1024 * 1024, 16 * 1024 * 1024), 16);
  assert.equal(sendManyItems(64, 16 * 1024 * 1024, 16 * 1024 * 1024), 1);
});
