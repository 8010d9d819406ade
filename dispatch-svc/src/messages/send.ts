// DispatchService.Send, the one call of a send: checks 10-14 of docs/contract.md's "Order of checks" (the Idempotency-Key's record, the
// gateway's verdict on the fields, the template, its data, the monthly quota), then acceptance. Concurrent sends are
// judged and accepted together, in one transaction per batch (group commit), that writes each message, its
// idempotency record and its outbox row and counts it against its organization's monthly quota; a refused send writes
// nothing. After commit each job is published directly, and the outbox relay covers any publish that did not get
// confirmed. Each accepted message gets a `create` span in its request's trace, whose context is stored with it: every
// later step of its delivery, in whatever process, continues that trace.
import { status } from '@grpc/grpc-js';
import { activeContext, annotateRequestSpan, Batcher, type Logger, notifyAttributes, UserError } from '@notify/platform';
import { type Pool, type PoolClient, withTransaction } from '@notify/platform/database';
import type { DataKey } from '@notify/platform/mail';
import type { AcceptedBody, dispatch } from '@notify/proto';
import { judgeIdempotencyKeys } from '../idempotency/key-check.ts';
import type { DispatchMetrics } from '../metrics.ts';
import type { JobPublisher } from '../outbox/job-publisher.ts';
import { type PublishAccepted, publishAccepted } from '../outbox/publish-accepted.ts';
import { refuseSuppressedRecipients } from '../suppressions/suppression-check.ts';
import { judgeTemplates } from '../templates/template-check.ts';
import type { VariablesSchemas } from '../templates/variables-schema.ts';
import { countMonthlyUsage } from '../usage/quota-check.ts';
import { writeAcceptedRows } from './accepted-rows.ts';
import { BatchVerdicts, type Outcome, type Pending, refused } from './batch-verdicts.ts';
import { fieldsInvalid, refuseInvalidFields, validate } from './send-request.ts';
import { judgeSenders } from './sender-check.ts';

export interface SendDeps {
  readonly pool: Pool;
  readonly publisher: JobPublisher;
  readonly schemas: VariablesSchemas;
  readonly metrics: DispatchMetrics;
  readonly logger: Logger;
  readonly idempotencyTtlMs: number;
  /** Largest data and template texts one job may carry (jobContentLimit of the NATS server's max_payload). */
  readonly maxJobContentBytes: number;
  /** NOTIFY_DATA_KEY: finds erased recipients' suppressions. */
  readonly dataKey: DataKey;
}

/**
 * Sends per transaction, and transactions at once. The sends that arrive while a transaction runs wait for it and go
 * together in the next one, so under load a transaction carries many sends and its statements and its commit (one WAL
 * flush) are shared; alone, a send is a batch of one and waits for nothing. Four transactions started whenever fewer
 * ran made each smaller (0.16-0.20 commits per accepted send at saturation against 0.06-0.13 one at a time) for no
 * more sends per second, and PostgreSQL spent half as much CPU again per send (0.33 ms against 0.22 ms on average,
 * mailers stopped, 64 connections). A transaction that has run `stuckAfterMs` is waiting (a lock another
 * transaction holds, a slow disk), not working: the next starts beside it, so that one stuck send never holds every
 * other (a send whose Idempotency-Key is in flight is still answered 409 within that time, not after the first one's
 * wait).
 */
const maxSendsPerBatch = 64;
const concurrentBatches = 4;
/**
 * Several times a transaction's time at saturation: one at a time on a two-core machine, 1,450 sends a second made
 * fewer than 150 commits a second (under 7 ms each).
 */
const stuckAfterMs = 50;

/** SQLSTATE classes of a failure one send of a batch can cause: data exceptions, constraint violations, rollbacks. */
export const sendSpecificFailure = /^(22|23|40)/;

/** SQLSTATE class 22, data exception: alone in its transaction, a send the database refuses so holds the value at fault. */
const dataException = /^22/;

/** The send's data holds a value PostgreSQL cannot store (U+0000 in a string of its jsonb); the gateway's 422 on `data`. */
export function unstorableData(): UserError {
  return new UserError(status.INVALID_ARGUMENT, 'data_unstorable', 'the data holds a value the database cannot store, such as U+0000');
}

/**
 * The steps of one batch, in one transaction: each statement serves the whole batch, and a refused send leaves
 * nothing behind. The order is the contract's: the idempotency record (check 10) before the fields (11), the From
 * (the key's domains, then a verified domain), the template (12) and its data (13), then the suppression list (a 422 on `to`, docs/contract.md "Recipients that must not
 * be mailed"): a suppressed recipient creates nothing and uses no quota; the quota, judged for the contract before all of them by the gateway (check 5), is
 * counted last here, so that the usage rows are locked only until the commit right after.
 */
export async function acceptBatch(client: PoolClient, deps: SendDeps, sends: readonly Pending[]): Promise<PromiseSettledResult<Outcome>[]> {
  const batch = new BatchVerdicts(sends);
  await judgeIdempotencyKeys(client, batch);
  refuseInvalidFields(batch);
  await judgeSenders(client, batch);
  const templates = await judgeTemplates(client, batch, deps);
  await refuseSuppressedRecipients(client, deps.dataKey, batch);
  const written = await writeAcceptedRows(client, batch, templates, deps);
  await countMonthlyUsage(client, batch, written);
  return batch.results();
}

/**
 * A batch in its transaction. When the database refuses it for something one send can cause (a value it rejects, a
 * constraint, a deadlock), each send is tried again on its own, so that a send fails only for itself.
 */
async function acceptInTransaction(deps: SendDeps, batch: readonly Pending[]): Promise<readonly PromiseSettledResult<Outcome>[]> {
  try {
    return await withTransaction(deps.pool, (client) => acceptBatch(client, deps, batch));
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (batch.length === 1 && typeof code === 'string' && dataException.test(code)) throw unstorableData();
    if (batch.length === 1 || typeof code !== 'string' || !sendSpecificFailure.test(code)) throw error;
    deps.logger.warn({ err: error, sends: batch.length }, 'a batch of sends failed; accepting each on its own');
    return Promise.all(batch.map((pending) => acceptInTransaction(deps, [pending]).then(([result]) => result ?? refused(error), refused)));
  }
}

/**
 * A stored 202 body as SendResponse, with the organization's month count when this send was counted (0 for a replay),
 * and how long its key's record stays live from the transaction's start (0 without a key, and for a batch's items).
 */
export const toSendResponse = (body: AcceptedBody, replay: boolean, organizationAccepted: number, replayableForMs = 0): dispatch.SendResponse__Output => ({
  messageId: body.message_id,
  status: body.status,
  celeryTaskId: body.celery_task_id,
  idempotentReplay: replay,
  organizationAccepted,
  sendAt: body.send_at ?? '',
  replayableForMs,
});

export type SendHandler = (request: dispatch.SendRequest__Output) => Promise<dispatch.SendResponse__Output>;

export function createSendHandler(deps: SendDeps, publishDirect: PublishAccepted = publishAccepted(deps)): SendHandler {
  const acceptor = new Batcher<Pending, Outcome>({
    maxBatchSize: maxSendsPerBatch,
    concurrency: concurrentBatches,
    overlapAfterMs: stuckAfterMs,
    run: (batch) => acceptInTransaction(deps, batch),
  });

  return async (request) => {
    const input = validate(request);
    // Without a key there is no record to judge before check 11: refused at once, without a transaction.
    if (request.fieldsInvalid && input.idempotencyKey === null) throw fieldsInvalid();
    const outcome = await acceptor.submit({ request, input, context: activeContext() });
    annotateRequestSpan({ [notifyAttributes.messageId]: outcome.response.message_id });
    if (outcome.replay) {
      deps.metrics.messagesReplayed.inc();
      return toSendResponse(outcome.response, true, 0, outcome.replayableForMs);
    }
    deps.metrics.messagesAccepted.inc();
    if (outcome.outgoing) await publishDirect(outcome.outgoing);
    // A new record lives NOTIFY_IDEMPOTENCY_TTL from its transaction's start (saveIdempotencyRecords).
    return toSendResponse(outcome.response, false, outcome.organizationAccepted, input.idempotencyKey === null ? 0 : deps.idempotencyTtlMs);
  };
}
