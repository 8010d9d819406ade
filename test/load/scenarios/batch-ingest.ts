// Ingest in batches (POST /api/v1/send/batch/), beside the single sends' figure measured the same way (delivery.ts):
// every mailer stopped, closed loop at saturation, each request a batch of `batchItems` valid messages for one
// tenant, the tenants taking turns. Accepted messages per second and CPU per accepted message, counted in the
// database (every item must be accepted: any other entry fails the bench). Their jobs join the delivery backlog,
// which the delivery drain delivers, so the final check finds them sent.
import { type ClosedLoopRequest, type ClosedLoopResult, runClosedLoop } from '../generators/closed-loop.ts';
import { countOf } from '../generators/load-result.ts';
import { cpuPerMessage } from '../system/cpu-usage.ts';
import type { BenchTenant } from '../system/system-under-test.ts';
import { type BenchContext, inWindow, requireAnswers } from './context.ts';
import { type IdRange, lastMessageId, quietMessageId } from './message-progress.ts';
import { sendBody, sendHeaders } from './send-requests.ts';

/** Messages per batch request. */
export const batchItems = 100;
export const batchPath = '/api/v1/send/batch/';

export interface BatchIngestResult {
  readonly items: number;
  readonly load: ClosedLoopResult;
  /** Messages the batches created (each batch's accepted items). */
  readonly accepted: number;
  readonly acceptedPerSecond: number;
  /** CPU milliseconds per accepted message, per process group, while the batches were accepted. */
  readonly cpuPerMessage: Record<string, number>;
}

/** One batch request per tenant: `batchItems` of the single sends' bodies, to distinct recipients. */
export function batchRequests(tenants: readonly BenchTenant[]): ClosedLoopRequest[] {
  return tenants.map((tenant, index) => ({
    path: batchPath,
    headers: sendHeaders(tenant),
    body: `{"messages":[${Array.from({ length: batchItems }, (_, item) => sendBody(index * batchItems + item)).join(',')}]}`,
  }));
}

/** Accepts the batches with every mailer stopped (the caller's part) and leaves their messages undelivered: their range. */
export async function acceptBatches(context: BenchContext): Promise<{ result: BatchIngestResult; range: IdRange }> {
  const { plan, system } = context;
  const requests = Math.max(1, Math.round(plan.batchMessages / batchItems));
  context.progress(
    `batch ingest: ${requests.toLocaleString('en-US')} batches of ${batchItems} with every mailer stopped, ${plan.batchConnections} connections`,
  );
  const after = await lastMessageId(system.db);
  const cpuBefore = await context.cpu();
  const load = await inWindow(context, 'batch ingest', () =>
    runClosedLoop({
      url: system.gatewayUrl,
      connections: plan.batchConnections,
      amount: requests,
      maxDurationS: plan.batchMaxS,
      requests: batchRequests(system.tenants),
    }),
  );
  const cpuAfter = await context.cpu();
  requireAnswers(context, 'batch ingest', load);
  const other = Object.entries(load.statuses).filter(([status]) => status !== '200' && !status.startsWith('5'));
  if (other.length > 0) context.failures.push(`batch ingest: answers other than 200 (${JSON.stringify(Object.fromEntries(other))})`);

  // Requests the client gave up on may still be committing: the range closes once no new message appeared for a second.
  const range = { after, upTo: await quietMessageId(system.db, 15_000) };
  const { rows } = await system.db.query<{ n: number }>('SELECT count(*)::int AS n FROM messages WHERE id > $1 AND id <= $2', [range.after, range.upTo]);
  const accepted = rows[0]?.n ?? 0;
  const answered = countOf(load, 200) * batchItems;
  if (accepted < answered) context.failures.push(`batch ingest: ${answered - accepted} items of the answered batches were not accepted`);
  context.accepted += accepted;
  const acceptedPerSecond = (countOf(load, 200) * batchItems) / load.durationS;
  const perMessage = cpuPerMessage(cpuBefore, cpuAfter, countOf(load, 200) * batchItems);
  context.progress(`  accepted ${Math.round(acceptedPerSecond)} messages/s, batch latency p50 ${load.latencyMs.p50} ms, p99 ${load.latencyMs.p99} ms`);
  return { result: { items: batchItems, load, accepted, acceptedPerSecond, cpuPerMessage: perMessage }, range };
}
