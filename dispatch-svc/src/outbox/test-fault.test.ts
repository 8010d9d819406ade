import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { DeliveryJob } from '@notify/proto';
import { type Harness, startHarness } from '../testing/harness.ts';
import type { OutgoingJob } from './delivery-job.ts';
import { assertTestFaultAllowed, withTestFault } from './test-fault.ts';

let h: Harness;

before(async () => {
  h = await startHarness();
});

after(() => h?.close());

const job = (messageId: number): OutgoingJob => ({ job: deliveryJob(messageId), traceparent: '' });
const deliveryJob = (messageId: number): DeliveryJob => ({
  messageId,
  // One per message, as the send path makes them: JetStream tells jobs apart by it.
  celeryTaskId: `0b6f2d52-8a55-4f0b-9a3e-${String(messageId).padStart(12, '0')}`,
  projectId: h.ids.projectId,
  organizationId: h.ids.organizationId,
  to: 'a@example.com',
  data: {},
  template: { slug: 'welcome', version: 1, subject: 'Hi', html: '', text: 'Hi', unsubscribe: false },
  acceptedAt: new Date().toISOString(),
});

test('a test fault is refused outside NODE_ENV=test', () => {
  assert.throws(() => assertTestFaultAllowed('exit-after-commit', 'production'), /test-only setting and is refused unless NODE_ENV=test/);
  assert.throws(() => assertTestFaultAllowed('exit-after-publish', ''), /refused unless NODE_ENV=test/);
  assert.doesNotThrow(() => assertTestFaultAllowed('exit-after-commit', 'test'));
  assert.doesNotThrow(() => assertTestFaultAllowed('none', 'production'));
});

test('exit-after-commit crashes before the send path publishes, and exit-after-publish right after JetStream stored the job', async () => {
  const order: string[] = [];
  const recording = {
    subject: h.publisher.subject,
    publish: async (...args: Parameters<typeof h.publisher.publish>) => {
      await h.publisher.publish(...args);
      order.push(`stored ${args[0].job.messageId}`);
    },
  };
  await withTestFault(recording, 'exit-after-commit', () => void order.push('crash')).publish(job(1), 'direct');
  await withTestFault(recording, 'exit-after-publish', () => void order.push('crash')).publish(job(2), 'direct');
  assert.deepEqual(order, ['crash', 'stored 1', 'stored 2', 'crash']);
  assert.equal(await h.jobsInStream(), 2);
});

test('the relay path is never faulted, and no fault leaves the publisher as it was', async () => {
  let crashes = 0;
  const faulted = withTestFault(h.publisher, 'exit-after-commit', () => {
    crashes += 1;
  });
  await faulted.publish(job(3), 'relay');
  assert.equal(crashes, 0);
  assert.equal(
    withTestFault(h.publisher, 'none', () => undefined),
    h.publisher,
  );
});
