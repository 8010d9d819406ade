import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import type { dispatch } from '@notify/proto';
import { assertRefused } from '@notify/test/harness/refusal.ts';
import { type Harness, startHarness } from '../testing/harness.ts';
import { createSendHandler } from './send.ts';
import { createSendManyHandler } from './send-many.ts';

let h: Harness;

before(async () => {
  h = await startHarness();
  const schema = { type: 'object', required: ['name'], properties: { name: { type: 'string' } } };
  const put = (slug: string, active: boolean, variablesSchemaJson = '') =>
    h.admin.call('PutTemplate', {
      projectId: h.ids.projectId,
      slug,
      subject: 'Hello {{ name }}',
      html: '<p>Hi {{ name }}</p>',
      text: 'Hi {{ name }}',
      variablesSchemaJson,
      active,
    });
  await put('welcome', true);
  await put('dormant', false);
  await put('typed', true, JSON.stringify(schema));
});

after(() => h.close());

const item = (overrides: Partial<dispatch.SendRequest> = {}): dispatch.SendManyItem => ({ send: h.sendRequest(overrides) });

/** Each result as `accepted` or its refusal's code and reason. */
const verdicts = (results: readonly dispatch.SendBatchResult__Output[]): string[] =>
  results.map((result) => (result.accepted ? 'accepted' : `${status[result.refused?.code ?? -1]} ${result.refused?.reason}`));

const acceptedIds = (results: readonly dispatch.SendBatchResult__Output[]): number[] =>
  results.flatMap((result) => (result.accepted ? [result.accepted.messageId] : []));

test("one SendMany call: each send judged as its own Send call, refused ones answered with Send's refusal, the accepted ones in one transaction", async () => {
  const jobsBefore = await h.jobsInStream();
  const { results } = await h.dispatch.call('SendMany', {
    items: [
      item({ to: 'one@example.com' }),
      item({ template: 'missing' }),
      item({ template: 'dormant' }),
      item({ template: 'typed', dataJson: JSON.stringify({ name: 7 }) }),
      item({ to: 'two@example.com', template: 'typed', dataJson: JSON.stringify({ name: 'Ada' }) }),
      item({ template: '', to: '', dataJson: '', fieldsInvalid: true }),
      item({ projectId: 0 }),
    ],
  });
  assert.deepEqual(verdicts(results), [
    'accepted',
    'NOT_FOUND template_not_found',
    'FAILED_PRECONDITION template_inactive',
    'INVALID_ARGUMENT data_invalid',
    'accepted',
    'INVALID_ARGUMENT fields_invalid',
    'INVALID_ARGUMENT invalid_argument',
  ]);
  // What the gateway shows the caller travels too: the data's violations, the malformed field.
  assert.equal(results[3]?.refused?.fields.length, 1);
  assert.deepEqual(results[6]?.refused?.fields, ['project_id: must be a positive integer']);

  const ids = acceptedIds(results);
  const { rows } = await h.pool.query<{ recipient: string; transactions: number }>(
    "SELECT string_agg(recipient, ' ' ORDER BY id) AS recipient, count(DISTINCT xmin::text)::int AS transactions FROM messages WHERE id = ANY($1::bigint[])",
    [ids],
  );
  assert.deepEqual(rows[0], { recipient: 'one@example.com two@example.com', transactions: 1 });
  assert.equal(await h.jobsInStream(), jobsBefore + 2);
  assert.deepEqual(results[0]?.accepted && { status: results[0].accepted.status, replay: results[0].accepted.idempotentReplay }, {
    status: 'queued',
    replay: false,
  });
});

test('a send that fails unexpectedly answers its own refusal, as its Send call would have failed, and never fails the others; each is counted as a Send call', async () => {
  const send = createSendHandler(h.deps);
  // One send hits a bug, one finds PostgreSQL unreachable; the others take the real path.
  const failing = (request: dispatch.SendRequest__Output): Promise<dispatch.SendResponse__Output> => {
    if (request.to === 'bug@example.com') return Promise.reject(new TypeError('a bug'));
    if (request.to === 'down@example.com') return Promise.reject(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }));
    return send(request);
  };
  const recorded: string[] = [];
  const handler = createSendManyHandler(failing, h.logger, (path, code, seconds) => {
    assert.ok(seconds >= 0);
    recorded.push(`${path} ${status[code]}`);
  });
  const requests = [
    { to: 'first@example.com' },
    { to: 'bug@example.com' },
    { to: 'down@example.com' },
    // The database refuses this one's data (jsonb holds no U+0000): its batch is retried send by send.
    { to: 'nul@example.com', dataJson: JSON.stringify({ name: 'A\u0000' }) },
    { to: 'last@example.com' },
  ].map(
    (overrides): dispatch.SendManyItem__Output => ({
      send: h.decodedSendRequest(overrides),
      traceparent: '',
      tracestate: '',
    }),
  );
  const { results } = await handler({ items: requests });
  assert.deepEqual(verdicts(results), ['accepted', 'INTERNAL internal', 'UNAVAILABLE service_unavailable', 'INVALID_ARGUMENT data_unstorable', 'accepted']);
  // The gRPC server's handled and handling-time series see the sends, not only the one SendMany call that carried them.
  const path = '/notify.dispatch.v1.DispatchService/Send';
  assert.deepEqual(recorded.sort(), [`${path} INTERNAL`, `${path} INVALID_ARGUMENT`, `${path} OK`, `${path} OK`, `${path} UNAVAILABLE`]);
  const { rows } = await h.pool.query<{ recipient: string }>('SELECT recipient FROM messages WHERE id = ANY($1::bigint[]) ORDER BY id', [acceptedIds(results)]);
  assert.deepEqual(
    rows.map((row) => row.recipient),
    ['first@example.com', 'last@example.com'],
  );
});

test('a call with no send, or more than a batch may hold, is refused as a whole', async () => {
  await assertRefused(h.dispatch.call('SendMany', { items: [] }), status.INVALID_ARGUMENT, 'invalid_argument');
  await assertRefused(h.dispatch.call('SendMany', { items: Array.from({ length: 501 }, () => item()) }), status.INVALID_ARGUMENT, 'invalid_argument');
});
