// Delivery end to end: with the mailer stopped, N messages are accepted through the API (their jobs wait in
// JetStream); then the mailer starts and the bench measures how fast they reach the SMTP sink, from the `sent`
// events in the database. Raw pooled nodemailer into the same sink, same pool and concurrency, is the baseline.
import { runClosedLoop, type ClosedLoopResult } from '../generators/closed-loop.ts';
import { countOf } from '../generators/load-result.ts';
import { inWindow, requireAnswers, type BenchContext } from './context.ts';
import { lastMessageId, sentSpan, waitSettled, type DeliveryState, type SentSpan } from './message-progress.ts';
import { sendRaw, type RawSendResult } from './raw-nodemailer.ts';
import { closedLoopRequests } from './send-requests.ts';

export interface DeliveryResult {
  readonly messages: number;
  /** Accepting the N messages with the mailer stopped: ingest at saturation without delivery competing for CPU. */
  readonly preload: ClosedLoopResult;
  readonly preloadAcceptedPerSecond: number;
  readonly raw: RawSendResult;
  readonly notify: SentSpan;
  /** From the mailer's start until every message was recorded as sent in the database. */
  readonly settled: DeliveryState & { waitedS: number };
  /** Mails the sink stored while the mailer drained. */
  readonly sinkStored: number;
}

async function waitOutboxEmpty(context: BenchContext, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await context.system.db.query<{ rows: number }>('SELECT count(*)::int AS rows FROM outbox');
    const left = rows[0]?.rows ?? 0;
    if (left === 0 || Date.now() > deadline) return left;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

export async function runDelivery(context: BenchContext): Promise<DeliveryResult> {
  const { plan, system } = context;
  const messages = plan.deliveryMessages;
  await system.stopMailers([0]);

  context.progress(`delivery: accepting ${messages.toLocaleString('en-US')} messages with the mailer stopped`);
  const after = await lastMessageId(system.db);
  const preload = await runClosedLoop({ url: system.gatewayUrl, connections: plan.connections, amount: messages, requests: closedLoopRequests(system.tenants) });
  requireAnswers(context, 'delivery preload', preload);
  context.accepted += countOf(preload, 202);
  const range = { after, upTo: await lastMessageId(system.db) };
  context.progress(`  accepted ${Math.round(countOf(preload, 202) / preload.durationS)}/s`);
  // Jobs are published after commit; the few left to the outbox relay must be in JetStream before the clock starts.
  const unpublished = await waitOutboxEmpty(context, 15_000);
  if (unpublished > 0) context.progress(`delivery: ${unpublished} jobs still in the outbox`);

  context.progress(`delivery: raw nodemailer, ${messages.toLocaleString('en-US')} mails, pool ${plan.smtpPoolSize}, ${plan.mailerConcurrency} in flight`);
  const raw = await sendRaw({ port: system.sink.port, messages, poolSize: plan.smtpPoolSize, concurrency: plan.mailerConcurrency });
  context.progress(`  ${Math.round(raw.perSecond)}/s`);
  if (raw.failed > 0) context.failures.push(`delivery baseline: raw nodemailer could not send ${raw.failed} mails into the sink`);

  context.progress('delivery: starting the mailer and draining');
  const storedBefore = await system.sink.received();
  const settled = await inWindow(context, 'delivery', async () => {
    await system.startMailers([0]);
    return waitSettled(system.db, range, plan.settleTimeoutMs);
  });
  const sinkStored = (await system.sink.received()) - storedBefore;
  if (settled.failed > 0) context.failures.push(`delivery: ${settled.failed} messages failed`);
  if (settled.pending > 0) context.progress(`delivery: ${settled.pending} messages undelivered after ${Math.round(settled.waitedS)} s; checked again at the end`);
  const notify = await sentSpan(system.db, range);
  context.progress(`  ${Math.round(notify.perSecond)}/s; all recorded as sent ${settled.waitedS.toFixed(1)} s after the mailer started`);
  return { messages, preload, preloadAcceptedPerSecond: countOf(preload, 202) / preload.durationS, raw, notify, settled, sinkStored };
}
