// Reports about delivered messages, persisted: a bounce or complaint (bounce-svc) moves a `sent` message on, and an
// unsubscribe (the gateway's one-click link, bounce-svc's mailto) suppresses an address. Each is one transaction that
// also writes the webhook event reporting it and counts it in the statistics, so none is ever recorded without the others.
import { type Pool, type PoolClient, withTransaction } from '@notify/platform/database';
import type { DataKey } from '@notify/platform/mail';
import { erasedRecipient, withoutAddresses } from '../erasure/erase-recipient.ts';
import { type MessageState, type ReportState, reportEffect } from '../events/state-machine.ts';
import { recordMessageWebhookEvents } from '../events/webhook-events.ts';
import { countedSentAt, countStats, type StatsChange } from '../stats/stats-store.ts';
import { addSuppression, findSuppressions, suppressionKey } from '../suppressions/suppression-store.ts';

export interface RecipientReport {
  readonly messageId: number;
  readonly kind: ReportState;
  /** The list entry the report calls for, if any (a soft bounce calls for none). */
  readonly suppression: 'hard_bounce' | 'complaint' | undefined;
  readonly detail: string;
  readonly smtpCode: number | undefined;
  /** RFC 3339. */
  readonly receivedAt: string;
}

export type ReportOutcome =
  | { readonly found: false }
  /** The message is still on its way (queued, sending, deferred): nothing was recorded. */
  | { readonly found: true; readonly early: true; readonly state: MessageState }
  /** `changed`: this report moved the message; `suppressed`: it added the address to the list. */
  | { readonly found: true; readonly early: false; readonly state: MessageState; readonly changed: boolean; readonly suppressed: boolean };

interface LockedMessage {
  readonly id: number;
  readonly projectId: number;
  readonly recipient: string;
  readonly state: MessageState;
  readonly stateAttempt: number;
}

async function lockMessage(client: PoolClient, messageId: number, projectId?: number): Promise<LockedMessage | undefined> {
  const found = await client.query<LockedMessage>({
    name: projectId === undefined ? 'report-lock-message' : 'report-lock-project-message',
    text: `SELECT id, project_id AS "projectId", recipient, state, state_attempt AS "stateAttempt"
             FROM messages WHERE id = $1 ${projectId === undefined ? '' : 'AND project_id = $2'} FOR UPDATE`,
    values: projectId === undefined ? [messageId] : [messageId, projectId],
  });
  const row = found.rows[0];
  return row && { ...row, id: Number(row.id), projectId: Number(row.projectId) };
}

/**
 * Applies one report: the message row locked, the `bounced`/`complained` event recorded against the attempt that
 * delivered it (so a repeated report hits the event's unique key), the state moved, the address suppressed when the
 * report says so (an address already listed keeps its entry), and the webhook event written, all or nothing.
 */
export async function applyRecipientReport(pool: Pool, dataKey: DataKey, report: RecipientReport): Promise<ReportOutcome> {
  return withTransaction(pool, async (client) => {
    const message = await lockMessage(client, report.messageId);
    if (!message) return { found: false };
    const effect = reportEffect(message.state);
    if (effect === 'early') return { found: true, early: true, state: message.state };
    if (effect === 'done') return { found: true, early: false, state: message.state, changed: false, suppressed: false };
    // A report about a message erased since: the DSN may quote the address the message no longer has, and there is no
    // address left to suppress (an entry it had before the erasure is kept as a hash).
    const erased = message.recipient === erasedRecipient;
    const detail = erased ? withoutAddresses(report.detail) : report.detail;

    await client.query({
      name: 'report-record-event',
      text: `INSERT INTO message_events (message_id, state, attempt, smtp_code, reason, occurred_at)
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (message_id, attempt, state) DO NOTHING`,
      values: [message.id, report.kind, message.stateAttempt, report.smtpCode ?? null, detail, report.receivedAt],
    });
    // The relay's reply stays (it is what the relay said); the report's words become the reason, as for a failure.
    await client.query({
      name: 'report-move-message',
      text: 'UPDATE messages SET state = $2, failure_reason = $3, updated_at = now() WHERE id = $1',
      values: [message.id, report.kind, detail],
    });
    const suppressed =
      report.suppression && !erased
        ? (
            await addSuppression(client, dataKey, {
              projectId: message.projectId,
              address: message.recipient,
              reason: report.suppression,
              messageId: message.id,
            })
          ).added
        : false;
    await recordMessageWebhookEvents(client, [
      {
        messageId: message.id,
        type: `message.${report.kind}`,
        state: report.kind,
        attempt: message.stateAttempt,
        smtpCode: report.smtpCode,
        reason: detail,
        occurredAt: report.receivedAt,
      },
    ]);
    await countStats(client, await reportStats(client, message, report));
    return { found: true, early: false, state: report.kind, changed: true, suppressed };
  });
}

/**
 * What a report that moved its message counts (docs/contract.md, "Statistics"): a bounce is hard when it calls for the
 * address's suppression (a permanent failure), soft otherwise, and takes the message back from `delivered` in the hour
 * its acceptance was counted in; a complaint leaves it delivered (the recipient got it).
 */
async function reportStats(client: PoolClient, message: LockedMessage, report: RecipientReport): Promise<StatsChange[]> {
  const change = { projectId: message.projectId, messageId: message.id, delta: 1, at: report.receivedAt };
  if (report.kind === 'complained') return [{ ...change, counter: 'complained' }];
  const counted = [{ ...change, counter: report.suppression === 'hard_bounce' ? 'bounced_hard' : 'bounced_soft' } as const];
  const sentAt = await countedSentAt(client, message);
  return sentAt === undefined ? counted : [...counted, { ...change, counter: 'delivered', delta: -1, at: sentAt }];
}

export interface UnsubscribeClaimInput {
  readonly projectId: number;
  readonly messageId: number;
  readonly address: string;
  /** one_click | mailto | page: said in the webhook event's reason. */
  readonly source: string;
}

/** `changed`: this request put the address on the list. `suppressed`: it is on the list (for any reason) now. */
export interface UnsubscribeOutcome {
  readonly suppressed: boolean;
  readonly changed: boolean;
}

/** Whether the address is on the project's list already, for the confirmation page (nothing is written). */
export async function isSuppressed(pool: Pool, dataKey: DataKey, projectId: number, address: string): Promise<boolean> {
  const client = await pool.connect();
  try {
    return (await findSuppressions(client, dataKey, [{ projectId, address }])).has(suppressionKey(projectId, address));
  } finally {
    client.release();
  }
}

/**
 * Suppresses the claimed address (reason `unsubscribed`, the message as cause) and, when that added the entry and the
 * message still exists, writes one `message.unsubscribed` webhook event about it (`status` the message's state, which
 * an unsubscribe does not change). A purged message no longer has a row for the event to reference, nor anything an
 * integrator could look up: the address is suppressed all the same, with no cause and no event.
 */
export async function applyUnsubscribe(pool: Pool, dataKey: DataKey, claim: UnsubscribeClaimInput): Promise<UnsubscribeOutcome> {
  return withTransaction(pool, async (client) => {
    // Locked first, as a report about the same message would, so the event's sequence is taken without a race.
    const message = await lockMessage(client, claim.messageId, claim.projectId);
    // The link of a message erased since still unsubscribes its recipient, whose address is then listed as a hash only.
    const erased = message?.recipient === erasedRecipient;
    const entry = await addSuppression(client, dataKey, {
      projectId: claim.projectId,
      address: claim.address,
      reason: 'unsubscribed',
      messageId: message?.id,
      erased,
    });
    if (entry.added) {
      await countStats(client, [{ projectId: claim.projectId, messageId: message?.id ?? 0, counter: 'unsubscribed', delta: 1, at: new Date().toISOString() }]);
    }
    if (entry.added && message) {
      await recordMessageWebhookEvents(client, [
        {
          messageId: message.id,
          type: 'message.unsubscribed',
          state: message.state,
          attempt: message.stateAttempt,
          reason: `the recipient unsubscribed (${claim.source})`,
          occurredAt: new Date().toISOString(),
        },
      ]);
    }
    return { suppressed: true, changed: entry.added };
  });
}
