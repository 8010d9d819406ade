import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { connectNats, jetstream } from '@notify/platform/nats';
import type { dispatch } from '@notify/proto';
import { createSendHandler } from '../messages/send.ts';
import { type Harness, startHarness } from '../testing/harness.ts';
import { createJobPublisher, type JobPublisher } from './job-publisher.ts';
import { relayOutbox } from './outbox-relay.ts';

let h: Harness;
/** A publisher whose NATS connection is closed: every publish fails, as during an outage. */
let unreachable: JobPublisher;

before(async () => {
  h = await startHarness();
  await h.admin.call('PutTemplate', { projectId: h.ids.projectId, slug: 'welcome', subject: 'Hi', text: 'Hi', active: true });
  const closed = await connectNats('nats://127.0.0.1:4222', 'dispatch-test-closed', h.logger);
  const publisher = jetstream(closed);
  await closed.close();
  unreachable = createJobPublisher({ publisher, subject: h.names.jobsSubject, metrics: h.metrics });
});

after(() => h.close());

const request = (): dispatch.SendRequest__Output => h.decodedSendRequest({ dataJson: '{}' });

const outboxRows = async (): Promise<number> => (await h.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM outbox')).rows[0]?.n ?? -1;
const relay = (publisher: JobPublisher, minAgeMs = 0, batchSize = 100) =>
  relayOutbox({ pool: h.pool, publisher, metrics: h.metrics, logger: h.logger, minAgeMs, batchSize });

test('a send whose publish failed is still accepted, and its job waits in the outbox', async () => {
  const jobs = await h.jobsInStream();
  const response = await createSendHandler({ ...h.deps, publisher: unreachable })(request());
  assert.equal(response.status, 'queued');
  assert.equal(await outboxRows(), 1);
  assert.equal(await h.jobsInStream(), jobs);
});

test('a failed relay publish keeps the row and records the attempt and the error', async () => {
  assert.equal(await relay(unreachable), 0);
  const row = (await h.pool.query('SELECT attempts, last_error FROM outbox')).rows[0];
  assert.equal(row.attempts, 1);
  assert.match(row.last_error, /closed/i);
  assert.match(await h.registry.getSingleMetricAsString('notify_outbox_backlog'), /\} 1$/);
});

test('rows younger than the minimum age are left to the send path', async () => {
  assert.equal(await relay(h.publisher, 60_000), 0);
  assert.equal(await outboxRows(), 1);
});

test('the relay publishes a job whose direct publish failed and deletes its row', async () => {
  const jobs = await h.jobsInStream();
  assert.equal(await relay(h.publisher), 1);
  assert.equal(await outboxRows(), 0);
  assert.equal(await h.jobsInStream(), jobs + 1);
  assert.match(await h.registry.getSingleMetricAsString('notify_jobs_published_total'), /path="relay"[^}]*\} 1/);
  assert.match(await h.registry.getSingleMetricAsString('notify_outbox_backlog'), /\} 0$/);
});

test('JetStream keeps one job when the relay publishes one the send path already published', async () => {
  const response = await createSendHandler(h.deps)(request());
  const jobs = await h.jobsInStream();
  // As if the send path crashed between the PubAck and deleting its row.
  const { job } = await h.lastJob();
  await h.pool.query(`INSERT INTO outbox (message_id, payload, created_at) VALUES ($1, $2, now() - interval '1 minute')`, [
    response.messageId,
    JSON.stringify(job),
  ]);
  assert.equal(await relay(h.publisher), 1);
  assert.equal(await outboxRows(), 0);
  assert.equal(await h.jobsInStream(), jobs, 'the duplicate was dropped by the stream');
});

test('relays running side by side publish each row exactly once', async () => {
  for (let index = 0; index < 7; index += 1) await createSendHandler({ ...h.deps, publisher: unreachable })(request());
  const jobs = await h.jobsInStream();
  const [first, second] = await Promise.all([relay(h.publisher, 0, 2), relay(h.publisher, 0, 2)]);
  assert.equal((first ?? 0) + (second ?? 0), 7);
  assert.equal(await outboxRows(), 0);
  assert.equal(await h.jobsInStream(), jobs + 7);
});
