// The outbox relay: publishes jobs whose direct publish after commit was never confirmed (NATS outage, crash between
// commit and PubAck). Rows are claimed with FOR UPDATE SKIP LOCKED, so any number of replicas can run it side by side.
import type { Logger } from '@notify/platform';
import { type Pool, withTransaction } from '@notify/platform/database';
import type { DeliveryJob } from '@notify/proto';
import type { DispatchMetrics } from '../metrics.ts';
import type { JobPublisher } from './job-publisher.ts';
import { countOutboxRows, deleteOutboxRows } from './outbox-store.ts';

export interface OutboxRelayDeps {
  readonly pool: Pool;
  readonly publisher: JobPublisher;
  readonly metrics: DispatchMetrics;
  readonly logger: Logger;
  /** Rows younger than this belong to the send path, which is still publishing them. */
  readonly minAgeMs: number;
  readonly batchSize?: number;
}

/** Claims one batch of due rows, publishes them together, deletes the confirmed ones and notes why the others failed. */
async function relayBatch(deps: OutboxRelayDeps, batchSize: number): Promise<{ claimed: number; failed: number }> {
  return withTransaction(deps.pool, async (client) => {
    // The message's traceparent comes along, so a job published long after its request still joins that trace.
    const due = await client.query<{ messageId: number; payload: DeliveryJob; traceparent: string | null }>({
      name: 'outbox-claim',
      text: `SELECT o.message_id AS "messageId", o.payload, m.traceparent FROM outbox o JOIN messages m ON m.id = o.message_id
              WHERE o.created_at <= now() - $1 * interval '1 millisecond'
              ORDER BY o.created_at LIMIT $2 FOR UPDATE OF o SKIP LOCKED`,
      values: [deps.minAgeMs, batchSize],
    });
    const results = await Promise.allSettled(due.rows.map((row) => deps.publisher.publish({ job: row.payload, traceparent: row.traceparent ?? '' }, 'relay')));
    const published: number[] = [];
    const failedIds: number[] = [];
    const errors: string[] = [];
    results.forEach((result, index) => {
      const id = due.rows[index]?.messageId;
      if (id === undefined) return;
      if (result.status === 'fulfilled') {
        published.push(id);
      } else {
        failedIds.push(id);
        errors.push(String((result.reason as Error | undefined)?.message ?? result.reason).slice(0, 500));
      }
    });
    if (published.length > 0) {
      await deleteOutboxRows(client, published);
    }
    if (failedIds.length > 0) {
      await client.query({
        name: 'outbox-note-failures',
        text: `UPDATE outbox o SET attempts = o.attempts + 1, last_error = f.error
                 FROM unnest($1::bigint[], $2::text[]) AS f(message_id, error) WHERE o.message_id = f.message_id`,
        values: [failedIds, errors],
      });
      deps.logger.warn({ failed: failedIds.length, firstError: errors[0] }, 'outbox relay could not publish some jobs; will retry');
    }
    return { claimed: due.rows.length, failed: failedIds.length };
  });
}

/**
 * One relay pass: batches until no due row is left or a publish fails (NATS is then likely unreachable, and the next
 * pass retries). Updates the backlog gauge. Returns how many jobs it published.
 */
export async function relayOutbox(deps: OutboxRelayDeps): Promise<number> {
  const batchSize = deps.batchSize ?? 100;
  let published = 0;
  for (;;) {
    const batch = await relayBatch(deps, batchSize);
    published += batch.claimed - batch.failed;
    if (batch.failed > 0 || batch.claimed < batchSize) break;
  }
  deps.metrics.outboxBacklog.set(await countOutboxRows(deps.pool));
  if (published > 0) deps.logger.info({ published }, 'outbox relay published jobs');
  return published;
}
