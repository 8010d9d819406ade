// Status reads carried in GetMessages calls, against a stand-in of dispatch-svc: the reads that arrive together share
// one call, each answered exactly as its own GetMessage call (the stand-in serves both with one store, so the two are
// compared); a dispatch-svc without GetMessages (during a rolling upgrade) gets each read as a call of its own.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { createRegistry, GrpcClient, type GrpcServer, itemRefusal, RemoteError, toGrpcFailure, UserError } from '@notify/platform';
import { type dispatch, dispatchProto } from '@notify/proto';
import type { DispatchClient } from '../send/dispatch.ts';
import { gatewayCaller } from '../testing/serve-app.ts';
import { standIn, standInServer } from '../testing/stand-in.ts';
import { messageReader } from './get-many.ts';

const servers: GrpcServer[] = [];
const clients: DispatchClient[] = [];
/** Reads per GetMessages call the stand-ins received, in order. */
const calls: number[] = [];

/** dispatch-svc's store: message 1-9 of project 1, organization 2. */
async function read(request: dispatch.GetMessageRequest__Output): Promise<dispatch.Message__Output> {
  if (request.projectId !== 1 || request.organizationId !== 2 || request.messageId < 1 || request.messageId > 9) {
    throw new UserError(status.NOT_FOUND, 'message_not_found', `no message ${request.messageId}`);
  }
  return {
    id: request.messageId,
    projectId: 1,
    organizationId: 2,
    template: 'welcome',
    templateVersion: 1,
    to: `${request.messageId}@example.com`,
    state: 'sent',
    celeryTaskId: 'task',
    idempotencyKey: '',
    attempts: 1,
    lastSmtpReply: '250 OK',
    failureReason: '',
    createdAt: '2026-11-26T00:00:00.000Z',
    updatedAt: '2026-11-26T00:00:01.000Z',
    events: [],
    traceId: '',
    tags: [],
    metadata: {},
    test: false,
    sendAt: '',
  };
}

async function getMessages(request: dispatch.GetMessagesRequest__Output): Promise<dispatch.GetMessagesResponse__Output> {
  calls.push(request.items.length);
  const results = await Promise.all(
    request.items.map((item) =>
      read(item.get as dispatch.GetMessageRequest__Output).then(
        (found): dispatch.GetMessageResult__Output => ({ found, outcome: 'found' }),
        (error: unknown): dispatch.GetMessageResult__Output => ({ refused: itemRefusal(toGrpcFailure(error)), outcome: 'refused' }),
      ),
    ),
  );
  return { results };
}

async function serve(handlers: Parameters<typeof standIn<typeof dispatchProto.DispatchService.service>>[1]): Promise<DispatchClient> {
  const server = standInServer();
  server.add(dispatchProto.DispatchService.service, standIn(dispatchProto.DispatchService.service, handlers), [gatewayCaller]);
  servers.push(server);
  const client = new GrpcClient(dispatchProto.DispatchService.service, `127.0.0.1:${await server.listen(0, '127.0.0.1')}`, {
    token: gatewayCaller.token,
    deadlineMs: 2_000,
  });
  clients.push(client);
  return client;
}

let client: DispatchClient;
before(async () => {
  client = await serve({ GetMessages: getMessages, GetMessage: read });
});

after(async () => {
  for (const made of clients) made.close();
  await Promise.all(servers.map((server) => server.close(100)));
});

const request = (messageId: number, projectId = 1): dispatch.GetMessageRequest => ({ projectId, organizationId: 2, messageId });

/** What a read came to, comparable across the two paths. */
const outcomeOf = (settled: PromiseSettledResult<dispatch.Message__Output>): unknown =>
  settled.status === 'fulfilled'
    ? settled.value
    : settled.reason instanceof RemoteError
      ? { status: settled.reason.status, reason: settled.reason.reason }
      : settled.reason;

test("the reads that arrive together share one GetMessages call, each answered exactly as its own GetMessage call's", async () => {
  const registry = createRegistry('get-messages-items');
  const reader = messageReader(client, registry);
  const reads = [request(1), request(2, 7), request(3), request(42), request(9)];
  const before = calls.length;
  const batched = await Promise.allSettled(reads.map((read) => reader.call(read)));
  assert.deepEqual(calls.slice(before), [reads.length]);
  for (const [index, read] of reads.entries()) {
    const [own] = await Promise.allSettled([client.call('GetMessage', read)]);
    assert.deepEqual(
      outcomeOf(batched[index] as PromiseSettledResult<dispatch.Message__Output>),
      outcomeOf(own as PromiseSettledResult<dispatch.Message__Output>),
      `read ${index}`,
    );
  }
  // Spot checks, so that the comparison cannot pass on two wrong answers.
  assert.equal((batched[0] as PromiseFulfilledResult<dispatch.Message__Output>).value.to, '1@example.com');
  assert.deepEqual(outcomeOf(batched[1] as PromiseSettledResult<dispatch.Message__Output>), { status: status.NOT_FOUND, reason: 'message_not_found' });
  const metric = await registry.getSingleMetricAsString('notify_gateway_get_messages_items');
  assert.match(metric, new RegExp(`^notify_gateway_get_messages_items_sum\\{[^}]*\\} ${reads.length}$`, 'm'));
});

test('a dispatch-svc without GetMessages (a release before it, during an upgrade) still answers each read, as a GetMessage call of its own', async () => {
  const older = await serve({ GetMessage: read });
  const reader = messageReader(older, createRegistry('get-messages-older'));
  const before = calls.length;
  const [found, missing] = await Promise.allSettled([reader.call(request(4)), reader.call(request(10))]);
  assert.equal(found?.status === 'fulfilled' && found.value.id, 4);
  assert.deepEqual(missing && outcomeOf(missing), { status: status.NOT_FOUND, reason: 'message_not_found' });
  assert.equal(calls.length, before, 'no GetMessages call reached a stand-in');
});
