// The webhook relay: publishes each webhook event that is not published yet (webhook_events.published_at IS NULL) to
// NOTIFY_WEBHOOKS, one message per pending delivery, then marks the event published. It runs right after a batch of
// delivery events commits (wake) and every interval (events left by a crash or a NATS outage, replays). Events are
// claimed with FOR UPDATE SKIP LOCKED, so replicas relay side by side; a publish repeated after a crash has the same
// Nats-Msg-Id within the duplicate window, and the sender settles a late copy from the delivery's state anyway.
import type { Logger } from '@notify/platform';
import { type Pool, withTransaction } from '@notify/platform/database';
import { type JetStreamPublisher, schemaHeaders } from '@notify/platform/nats';
import { encodeWebhookDelivery, type Topology, webhookDeliveryId } from '@notify/proto';
import type { DispatchMetrics } from '../metrics.ts';

/** A PubAck not received in this time leaves the event to the next pass. */
const publishTimeoutMs = 2_000;

export interface WebhookRelayDeps {
  readonly pool: Pool;
  /** The connection's JetStream client. */
  readonly publisher: JetStreamPublisher;
  readonly names: Topology;
  readonly logger: Logger;
  /** False while the NATS connection is known to be down: the pass is skipped instead of waiting out timeouts. */
  readonly connected: () => boolean;
  readonly batchSize?: number;
}

/** Claims a batch of unpublished events, publishes their pending deliveries, marks the fully published ones. */
async function relayBatch(deps: WebhookRelayDeps, batchSize: number): Promise<{ claimed: number; failed: number }> {
  return withTransaction(deps.pool, async (client) => {
    const due = await client.query<{ id: number }>({
      name: 'webhook-relay-claim',
      text: `SELECT id FROM webhook_events WHERE published_at IS NULL ORDER BY created_at LIMIT $1 FOR UPDATE SKIP LOCKED`,
      values: [batchSize],
    });
    if (due.rows.length === 0) return { claimed: 0, failed: 0 };
    const ids = due.rows.map((row) => Number(row.id));
    const deliveries = await client.query<{ eventId: string; endpointId: string; attempts: number }>({
      name: 'webhook-relay-deliveries',
      text: `SELECT d.event_id AS "eventId", d.endpoint_id AS "endpointId", d.attempts FROM webhook_deliveries d
              WHERE d.event_id = ANY ($1::bigint[]) AND d.state = 'pending'`,
      values: [ids],
    });
    const results = await Promise.allSettled(
      deliveries.rows.map(({ eventId, endpointId, attempts }) => {
        const delivery = { eventId: Number(eventId), endpointId: Number(endpointId) };
        const message = encodeWebhookDelivery(delivery);
        return deps.publisher.publish(deps.names.webhooksSubject(delivery.endpointId), message.bytes, {
          msgID: webhookDeliveryId(delivery, attempts),
          headers: schemaHeaders(message),
          timeout: publishTimeoutMs,
        });
      }),
    );
    const unpublished = new Set<number>();
    let firstError: unknown;
    results.forEach((result, index) => {
      const row = deliveries.rows[index];
      if (result.status === 'rejected' && row) {
        unpublished.add(Number(row.eventId));
        firstError ??= result.reason;
      }
    });
    const published = ids.filter((id) => !unpublished.has(id));
    if (published.length > 0) {
      await client.query({
        name: 'webhook-relay-mark',
        text: 'UPDATE webhook_events SET published_at = now() WHERE id = ANY ($1::bigint[])',
        values: [published],
      });
    }
    if (unpublished.size > 0) deps.logger.warn({ failed: unpublished.size, err: firstError }, 'webhook relay could not publish some events; will retry');
    return { claimed: ids.length, failed: unpublished.size };
  });
}

/** One pass: batches until none is left or a publish fails. Returns how many events it published. */
export async function relayWebhookEvents(deps: WebhookRelayDeps): Promise<number> {
  if (!deps.connected()) return 0;
  const batchSize = deps.batchSize ?? 100;
  let published = 0;
  for (;;) {
    const batch = await relayBatch(deps, batchSize);
    published += batch.claimed - batch.failed;
    if (batch.failed > 0 || batch.claimed < batchSize) break;
  }
  return published;
}

/**
 * Sets the age of the oldest event the relay has still to publish (0 when none): what tells an event stuck between its
 * commit and NOTIFY_WEBHOOKS (NATS refusing publishes, the relay failing) from a few in flight. Read through the
 * partial index of unpublished events, whether or not NATS is reachable.
 */
export async function updateUnpublishedWebhookAge(pool: Pool, metrics: Pick<DispatchMetrics, 'webhookUnpublishedAge'>): Promise<void> {
  const { rows } = await pool.query<{ seconds: number | null }>({
    name: 'webhook-relay-oldest',
    text: 'SELECT extract(epoch FROM now() - min(created_at))::float8 AS seconds FROM webhook_events WHERE published_at IS NULL',
  });
  metrics.webhookUnpublishedAge.set(Math.max(0, rows[0]?.seconds ?? 0));
}

export interface WebhookRelay {
  /** Runs a pass now (or right after the one running): called once a batch with new webhook events has committed. */
  wake(): void;
  stop(): Promise<void>;
}

/** Passes every `intervalMs` and on every wake, never two at once in one replica. */
export function startWebhookRelay(deps: WebhookRelayDeps, intervalMs: number): WebhookRelay {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = false;
  const run = (): void => {
    clearTimeout(timer);
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = relayWebhookEvents(deps)
      .then(
        () => undefined,
        (error: unknown) => deps.logger.warn({ err: error }, 'webhook relay pass failed'),
      )
      .finally(() => {
        running = undefined;
        if (again) {
          again = false;
          run();
        } else if (!stopped) timer = setTimeout(run, intervalMs);
      });
  };
  timer = setTimeout(run, intervalMs);
  return {
    wake: run,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
