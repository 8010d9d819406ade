// Canceling a scheduled message (DELETE /api/v1/messages/{id}/ and the panel's button): `scheduled` → `canceled`, its
// job dropped from the schedule before anyone published it, the transition recorded, in one transaction. The schedule
// row is locked before the message row, in the releaser's order, so a cancel and a release of one message never
// deadlock: whichever takes the schedule row first wins, and a message released meanwhile is not_cancelable.
import { status } from '@grpc/grpc-js';
import { UserError } from '@notify/platform';
import { type Pool, withTransaction } from '@notify/platform/database';
import type { dispatch } from '@notify/proto';
import { isCancelable, type MessageState } from '../events/state-machine.ts';
import { getMessage } from '../messages/queries.ts';
import type { DispatchMetrics } from '../metrics.ts';

/** Who canceled, recorded as the transition's reason. */
export type CancelOrigin = 'api' | 'panel';

const reasons: Readonly<Record<CancelOrigin, string>> = { api: 'canceled through the API', panel: 'canceled in the web panel' };

export async function cancelMessage(
  deps: { pool: Pool; metrics: DispatchMetrics },
  request: dispatch.GetMessageRequest__Output,
  origin: CancelOrigin,
): Promise<dispatch.Message__Output> {
  await withTransaction(deps.pool, async (client) => {
    const found = await client.query<{ state: MessageState }>({
      name: 'cancel-find',
      text: 'SELECT state FROM messages WHERE id = $1 AND project_id = $2 AND organization_id = $3',
      values: [request.messageId, request.projectId, request.organizationId],
    });
    const message = found.rows[0];
    if (!message) throw new UserError(status.NOT_FOUND, 'message_not_found', `no message ${request.messageId} in this project`);
    // Waits for a releaser that holds the row; if it released the message, the row is gone.
    const unscheduled = await client.query({
      name: 'cancel-unschedule',
      text: 'DELETE FROM scheduled_messages WHERE message_id = $1',
      values: [request.messageId],
    });
    if (unscheduled.rowCount !== 1 || !isCancelable(message.state)) {
      throw new UserError(status.FAILED_PRECONDITION, 'not_cancelable', `message ${request.messageId} is no longer scheduled`);
    }
    await client.query({
      name: 'cancel-message',
      text: `WITH canceled AS (UPDATE messages SET state = 'canceled', updated_at = now() WHERE id = $1 RETURNING id, updated_at)
             INSERT INTO message_events (message_id, state, attempt, reason, occurred_at) SELECT id, 'canceled', 0, $2, updated_at FROM canceled`,
      values: [request.messageId, reasons[origin]],
    });
  });
  deps.metrics.scheduledCanceled.inc({ origin });
  return getMessage(deps.pool, request);
}
