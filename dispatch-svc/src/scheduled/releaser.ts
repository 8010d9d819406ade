// The releaser: queues scheduled messages when they are due (docs/contract.md, "Message lifecycle"). Each pass takes the
// releasers' advisory lock per transaction, so one dispatch-svc replica at a time releases (the others find it taken
// and wait for their next pass); a releaser that dies mid-transaction loses its lock with its connection, and its
// batch rolls back into the schedule for the next one. A batch is one transaction: the messages turn `queued` and get
// their outbox rows together; after commit their jobs are published at once, and the outbox relay covers any publish
// JetStream did not confirm.
import type { Logger } from '@notify/platform';
import { type Pool, withTransaction } from '@notify/platform/database';
import type { DispatchMetrics } from '../metrics.ts';
import type { JobPublisher } from '../outbox/job-publisher.ts';
import { deleteOutboxRows } from '../outbox/outbox-store.ts';
import { countScheduled, type ReleasedJob, releaseDue, releaseLockKey } from './schedule-store.ts';

export interface ReleaserDeps {
  readonly pool: Pool;
  readonly publisher: JobPublisher;
  readonly metrics: DispatchMetrics;
  readonly logger: Logger;
  /** Messages per transaction. */
  readonly batchSize?: number;
}

/** One batch, or null when another replica holds the lock (it is releasing: this one has nothing to do now). */
async function releaseBatch(deps: ReleaserDeps, batchSize: number): Promise<ReleasedJob[] | null> {
  return withTransaction(deps.pool, async (client) => {
    const lock = await client.query<{ leader: boolean }>({
      name: 'schedule-leader',
      text: 'SELECT pg_try_advisory_xact_lock($1) AS leader',
      values: [releaseLockKey],
    });
    if (lock.rows[0]?.leader !== true) return null;
    return releaseDue(client, batchSize);
  });
}

/** Publishes released jobs; one JetStream does not confirm keeps its outbox row, for the relay. */
async function publishReleased(deps: ReleaserDeps, released: readonly ReleasedJob[]): Promise<void> {
  const results = await Promise.allSettled(
    released.map(({ payload, traceparent }) => deps.publisher.publish({ job: payload, traceparent: traceparent ?? '' }, 'release')),
  );
  const published = released.filter((_, index) => results[index]?.status === 'fulfilled').map(({ payload }) => payload.messageId);
  if (published.length < released.length) {
    deps.logger.warn({ unconfirmed: released.length - published.length }, 'released jobs not confirmed by JetStream; the outbox relay will publish them');
  }
  if (published.length > 0) await deleteOutboxRows(deps.pool, published);
}

/**
 * One releaser pass: batches until none is full (nothing more is due) or another replica is the leader. Returns how
 * many messages it released.
 */
export async function releaseScheduled(deps: ReleaserDeps): Promise<number> {
  const batchSize = deps.batchSize ?? 500;
  let total = 0;
  for (;;) {
    const released = await releaseBatch(deps, batchSize);
    if (released === null) break;
    total += released.length;
    deps.metrics.scheduledReleased.inc(released.length);
    await publishReleased(deps, released);
    if (released.length < batchSize) break;
  }
  if (total > 0) deps.logger.info({ released: total }, 'scheduled messages released');
  return total;
}

/** The backlog gauge, counted on its own slower beat: a count of a large schedule is not free, and passes are frequent. */
export async function updateScheduledBacklog(pool: Pool, metrics: DispatchMetrics): Promise<void> {
  metrics.scheduledBacklog.set(await countScheduled(pool));
}
