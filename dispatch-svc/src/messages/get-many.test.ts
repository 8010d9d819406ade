// GetMessages, the gateway's status reads that arrived together: each item answered exactly as its own GetMessage call,
// the messages of all of them read in one statement, each counted as a GetMessage call; a malformed call refused whole.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { GrpcClient } from '@notify/platform';
import type { Pool } from '@notify/platform/database';
import { type dispatch, dispatchProto } from '@notify/proto';
import { plannedAfterWarmUp } from '@notify/test/harness/prepared-plans.ts';
import { assertRefused } from '@notify/test/harness/refusal.ts';
import { applyDeliveryEvent } from '../events/event-store.ts';
import { type Harness, startHarness } from '../testing/harness.ts';
import { messageReadHandlers } from './get-many.ts';
import { getMessages } from './queries.ts';

let h: Harness;
const ids: number[] = [];
let scope: { projectId: number; organizationId: number };

before(async () => {
  h = await startHarness();
  scope = { projectId: h.ids.projectId, organizationId: h.ids.organizationId };
  await h.admin.call('PutTemplate', { projectId: h.ids.projectId, slug: 'welcome', subject: 'Hi', text: 'Hi', active: true });
  for (const to of ['read0@example.com', 'read1@example.com']) ids.push((await h.dispatch.call('Send', h.sendRequest({ to }))).messageId);
  const occurredAt = new Date().toISOString();
  await applyDeliveryEvent(h.pool, { messageId: ids[0] as number, state: 'sending', attempt: 1, occurredAt });
  await applyDeliveryEvent(h.pool, { messageId: ids[0] as number, state: 'sent', attempt: 1, occurredAt, smtpCode: 250, smtpResponse: '250 OK' });
});

after(() => h.close());

/** Each result as the found message's id or its refusal's code and reason. */
const verdicts = (results: readonly dispatch.GetMessageResult__Output[]): string[] =>
  results.map((result) => (result.found ? `found ${result.found.id}` : `${status[result.refused?.code ?? -1]} ${result.refused?.reason}`));

test("one GetMessages call: each read answered exactly as its own GetMessage call's, in the order of the request", async () => {
  const [sent, queued] = ids as [number, number];
  const reads: dispatch.GetMessageRequest[] = [
    { ...scope, messageId: sent },
    { ...scope, projectId: h.ids.otherProjectId, messageId: sent },
    { ...scope, messageId: 999_999_999 },
    { ...scope, messageId: queued },
    { ...scope, organizationId: h.ids.organizationId + 1_000, messageId: queued },
    { ...scope, messageId: sent },
  ];
  const { results } = await h.dispatch.call('GetMessages', { items: [...reads.map((get) => ({ get })), {}] });
  assert.deepEqual(verdicts(results), [
    `found ${sent}`,
    'NOT_FOUND message_not_found',
    'NOT_FOUND message_not_found',
    `found ${queued}`,
    'NOT_FOUND message_not_found',
    `found ${sent}`,
    'INVALID_ARGUMENT invalid_argument',
  ]);
  for (const [index, get] of reads.entries()) {
    const own = await h.dispatch.call('GetMessage', get).catch((error: unknown) => error);
    const result = results[index];
    if (result?.found) assert.deepEqual(result.found, own);
    else await assertRefused(Promise.reject(own as Error), result?.refused?.code as status, result?.refused?.reason as string);
  }
  assert.deepEqual(
    results[0]?.found?.events.map((event) => event.state),
    ['queued', 'sending', 'sent'],
  );
  assert.deepEqual(results[6]?.refused?.fields, ['get: is required']);
});

test('the reads that arrive together are read in one statement, each counted as a GetMessage call', async () => {
  const statements: string[] = [];
  const counting = new Proxy(h.pool, {
    get: (pool, property) =>
      property === 'query'
        ? (config: { name?: string }, ...rest: unknown[]) => {
            statements.push(config.name ?? 'unnamed');
            return (pool.query as (...args: unknown[]) => unknown)(config, ...rest);
          }
        : Reflect.get(pool, property),
  }) as Pool;
  const recorded: string[] = [];
  const handlers = messageReadHandlers(counting, h.logger, (path, code) => recorded.push(`${path} ${status[code]}`));
  const items = [...ids, 999_999_999, ...ids].map((messageId) => ({ get: { ...scope, messageId }, traceparent: '', tracestate: '' }));
  const { results } = await handlers.GetMessages({ items });
  assert.deepEqual(verdicts(results), [`found ${ids[0]}`, `found ${ids[1]}`, 'NOT_FOUND message_not_found', `found ${ids[0]}`, `found ${ids[1]}`]);
  assert.deepEqual(statements, ['messages-get']);
  const path = '/notify.dispatch.v1.DispatchService/GetMessage';
  assert.deepEqual(recorded.sort(), [`${path} NOT_FOUND`, `${path} OK`, `${path} OK`, `${path} OK`, `${path} OK`]);
  // Unary reads that arrive together share a statement too.
  statements.length = 0;
  const unary = await Promise.all(ids.map((messageId) => handlers.GetMessage({ ...scope, messageId })));
  assert.deepEqual(
    unary.map((message) => message.id),
    ids,
  );
  assert.deepEqual(statements, ['messages-get']);
});

test('a call with no read, or more than a batch may hold, is refused as a whole; only the gateway may call it', async () => {
  await assertRefused(h.dispatch.call('GetMessages', { items: [] }), status.INVALID_ARGUMENT, 'invalid_argument');
  await assertRefused(
    h.dispatch.call('GetMessages', { items: Array.from({ length: 501 }, () => ({ get: { ...scope, messageId: ids[0] } })) }),
    status.INVALID_ARGUMENT,
    'invalid_argument',
  );
  const notifyctl = new GrpcClient(dispatchProto.DispatchService.service, h.address, { token: h.callers.admin.token, deadlineMs: 5_000 });
  try {
    await assertRefused(notifyctl.call('GetMessages', { items: [{ get: { ...scope, messageId: ids[0] } }] }), status.PERMISSION_DENIED, 'permission_denied');
  } finally {
    notifyctl.close();
  }
});

test('status reads, alone or a few together, are read by statements planned once per connection', async () => {
  await h.growMessages(ids, 2500);
  // One connection, so pg_prepared_statements (per session) sees every execution.
  const client = await h.pool.connect();
  const readRounds = async (rounds: number): Promise<void> => {
    for (let round = 0; round < rounds; round += 1) {
      for (const count of [1, 3, 6]) {
        const results = await getMessages(
          client as unknown as Pool,
          Array.from({ length: count }, (_, index) => ({ ...scope, messageId: ids[index % 2] as number })),
        );
        assert.deepEqual(
          results.map((result) => (result.status === 'fulfilled' ? result.value.id : 0)),
          Array.from({ length: count }, (_, index) => ids[index % 2]),
        );
      }
    }
  };
  try {
    assert.deepEqual(await plannedAfterWarmUp(client, ['messages-get'], readRounds), {
      'messages-get': { generic: 8, custom: 0 },
      'messages-get-one': { generic: 4, custom: 0 },
    });
  } finally {
    client.release();
  }
});
