import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { DeliveryJob } from '@notify/proto';
import { attemptBase, deliveryStart } from './job.ts';

const job: DeliveryJob = {
  messageId: 7,
  celeryTaskId: '6f1c1b7e-3f0e-4e43-9d3e-1f1f6b0c2a11',
  projectId: 3,
  organizationId: 2,
  to: 'ana@example.com',
  data: { name: 'Ana' },
  template: { slug: 'welcome', version: 1, subject: 'Hi {{ name }}', html: '<p>{{ name }}</p>', text: '{{ name }}', unsubscribe: false },
  acceptedAt: '2025-01-01T00:00:00.000Z',
};

it('numbers a re-queued delivery after its base and counts its age from the re-queueing; a first one from acceptance', () => {
  const requeued: DeliveryJob = { ...job, requeue: { attemptBase: 4, at: '2025-02-01T00:00:00.000Z' } };
  assert.equal(attemptBase(requeued), 4);
  assert.equal(deliveryStart(requeued), Date.parse('2025-02-01T00:00:00.000Z'));
  assert.equal(attemptBase(job), 0);
  assert.equal(deliveryStart(job), Date.parse(job.acceptedAt));
});
