// Delivery end to end. With every mailer stopped, a backlog is accepted through the API (its jobs wait in JetStream):
// single sends, then the batch figure's batches (batch-ingest.ts), together N messages for the delivery figure plus
// what the scale-out windows will take (the single sends cut at `deliveryPreloadMaxS` if the system accepts fewer in
// that time: a system far below its targets would otherwise hold the bench for many minutes). Raw pooled nodemailer
// into the same sink, same pool and concurrency, gives the baseline, of mails per second and of CPU per mail; the
// scale-out windows run (slow sink); then the sink is made fast again, one mailer starts, and the bench measures from
// the `sent` events in the database how fast the rest, at least N messages, reach the sink, and what each cost. While
// it drains, the replay scenario's keys are replayed for a few seconds at a low rate: replay latency with the mailer,
// NATS and the sink busy on the same cores, for a small share of the drain's CPU. The bench's mail is DKIM-signed (as
// is raw nodemailer's); at the end of the bench a second, smaller backlog is accepted and drained with MAIL_FROM's
// domain's key taken away, for what delivery costs unsigned, and the key is given back.
import { type ClosedLoopResult, runClosedLoop } from '../generators/closed-loop.ts';
import { countOf } from '../generators/load-result.ts';
import type { PacedRequest } from '../generators/paced-load.ts';
import { cpuPerMessage } from '../system/cpu-usage.ts';
import { acceptBatches, type BatchIngestResult } from './batch-ingest.ts';
import { type BenchContext, type BenchPlan, inWindow, requireAnswers } from './context.ts';
import { type DeliveryState, lastMessageId, type SentSpan, sentSpan, waitSettled } from './message-progress.ts';
import { type RawSendResult, sendRaw } from './raw-nodemailer.ts';
import { type ReplayResult, replayKeys } from './replay.ts';
import { runScaleOut, type ScaleOutResult, scaleOutBacklog } from './scale-out.ts';
import { closedLoopRequests } from './send-requests.ts';
import { type TableWrites, tableUpdates, tableWritesSince } from './table-writes.ts';

export interface DeliveryResult {
  /** Messages delivered in the drain (the backlog less what the scale-out windows took). */
  readonly messages: number;
  /** Accepting the backlog with every mailer stopped: ingest at saturation without delivery competing for CPU. */
  readonly preload: ClosedLoopResult;
  readonly preloadAcceptedPerSecond: number;
  /** CPU milliseconds per accepted message while the backlog was accepted (no mailer running). */
  readonly preloadCpuPerMessage: Record<string, number>;
  /** CPU milliseconds per delivered message during the drain. */
  readonly drainCpuPerMessage: Record<string, number>;
  readonly raw: RawSendResult;
  /** CPU milliseconds per mail raw nodemailer sent (its client is the bench's own process), read like the drain's. */
  readonly rawCpuPerMessage: Record<string, number>;
  readonly notify: SentSpan;
  /** From the mailer's start until every message was recorded as sent in the database. */
  readonly settled: DeliveryState & { waitedS: number };
  /** The replay scenario's keys replayed while the mailer drained (absent when there were none). */
  readonly replayWhileDraining?: Omit<ReplayResult, 'create'>;
  /** The same drain unsigned, over a backlog of its own (absent when the bench stopped before it). */
  unsigned?: UnsignedDrain;
}

/** A backlog drained with MAIL_FROM's domain's DKIM key taken away: mail as it goes out unsigned. */
export interface UnsignedDrain {
  readonly messages: number;
  readonly perSecond: number;
  /** CPU milliseconds per delivered message during the drain. */
  readonly cpuPerMessage: Record<string, number>;
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

/**
 * Single sends of the delivery backlog: the drain's N messages and the scale-out windows' share, less the batches,
 * which bring the rest (accepting them is a figure of their own; delivering them is the drain's).
 */
export function singleSendBacklog(plan: BenchPlan): number {
  return plan.deliveryMessages + scaleOutBacklog(plan) - plan.batchMessages;
}

/**
 * `replayed`: Idempotency-Keys the replay scenario accepted, replayed again during the drain. Started with the mailer,
 * it ends well before the drain does (`drainReplayS` against a drain of tens of seconds in the full plan).
 */
export async function runDelivery(
  context: BenchContext,
  into: { delivery?: DeliveryResult; scaleOut?: ScaleOutResult; messageWrites?: TableWrites; batch?: BatchIngestResult },
  replayed: readonly PacedRequest[],
): Promise<void> {
  const { plan, system } = context;
  const mailers = Array.from({ length: Math.max(...plan.scaleReplicas) }, (_, index) => index);
  await system.stopMailers(mailers);

  const backlog = singleSendBacklog(plan);
  context.progress(`delivery: accepting a backlog of ${backlog.toLocaleString('en-US')} single sends with every mailer stopped (the batches bring the rest)`);
  const after = await lastMessageId(system.db);
  const preloadCpuBefore = await context.cpu();
  const preload = await runClosedLoop({
    url: system.gatewayUrl,
    connections: plan.connections,
    amount: backlog,
    maxDurationS: plan.deliveryPreloadMaxS,
    requests: closedLoopRequests(system.tenants),
  });
  const preloadCpuPerMessage = cpuPerMessage(preloadCpuBefore, await context.cpu(), countOf(preload, 202));
  requireAnswers(context, 'delivery backlog', preload);
  context.accepted += countOf(preload, 202);
  const preloadAcceptedPerSecond = countOf(preload, 202) / preload.durationS;
  context.progress(`  accepted ${Math.round(preloadAcceptedPerSecond)}/s`);
  // Jobs are published after commit; the few left to the outbox relay must be in JetStream before the next clock starts.
  await waitOutboxEmpty(context, 15_000);
  const batches = await acceptBatches(context);
  into.batch = batches.result;
  const range = { after, upTo: batches.range.upTo };
  const unpublished = await waitOutboxEmpty(context, 15_000);
  if (unpublished > 0) context.progress(`delivery: ${unpublished} jobs still in the outbox`);

  // The baseline sends as many mails as the drain will deliver (the backlog less what the scale-out may take).
  const messages = Math.max(1_000, Math.min(plan.deliveryMessages, countOf(preload, 202) + batches.result.accepted - scaleOutBacklog(plan)));
  if (messages < plan.deliveryMessages)
    context.progress(`delivery: the backlog was cut at ${plan.deliveryPreloadMaxS} s; about ${messages.toLocaleString('en-US')} messages for the drain`);
  context.progress(
    `delivery baseline: raw nodemailer, ${messages.toLocaleString('en-US')} mails, pool ${plan.smtpPoolSize}, ${plan.mailerConcurrency} in flight`,
  );
  const rawCpuBefore = await context.cpu();
  const raw = await sendRaw({ port: system.sink.port, messages, poolSize: plan.smtpPoolSize, concurrency: plan.mailerConcurrency });
  const rawCpuPerMessage = cpuPerMessage(rawCpuBefore, await context.cpu(), raw.messages);
  context.progress(`  ${Math.round(raw.perSecond)}/s, ${(rawCpuPerMessage['machine total'] ?? 0).toFixed(2)} ms of machine CPU per mail`);
  if (raw.failed > 0) context.failures.push(`delivery baseline: raw nodemailer could not send ${raw.failed} mails into the sink`);

  into.scaleOut = { delayMs: plan.scaleDelayMs, runs: [] };
  await runScaleOut(context, range, into.scaleOut);

  context.progress('delivery: one mailer drains the rest of the backlog');
  const drainStarted = new Date();
  const updatesBefore = await tableUpdates(system.db, 'messages');
  await system.startMailers([0]);
  // The mailer's start-up (loading its modules) is not a mail's cost: the CPU, and the profiles' window, count from its
  // readiness. The mails it sent before the reading below are a few of thousands.
  const drainCpuBefore = await context.cpu();
  let replayWhileDraining: DeliveryResult['replayWhileDraining'];
  const settled = await inWindow(context, 'delivery', async () => {
    const replays = async (): Promise<void> => {
      if (replayed.length === 0) return;
      const rate = plan.drainReplayRate;
      context.progress(
        `delivery: replaying ${replayed.length.toLocaleString('en-US')} idempotency keys at ${rate}/s for ${plan.drainReplayS} s while it drains`,
      );
      replayWhileDraining = {
        keys: replayed.length,
        rate,
        ...(await replayKeys(context, 'replay while draining', replayed, { rate, durationS: plan.drainReplayS })),
      };
    };
    const [state] = await Promise.all([waitSettled(system.db, range, plan.settleTimeoutMs), replays()]);
    return state;
  });
  if (settled.failed > 0) context.failures.push(`delivery: ${settled.failed} messages failed`);
  if (settled.pending > 0)
    context.progress(`delivery: ${settled.pending} messages undelivered after ${Math.round(settled.waitedS)} s; checked again at the end`);
  const notify = await sentSpan(system.db, range, drainStarted);
  const drainCpuPerMessage = cpuPerMessage(drainCpuBefore, await context.cpu(), notify.messages);
  // Only the drain's state changes update messages in this window (replays write nothing): what each cost in index writes.
  into.messageWrites = await tableWritesSince(system.db, 'messages', updatesBefore);
  context.progress(
    `  ${Math.round(notify.perSecond)}/s over ${notify.messages.toLocaleString('en-US')} messages; all recorded as sent ${settled.waitedS.toFixed(1)} s after the mailer started`,
  );
  if (replayWhileDraining && settled.pending === 0 && settled.waitedS < plan.drainReplayS) {
    context.progress(
      `delivery: the drain ended ${settled.waitedS.toFixed(1)} s after the mailer started, before the replays did: part of them ran with the mailers idle`,
    );
  }
  into.delivery = {
    messages: notify.messages,
    preload,
    preloadAcceptedPerSecond,
    preloadCpuPerMessage,
    drainCpuPerMessage,
    raw,
    rawCpuPerMessage,
    notify,
    settled,
    ...(replayWhileDraining ? { replayWhileDraining } : {}),
  };
}

/**
 * The unsigned drain: with the mailers stopped, MAIL_FROM's domain loses its DKIM key and a backlog of its own is
 * accepted; one mailer, started without a key, drains it; the domain then gets a key again (the mailer restarted).
 */
export async function runUnsignedDrain(context: BenchContext, into: DeliveryResult): Promise<void> {
  const { plan, system } = context;
  await system.stopMailers([0]);
  await system.signing.remove();
  const amount = plan.unsignedDrainMessages;
  context.progress(`delivery unsigned: accepting a backlog of ${amount.toLocaleString('en-US')} with every mailer stopped and no DKIM key`);
  const after = await lastMessageId(system.db);
  const preload = await runClosedLoop({
    url: system.gatewayUrl,
    connections: plan.connections,
    amount,
    maxDurationS: plan.deliveryPreloadMaxS,
    requests: closedLoopRequests(system.tenants),
  });
  requireAnswers(context, 'unsigned delivery backlog', preload);
  context.accepted += countOf(preload, 202);
  await waitOutboxEmpty(context, 15_000);
  const range = { after, upTo: await lastMessageId(system.db) };
  context.progress('delivery unsigned: one mailer drains it');
  const started = new Date();
  await system.startMailers([0]);
  const cpuBefore = await context.cpu();
  const settled = await inWindow(context, 'delivery unsigned', () => waitSettled(system.db, range, plan.settleTimeoutMs));
  const notify = await sentSpan(system.db, range, started);
  const cpuPerMessageSent = cpuPerMessage(cpuBefore, await context.cpu(), notify.messages);
  if (settled.failed > 0) context.failures.push(`delivery unsigned: ${settled.failed} messages failed`);
  context.progress(`  ${Math.round(notify.perSecond)}/s over ${notify.messages.toLocaleString('en-US')} messages`);
  into.unsigned = { messages: notify.messages, perSecond: notify.perSecond, cpuPerMessage: cpuPerMessageSent };
  await system.signing.add();
}
