// The publication after commit that Send and SendBatch share: the job straight to JetStream, then its outbox row's
// deletion (batched), which the caller does not wait for. A job JetStream did not confirm stays for the relay.
import { Batcher, fulfilled, type Logger } from '@notify/platform';
import type { Pool } from '@notify/platform/database';
import type { OutgoingJob } from './delivery-job.ts';
import type { JobPublisher } from './job-publisher.ts';
import { deleteOutboxRows } from './outbox-store.ts';

export interface PublishAcceptedDeps {
  readonly pool: Pool;
  readonly publisher: JobPublisher;
  readonly logger: Logger;
}

/** Publishes a committed job; a failure is only logged, since the outbox row stays for the relay. */
export type PublishAccepted = (outgoing: OutgoingJob) => Promise<void>;

/** Published jobs' outbox rows are deleted together, one statement at a time. */
const maxOutboxDeletesPerStatement = 512;
/**
 * And at most ten such statements a second unless one is full (each is a commit of its own): nobody waits for these
 * deletes, the relay leaves rows alone until OUTBOX_RELAY_MIN_AGE (5 s by default), and one it publishes again before
 * its delete is a copy JetStream drops.
 */
const outboxDeleteSpacingMs = 100;

export function publishAccepted(deps: PublishAcceptedDeps): PublishAccepted {
  const outboxCleaner = new Batcher<number, void>({
    maxBatchSize: maxOutboxDeletesPerStatement,
    concurrency: 1,
    spacingMs: outboxDeleteSpacingMs,
    run: async (messageIds) => {
      await deleteOutboxRows(deps.pool, messageIds);
      return messageIds.map(() => fulfilled(undefined));
    },
  });

  return async function publishDirect(outgoing: OutgoingJob): Promise<void> {
    const { job } = outgoing;
    try {
      await deps.publisher.publish(outgoing, 'direct');
    } catch (error) {
      deps.logger.warn({ err: error, messageId: job.messageId }, 'job not confirmed by JetStream; the outbox relay will publish it');
      return;
    }
    // Not awaited: once JetStream holds the job, the row is only what the relay would publish again (a copy JetStream
    // drops), and the send's answer need not wait for its delete to commit behind the others.
    void outboxCleaner.submit(job.messageId).catch((error: unknown) => {
      deps.logger.warn({ err: error, messageId: job.messageId }, 'published job left in the outbox');
    });
  };
}
