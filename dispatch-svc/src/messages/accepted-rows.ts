// Step 5 of a send: the rows of the sends still standing, written together: messages with their first event (each
// under a `create` span of its request's trace), idempotency records, outbox rows. A scheduled send's job goes to the
// schedule instead of the outbox, and waits there for the releaser (no job exists until it is due).
import { randomUUID } from 'node:crypto';
import { notifyAttributes, type Span, traceparentOf } from '@notify/platform';
import type { PoolClient } from '@notify/platform/database';
import { startCreateSpan } from '@notify/platform/nats';
import type { AcceptedBody, DeliveryJob } from '@notify/proto';
import { type NewIdempotencyRecord, saveIdempotencyRecords } from '../idempotency/idempotency-store.ts';
import { insertOutboxRows } from '../outbox/outbox-store.ts';
import { insertScheduledJobs, type ScheduledJob } from '../scheduled/schedule-store.ts';
import type { TemplateRow } from '../templates/template-store.ts';
import type { BatchVerdicts, Pending, Written } from './batch-verdicts.ts';
import { insertMessages, type NewMessage } from './message-store.ts';

export interface AcceptedRowsDeps {
  /** Its jobs subject names the destination of each message's `create` span. */
  readonly publisher: { readonly subject: string };
  readonly idempotencyTtlMs: number;
}

interface InsertedMessage {
  readonly id: number;
  readonly createdAt: Date;
}

function newMessage({ request, input }: Pending, template: TemplateRow, creation: Span): NewMessage {
  return {
    projectId: request.projectId,
    organizationId: request.organizationId,
    apiKeyId: request.apiKeyId,
    templateId: template.id,
    templateSlug: template.slug,
    templateVersion: template.version,
    recipient: request.to,
    data: input.data,
    celeryTaskId: randomUUID(),
    idempotencyKey: input.idempotencyKey,
    traceparent: traceparentOf(creation),
    tags: input.tags,
    metadata: input.metadata,
    test: request.test,
    sendAt: input.sendAt,
    fromAddress: input.from?.address ?? null,
    fromName: input.from?.name || null,
  };
}

/** The messages, each under its `create` span, which names the message once its row has an id. */
async function insertTraced(client: PoolClient, messages: readonly NewMessage[], creations: readonly Span[]): Promise<InsertedMessage[]> {
  try {
    const inserted = await insertMessages(client, messages);
    inserted.forEach((row, position) => {
      creations[position]?.setAttributes({ [notifyAttributes.messageId]: row.id, 'messaging.message.id': String(row.id) });
    });
    return inserted;
  } finally {
    for (const span of creations) span.end();
  }
}

/** The 202 body the send answers, and its key's record keeps for replays. */
function acceptedBody(row: InsertedMessage, message: NewMessage, sendAt: Date | null): AcceptedBody {
  return sendAt
    ? { message_id: row.id, status: 'scheduled', celery_task_id: message.celeryTaskId, idempotent_replay: false, send_at: sendAt.toISOString() }
    : { message_id: row.id, status: 'queued', celery_task_id: message.celeryTaskId, idempotent_replay: false };
}

function deliveryJob({ request, input }: Pending, row: InsertedMessage, message: NewMessage, template: TemplateRow): DeliveryJob {
  return {
    messageId: row.id,
    celeryTaskId: message.celeryTaskId,
    projectId: request.projectId,
    organizationId: request.organizationId,
    to: request.to,
    data: input.data,
    template: {
      slug: template.slug,
      version: template.version,
      subject: template.subject,
      html: template.html,
      text: template.text,
      unsubscribe: template.unsubscribe,
    },
    acceptedAt: row.createdAt.toISOString(),
    ...(request.test ? { test: true } : {}),
    ...(input.from ? { from: input.from } : {}),
  };
}

/** Writes the rows of the open sends, each with the template step 3 found for it; answers what each one wrote. */
export async function writeAcceptedRows(
  client: PoolClient,
  batch: BatchVerdicts,
  templateOf: ReadonlyMap<number, TemplateRow>,
  deps: AcceptedRowsDeps,
): Promise<Written[]> {
  const accepted = batch.open();
  if (accepted.length === 0) return [];
  const creations = accepted.map((index) => startCreateSpan({ destination: deps.publisher.subject }, batch.send(index).context));
  const messages = accepted.map((index, position) => newMessage(batch.send(index), templateOf.get(index) as TemplateRow, creations[position] as Span));
  const inserted = await insertTraced(client, messages, creations);
  const records: NewIdempotencyRecord[] = [];
  const jobs: DeliveryJob[] = [];
  const scheduled: ScheduledJob[] = [];
  const written = accepted.map((index, position): Written => {
    const pending = batch.send(index);
    const { request, input } = pending;
    const message = messages[position] as NewMessage;
    const row = inserted[position] as InsertedMessage;
    const response = acceptedBody(row, message, input.sendAt);
    if (input.idempotencyKey !== null) {
      records.push({ projectId: request.projectId, idempotencyKey: input.idempotencyKey, fingerprint: request.fingerprint, messageId: row.id, response });
    }
    const job = deliveryJob(pending, row, message, templateOf.get(index) as TemplateRow);
    if (input.sendAt) {
      scheduled.push({ job, sendAt: input.sendAt });
      return { index, messageId: row.id, response, outgoing: null };
    }
    jobs.push(job);
    return { index, messageId: row.id, response, outgoing: { job, traceparent: message.traceparent } };
  });
  if (records.length > 0) await saveIdempotencyRecords(client, records, deps.idempotencyTtlMs);
  if (jobs.length > 0) await insertOutboxRows(client, jobs);
  if (scheduled.length > 0) await insertScheduledJobs(client, scheduled);
  return written;
}
