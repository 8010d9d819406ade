// Re-queueing dead letters: a failed message gets a new delivery. In one transaction per batch, each message goes back
// to `queued` (state-machine.ts's reopen, recorded as a `queued` event at the new delivery's first attempt, so the
// timeline, ordered by attempt, shows it between the deliveries) and gets a new outbox row whose job carries the
// attempt base; after commit the jobs are published like a send's, and the outbox relay covers any publish that fails.
// The job renders the template's current version: the one an operator fixes after a rendering failure, and the one
// the message row then names. A message whose recipient has since been suppressed (a hard bounce, a complaint, an
// unsubscribe, an operator's entry, an erasure's hash) is not re-queued: re-queueing a whole project after an outage
// must not mail the addresses that asked, or proved, not to be mailed.
import { activeContext, contextFromTraceparent, type Logger, linkTo, notifyAttributes, traceparentOf } from '@notify/platform';
import { type Pool, type PoolClient, withTransaction } from '@notify/platform/database';
import type { DataKey } from '@notify/platform/mail';
import { startCreateSpan } from '@notify/platform/nats';
import { type DeliveryJob, deliveryJobId } from '@notify/proto';
import { type MessageProgress, reopen } from '../events/state-machine.ts';
import type { DispatchMetrics } from '../metrics.ts';
import type { OutgoingJob } from '../outbox/delivery-job.ts';
import type { JobPublisher } from '../outbox/job-publisher.ts';
import { deleteOutboxRows, replaceOutboxRow } from '../outbox/outbox-store.ts';
import { findSuppressions, suppressionKey } from '../suppressions/suppression-store.ts';

export interface RequeueDeps {
  readonly pool: Pool;
  readonly publisher: JobPublisher;
  readonly logger: Logger;
  readonly metrics: DispatchMetrics;
  /** NOTIFY_DATA_KEY: finds erased recipients' suppressions. */
  readonly dataKey: DataKey;
}

export type SkipReason = 'message_not_found' | 'not_failed' | 'template_inactive' | 'recipient_suppressed';

export interface RequeueResult {
  readonly requeued: number[];
  readonly skipped: { messageId: number; reason: SkipReason }[];
}

/** Messages handled per transaction when a whole project is re-queued. */
const batchSize = 500;

interface Candidate extends MessageProgress {
  id: number;
  celeryTaskId: string;
  organizationId: number;
  recipient: string;
  data: Record<string, unknown>;
  acceptedAt: Date;
  /** Highest attempt any event of the message carried, recorded or not yet applied. */
  lastAttempt: number;
  traceparent: string | null;
  test: boolean;
  /** The send's From, null for MAIL_FROM: a re-queued message goes out From the same address. */
  fromAddress: string | null;
  fromName: string | null;
  slug: string;
  version: number;
  subject: string;
  html: string;
  text: string;
  active: boolean;
  unsubscribe: boolean;
}

async function lockCandidates(client: PoolClient, projectId: number, ids: readonly number[]): Promise<Map<number, Candidate>> {
  const found = await client.query<Candidate>({
    name: 'requeue-lock',
    text: `SELECT m.id, m.state, m.state_attempt AS "stateAttempt", m.attempts, m.last_smtp_code AS "lastSmtpCode",
                  m.last_smtp_response AS "lastSmtpResponse", m.failure_reason AS "failureReason",
                  m.celery_task_id AS "celeryTaskId", m.organization_id AS "organizationId", m.recipient, m.data,
                  m.created_at AS "acceptedAt", m.traceparent, m.test,
                  m.from_address AS "fromAddress", m.from_name AS "fromName",
                  (SELECT coalesce(max(e.attempt), 0) FROM message_events e WHERE e.message_id = m.id) AS "lastAttempt",
                  t.slug, t.version, t.subject, t.html, t.text, t.active, t.unsubscribe
             FROM messages m JOIN templates t ON t.id = m.template_id
            WHERE m.project_id = $1 AND m.id = ANY($2::bigint[])
            ORDER BY m.id
              FOR UPDATE OF m`,
    values: [projectId, ids],
  });
  return new Map(found.rows.map((row) => [row.id, row]));
}

/**
 * Reopens one locked failed message and writes its `queued` event and outbox row; returns its new job. The new
 * delivery's create span continues the message's own trace (so one trace still shows its whole life) and links to the
 * operator's request that re-queued it.
 */
async function reopenMessage(
  client: PoolClient,
  projectId: number,
  candidate: Candidate,
  next: MessageProgress,
  at: Date,
  subject: string,
): Promise<OutgoingJob> {
  const attemptBase = next.stateAttempt;
  const requeue = { attemptBase, at: at.toISOString() };
  const creation = startCreateSpan(
    {
      destination: subject,
      messageId: deliveryJobId({ celeryTaskId: candidate.celeryTaskId, requeue }),
      attributes: { [notifyAttributes.messageId]: candidate.id },
    },
    candidate.traceparent ? contextFromTraceparent(candidate.traceparent) : activeContext(),
    candidate.traceparent ? linkTo(traceparentOf(activeContext())) : [],
  );
  creation.end();
  const traceparent = traceparentOf(creation);
  await client.query({
    name: 'requeue-message',
    text: `UPDATE messages SET state = 'queued', state_attempt = $2, failure_reason = NULL, template_version = $3, updated_at = $4, traceparent = $5 WHERE id = $1`,
    values: [candidate.id, attemptBase, candidate.version, at, traceparent || null],
  });
  await client.query({
    name: 'requeue-event',
    text: `INSERT INTO message_events (message_id, state, attempt, reason, occurred_at) VALUES ($1, 'queued', $2, $3, $4)
           ON CONFLICT (message_id, attempt, state) DO NOTHING`,
    values: [candidate.id, attemptBase + 1, `re-queued by an operator (template version ${candidate.version})`, at],
  });
  const job: DeliveryJob = {
    messageId: candidate.id,
    celeryTaskId: candidate.celeryTaskId,
    projectId,
    organizationId: candidate.organizationId,
    to: candidate.recipient,
    data: candidate.data,
    template: {
      slug: candidate.slug,
      version: candidate.version,
      subject: candidate.subject,
      html: candidate.html,
      text: candidate.text,
      unsubscribe: candidate.unsubscribe,
    },
    acceptedAt: candidate.acceptedAt.toISOString(),
    requeue,
    // A test message stays one: re-queued, it is still never mailed.
    ...(candidate.test ? { test: true } : {}),
    ...(candidate.fromAddress ? { from: { address: candidate.fromAddress, name: candidate.fromName ?? '' } } : {}),
  };
  await replaceOutboxRow(client, job);
  return { job, traceparent };
}

/** Re-queues the named messages of the project in one transaction; each one not a failed message is skipped with why. */
async function requeueBatch(deps: RequeueDeps, projectId: number, ids: readonly number[]): Promise<RequeueResult & { jobs: OutgoingJob[] }> {
  return withTransaction(deps.pool, async (client) => {
    const candidates = await lockCandidates(client, projectId, ids);
    const suppressed = await findSuppressions(
      client,
      deps.dataKey,
      [...candidates.values()].map((candidate) => ({ projectId, address: candidate.recipient })),
    );
    const at = new Date();
    const result: RequeueResult & { jobs: OutgoingJob[] } = { requeued: [], skipped: [], jobs: [] };
    for (const id of ids) {
      const candidate = candidates.get(id);
      const next = candidate && reopen(candidate, candidate.lastAttempt);
      if (!candidate) result.skipped.push({ messageId: id, reason: 'message_not_found' });
      else if (!next) result.skipped.push({ messageId: id, reason: 'not_failed' });
      else if (!candidate.active) result.skipped.push({ messageId: id, reason: 'template_inactive' });
      else if (suppressed.has(suppressionKey(projectId, candidate.recipient))) result.skipped.push({ messageId: id, reason: 'recipient_suppressed' });
      else {
        result.jobs.push(await reopenMessage(client, projectId, candidate, next, at, deps.publisher.subject));
        result.requeued.push(id);
      }
    }
    return result;
  });
}

/** Publishes committed jobs; one that JetStream does not confirm stays in the outbox for the relay. */
async function publishAll(deps: RequeueDeps, jobs: readonly OutgoingJob[]): Promise<void> {
  await Promise.all(
    jobs.map(async (outgoing) => {
      const { job } = outgoing;
      try {
        await deps.publisher.publish(outgoing, 'direct');
        await deleteOutboxRows(deps.pool, [job.messageId]);
      } catch (error) {
        deps.logger.warn({ err: error, messageId: job.messageId }, 're-queued job not confirmed by JetStream; the outbox relay will publish it');
      }
    }),
  );
}

/** Re-queues the named failed messages of a project. */
export async function requeueMessages(deps: RequeueDeps, projectId: number, ids: readonly number[]): Promise<RequeueResult> {
  const unique = [...new Set(ids)];
  const { jobs, ...result } = await requeueBatch(deps, projectId, unique);
  await publishAll(deps, jobs);
  deps.metrics.messagesRequeued.inc(result.requeued.length);
  if (result.requeued.length > 0) deps.logger.info({ projectId, requeued: result.requeued.length }, 'dead letters re-queued');
  return result;
}

/**
 * Re-queues every message of the project that is failed when the call starts, a batch at a time by id, so a message
 * that fails again while the call runs is not taken a second time.
 */
export async function requeueAllMessages(deps: RequeueDeps, projectId: number): Promise<RequeueResult> {
  const limit = await deps.pool.query<{ maxId: number | null }>({
    name: 'requeue-all-limit',
    text: `SELECT max(id) AS "maxId" FROM messages WHERE project_id = $1 AND state = 'failed'`,
    values: [projectId],
  });
  const maxId = limit.rows[0]?.maxId ?? 0;
  const total: RequeueResult = { requeued: [], skipped: [] };
  let after = 0;
  while (after < maxId) {
    const page = await deps.pool.query<{ id: number }>({
      name: 'requeue-all-page',
      text: `SELECT id FROM messages WHERE project_id = $1 AND state = 'failed' AND id > $2 AND id <= $3 ORDER BY id LIMIT $4`,
      values: [projectId, after, maxId, batchSize],
    });
    const ids = page.rows.map((row) => row.id);
    if (ids.length === 0) break;
    const result = await requeueMessages(deps, projectId, ids);
    total.requeued.push(...result.requeued);
    // A message that stopped being failed since the page was read is simply no longer a dead letter.
    total.skipped.push(...result.skipped.filter((skip) => skip.reason === 'template_inactive' || skip.reason === 'recipient_suppressed'));
    after = ids.at(-1) ?? maxId;
  }
  return total;
}
