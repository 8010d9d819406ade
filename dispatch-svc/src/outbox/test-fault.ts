// Fault injection for the reliability tests (test/e2e/reliability-crashes.test.ts): dispatch-svc killed at the two
// points of the send path a signal from outside cannot hit reliably. Refused unless NODE_ENV=test.
import type { JobPublisher } from './job-publisher.ts';

/**
 * `exit-after-commit`: the message, its idempotency record and its outbox row are committed, the job not published.
 * `exit-after-publish`: JetStream stored the job, its outbox row was not deleted, so the relay publishes it again.
 */
export const dispatchTestFaults = ['none', 'exit-after-commit', 'exit-after-publish'] as const;
export type DispatchTestFault = (typeof dispatchTestFaults)[number];

/** Throws when a fault is asked for outside tests; main.ts calls it before anything starts. */
export function assertTestFaultAllowed(fault: DispatchTestFault, nodeEnv: string): void {
  if (fault !== 'none' && nodeEnv !== 'test') {
    throw new Error(`NOTIFY_TEST_FAULT=${fault} is a test-only setting and is refused unless NODE_ENV=test`);
  }
}

/** Wraps the publisher so the send path's publish (the one right after commit) calls `crash` at the fault's point. */
export function withTestFault(publisher: JobPublisher, fault: DispatchTestFault, crash: () => void): JobPublisher {
  if (fault === 'none') return publisher;
  return {
    subject: publisher.subject,
    async publish(outgoing, path) {
      if (path === 'direct' && fault === 'exit-after-commit') crash();
      await publisher.publish(outgoing, path);
      if (path === 'direct' && fault === 'exit-after-publish') crash();
    },
  };
}
