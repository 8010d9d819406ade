import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { topology } from '@notify/proto';
import { mailerConsumerConfig } from './consumer-config.ts';

describe('mailer consumer configuration', () => {
  it('is one durable consumer on the jobs subject, with room for deferred jobs and the mailer deciding the last attempt', () => {
    const names = topology('t1_');
    assert.deepEqual(mailerConsumerConfig(names, { maxAttempts: 10, ackWaitMs: 60_000 }), {
      durable_name: 'T1_mailer',
      filter_subject: 't1_notify.jobs.email',
      ack_wait: 60_000_000_000,
      max_ack_pending: 100_000,
      max_deliver: 15,
    });
  });
});
