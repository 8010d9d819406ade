// The results table: one row per figure, with its baseline from the same run, the ratio, the target and the verdict.
// Scenarios that did not run (the bench stopped early) leave their rows out.
import { countOf } from '../generators/load-result.ts';
import type { BatchIngestResult } from '../scenarios/batch-ingest.ts';
import { bareKoaLabel, type CeilingResult, type PacedCeiling } from '../scenarios/ceiling.ts';
import type { DeliveryResult } from '../scenarios/delivery.ts';
import type { EndToEndResult } from '../scenarios/end-to-end.ts';
import type { IngestResult } from '../scenarios/ingest.ts';
import type { ManagementCallsResult } from '../scenarios/management-calls.ts';
import type { ReplayResult } from '../scenarios/replay.ts';
import type { ScaleOutResult } from '../scenarios/scale-out.ts';
import type { StatsReadResult } from '../scenarios/stats-reads.ts';
import type { StatusReadResult } from '../scenarios/status-reads.ts';
import { indexEntriesPerUpdate, type TableWrites } from '../scenarios/table-writes.ts';
import type { TemplateUpdateResult } from '../scenarios/template-updates.ts';
import { type TracingCostResult, tracingTotals } from '../scenarios/tracing-cost.ts';
import { backlogCpuPerEvent, cpuPerEvent, type WebhookCostResult, webhookTotals } from '../scenarios/webhook-cost.ts';
import { judge, type Target, targets } from './targets.ts';

export interface Figures {
  /** Connections of the ceiling and saturation runs. */
  connections: number;
  ceiling?: CeilingResult;
  ingest?: IngestResult;
  replay?: ReplayResult;
  delivery?: DeliveryResult;
  /** Updates of messages during the delivery drain, and what they wrote to its indexes. */
  messageWrites?: TableWrites;
  scaleOut?: ScaleOutResult;
  endToEnd?: EndToEndResult;
  tracing?: TracingCostResult;
  webhooks?: WebhookCostResult;
  statusReads?: StatusReadResult;
  /** GET /api/v1/stats/ for a year by day, at saturation. */
  statsReads?: StatsReadResult;
  templateUpdates?: TemplateUpdateResult;
  /** Batches of 100 accepted with the mailers stopped, beside the single sends' backlog (delivery.preload). */
  batch?: BatchIngestResult;
  /** Peak RSS in MiB per service. */
  memory?: Record<string, number>;
}

export interface Row {
  readonly figure: string;
  readonly measured: string;
  readonly baseline: string;
  readonly ratio: string;
  readonly target: string;
  /** pass, MISS (with the gap), or empty when the figure has no target. */
  readonly result: string;
}

const whole = (value: number): string => Math.round(value).toLocaleString('en-US');
const perSecond = (value: number): string => `${whole(value)}/s`;
const ms = (value: number): string => (value < 10 ? value.toFixed(1) : whole(value));
const twoPlaces = (value: number): string => value.toFixed(2);

/** A run's CPU per item, in ms: the services', the system's, and the SMTP sink's part of the system's. */
interface CpuTotals {
  readonly services: number;
  readonly system: number;
  readonly sink: number;
}
/** The system's figure less the SMTP sink's: the relay's work is not Notify's, and the targets judge without it. */
const withoutSink = (totals: CpuTotals): number => totals.system - totals.sink;
/** One figure of `totals` as a cell: the system's with its figure without the sink beside it, when the sink worked. */
function cpuCell(totals: CpuTotals, key: 'services' | 'system'): string {
  const total = `${twoPlaces(totals[key])} ms`;
  return key === 'system' && totals.sink >= 0.005 ? `${total} (${twoPlaces(withoutSink(totals))} without the sink)` : total;
}

function row(figure: string, measured: string, options: { baseline?: string; ratio?: number; target?: Target; judged?: number } = {}): Row {
  const { verdict, gap } = judge(options.target, options.judged);
  return {
    figure,
    measured,
    baseline: options.baseline ?? '',
    ratio: options.ratio === undefined ? '' : twoPlaces(options.ratio),
    target: options.target?.text ?? '',
    result: verdict === 'MISS' ? `MISS (${gap})` : verdict,
  };
}

export function buildRows(figures: Figures): Row[] {
  const rows: Row[] = [];
  const {
    connections,
    ceiling,
    ingest,
    replay,
    delivery,
    messageWrites,
    scaleOut,
    endToEnd,
    tracing,
    webhooks,
    statusReads,
    statsReads,
    templateUpdates,
    batch,
    memory,
  } = figures;
  if (ceiling) rows.push(row(`HTTP ceiling: bare Koa, ${connections} connections (202/s)`, perSecond(ceiling.perSecond)));
  if (ingest?.saturation) {
    const saturated = ingest.saturation.acceptedPerSecond;
    rows.push(
      row(`ingest at saturation, ${connections} connections (accepted/s)`, perSecond(saturated), { target: targets.ingestPerSecond, judged: saturated }),
    );
    if (ceiling && ceiling.perSecond > 0) {
      const ratio = saturated / ceiling.perSecond;
      rows.push(
        row('ingest / HTTP ceiling', twoPlaces(ratio), {
          baseline: `ceiling ${perSecond(ceiling.perSecond)}`,
          ratio,
          target: targets.ingestOfCeiling,
          judged: ratio,
        }),
      );
    }
  }
  if (delivery) {
    const notify = delivery.notify.perSecond;
    rows.push(row(`delivery drain, ${whole(delivery.messages)} messages (sent/s)`, perSecond(notify), { target: targets.deliveryPerSecond, judged: notify }));
    if (delivery.raw.perSecond > 0) {
      const ratio = notify / delivery.raw.perSecond;
      rows.push(
        row('delivery / raw pooled nodemailer', twoPlaces(ratio), {
          baseline: `raw ${perSecond(delivery.raw.perSecond)}`,
          ratio,
          target: targets.deliveryOfRaw,
          judged: ratio,
        }),
      );
    }
    rows.push(...deliveryCpuRows(delivery));
    rows.push(row('ingest at saturation, mailers stopped (accepted/s)', perSecond(delivery.preloadAcceptedPerSecond)));
    rows.push(...acceptPathRows(delivery, ceiling));
  }
  if (messageWrites) rows.push(...updateRows('delivery drain', 'messages', messageWrites, delivery && { count: delivery.messages, unit: 'message' }));
  if (batch) rows.push(...batchRows(batch, delivery));
  if (scaleOut) {
    const single = scaleOut.runs.find((run) => run.replicas === 1)?.perSecond;
    for (const run of scaleOut.runs) {
      const linear = single === undefined ? undefined : single * run.replicas;
      const ratio = linear && linear > 0 ? run.perSecond / linear : undefined;
      rows.push(
        row(`scale-out, ${run.replicas} mailer${run.replicas === 1 ? '' : 's'}, sink +${scaleOut.delayMs} ms (sent/s)`, perSecond(run.perSecond), {
          ...(linear === undefined ? {} : { baseline: `${run.replicas} x 1 replica = ${perSecond(linear)}` }),
          ...(ratio === undefined ? {} : { ratio, target: targets.scaleOutOfLinear, judged: ratio }),
        }),
      );
    }
  }
  if (endToEnd) rows.push(...endToEndRows(endToEnd, delivery?.raw.perSecond));
  if (replay) {
    rows.push(
      row(`idempotent replay at ${whole(replay.rate)}/s: p50 / p99`, `${ms(replay.replay.latencyMs.p50)} / ${ms(replay.replay.latencyMs.p99)} ms`, {
        baseline: `${whole(replay.keys)} keys`,
        target: targets.replayP99Ms,
        judged: replay.replay.latencyMs.p99,
      }),
      ...runQueueWaitRows(`idempotent replay at ${whole(replay.rate)}/s`, 'replay', replay.runQueueWaitMs),
    );
  }
  const draining = delivery?.replayWhileDraining;
  if (draining) {
    rows.push(
      row(
        `idempotent replay at ${whole(draining.rate)}/s while one mailer drains a backlog: p50 / p99`,
        `${ms(draining.replay.latencyMs.p50)} / ${ms(draining.replay.latencyMs.p99)} ms`,
        {
          baseline: `${whole(draining.keys)} keys`,
          target: targets.replayWhileDrainingP99Ms,
          judged: draining.replay.latencyMs.p99,
        },
      ),
      ...runQueueWaitRows(`idempotent replay at ${whole(draining.rate)}/s while draining`, 'replay', draining.runQueueWaitMs),
    );
  }
  if (tracing) rows.push(...tracingRows(tracing));
  if (ceiling?.paced) rows.push(...pacedCeilingRows(ceiling, ceiling.paced, tracing));
  if (webhooks) rows.push(...webhookRows(webhooks));
  if (statusReads) rows.push(...statusReadRows(statusReads, connections));
  if (statsReads)
    rows.push(
      ...managementCallRows(statsReads, {
        figure: `stats reads (GET /api/v1/stats/, a year by day) at saturation, ${connections} connections`,
        call: 'stats read',
        baseline: `${whole(statsReads.calls)} reads of ${whole(statsReads.hourRows)} hour rows each`,
      }),
    );
  if (templateUpdates)
    rows.push(
      ...managementCallRows(templateUpdates, {
        figure: `template updates (PUT /api/v1/templates/{slug}/, a new version each) at saturation, ${connections} connections`,
        call: 'template update',
        baseline: `${whole(templateUpdates.calls)} updates of ${whole(templateUpdates.templates)} templates`,
      }),
    );
  for (const [service, mib] of Object.entries(memory ?? {})) rows.push(row(`peak RSS ${service}`, `${whole(mib)} MiB`));
  return rows;
}

/**
 * Beside a paced run's latency: how long, per request, its processes were ready to run but waited for a CPU (the
 * scheduler's run queue), in all and by group (the four largest of at least 0.05 ms). Every process counts,
 * also those off the request's path (a mailer delivering meanwhile): the figure says how contended the cores were as
 * well as what the requests waited. On a machine with spare cores it is near zero.
 */
function runQueueWaitRows(run: string, request: string, waits: Readonly<Record<string, number>> | undefined): Row[] {
  if (!waits) return [];
  const { 'in all': total = 0, ...groups } = waits;
  const largest = Object.entries(groups)
    .filter(([, waited]) => waited >= 0.05)
    .sort(([, a], [, b]) => b - a)
    .slice(0, 4)
    .map(([group, waited]) => `${group} ${twoPlaces(waited)}`);
  return [row(`${run}: waiting for a CPU per ${request}, all processes`, `${twoPlaces(total)} ms`, { baseline: largest.join(', ') })];
}

/**
 * The bare Koa ceiling at the paced runs' rate, beside itself at saturation: what a request that arrives alone costs
 * the server and the machine (waking the processes it passes through; the system figure also carries the load
 * generator's millisecond ticker and the idle services' own timers), against a request among many. Then the
 * gateway's CPU per message at the same rate (tracing's run without an endpoint) beside the bare server's per request:
 * how many bare requests' worth of CPU the gateway spends on a send when sends come one at a time. Not judged.
 */
function pacedCeilingRows(ceiling: CeilingResult, paced: PacedCeiling, tracing: TracingCostResult | undefined): Row[] {
  const cpu = (value: number): string => `${twoPlaces(value)} ms`;
  const at = `${whole(paced.rate)}/s`;
  const beside = (value: number, saturated: number): { baseline: string; ratio?: number } => ({
    baseline: `at saturation ${cpu(saturated)}`,
    ...(saturated > 0 ? { ratio: value / saturated } : {}),
  });
  const server = paced.cpuPerRequest[bareKoaLabel] ?? 0;
  const system = webhookTotals(paced.cpuPerRequest).system;
  const rows = [
    row(`HTTP ceiling at ${at}, paced: CPU per request, bare Koa server`, cpu(server), beside(server, ceiling.cpuPerRequest[bareKoaLabel] ?? 0)),
    row(`HTTP ceiling at ${at}, paced: CPU per request, system`, cpu(system), beside(system, webhookTotals(ceiling.cpuPerRequest).system)),
  ];
  const gateway = tracing?.rate === paced.rate ? tracing.off?.cpuPerMessage.gateway : undefined;
  if (gateway !== undefined && server > 0) {
    rows.push(
      row(`CPU per message at ${at}, no OTLP endpoint: gateway / bare Koa server at ${at}`, twoPlaces(gateway / server), {
        baseline: `gateway ${cpu(gateway)}, bare Koa ${cpu(server)}`,
        ratio: gateway / server,
      }),
    );
  }
  return rows;
}

/**
 * End to end: the rate one mailer's system sustains (the lower of ingest while delivering and the drain) beside raw
 * nodemailer, then accept latency and queued->sent at half of it.
 */
function endToEndRows(endToEnd: EndToEndResult, rawPerSecond: number | undefined): Row[] {
  const rows: Row[] = [];
  const sustained = endToEnd.sustainedPerSecond;
  rows.push(
    row('end to end sustained, one mailer (accepted = delivered/s)', perSecond(sustained), {
      baseline: `lower of ingest while delivering ${perSecond(endToEnd.acceptedWhileDeliveringPerSecond)} and drain ${perSecond(endToEnd.drainPerSecond)}`,
    }),
  );
  if (rawPerSecond !== undefined && rawPerSecond > 0) {
    const ratio = sustained / rawPerSecond;
    rows.push(
      row('end to end / raw pooled nodemailer', twoPlaces(ratio), {
        baseline: `raw ${perSecond(rawPerSecond)}`,
        ratio,
        target: targets.endToEndOfRaw,
        judged: ratio,
      }),
    );
  }
  const at = `${perSecond(endToEnd.rate)} (half the sustained rate)`;
  const unanswered = endToEnd.load.timeouts + endToEnd.load.errors;
  rows.push(
    row(`accept latency at ${at}: p50 / p99`, `${ms(endToEnd.load.latencyMs.p50)} / ${ms(endToEnd.load.latencyMs.p99)} ms`, {
      baseline: `achieved ${perSecond(endToEnd.acceptedPerSecond)}${unanswered > 0 ? `, ${whole(unanswered)} unanswered` : ''}`,
      target: targets.acceptP99AtHalfSustainedMs,
      judged: endToEnd.load.latencyMs.p99,
    }),
    ...runQueueWaitRows(`accept latency at ${perSecond(endToEnd.rate)}`, 'send', endToEnd.runQueueWaitMs),
  );
  rows.push(
    row(`queued->sent at ${at}: p50 / p99`, `${ms(endToEnd.queuedToSent.p50Ms)} / ${ms(endToEnd.queuedToSent.p99Ms)} ms`, {
      baseline: `${whole(endToEnd.queuedToSent.messages)} messages`,
      target: targets.queuedToSentP99AtHalfSustainedMs,
      judged: endToEnd.queuedToSent.p99Ms,
    }),
  );
  return rows;
}

/**
 * Tracing cost: CPU per message (accepted and delivered) of the four services and of the whole system, with no OTLP
 * endpoint and with spans exported, the second beside the first; and the spans the receiver got, which prove the
 * figure includes real export.
 */
function tracingRows(tracing: TracingCostResult): Row[] {
  const rows: Row[] = [];
  const { off, on } = tracing;
  const at = `${whole(tracing.rate)}/s`;
  const cpu = (value: number): string => `${twoPlaces(value)} ms`;
  const offTotals = off && tracingTotals(off.cpuPerMessage);
  const onTotals = on && tracingTotals(on.cpuPerMessage);
  const ratio = (traced: number, plain: number | undefined): { baseline?: string; ratio?: number } =>
    plain === undefined || plain <= 0 ? {} : { baseline: `no endpoint ${cpu(plain)}`, ratio: traced / plain };
  for (const [what, key] of [
    ['services', 'services'],
    ['system', 'system'],
  ] as const) {
    if (off && offTotals) {
      rows.push(row(`CPU per message at ${at}, no OTLP endpoint (default): ${what}`, cpuCell(offTotals, key), { baseline: `${whole(off.messages)} messages` }));
    }
    if (on && onTotals)
      rows.push(row(`CPU per message at ${at}, spans exported to OTLP: ${what}`, cpuCell(onTotals, key), ratio(onTotals[key], offTotals?.[key])));
  }
  if (on && onTotals) {
    rows.push(
      row('spans received by the OTLP receiver', whole(on.spans), {
        baseline: `${(on.spans / Math.max(1, on.messages)).toFixed(1)} per message, ${whole(on.exportRequests)} exports, receiver ${cpu(onTotals.receiver)}/message`,
      }),
    );
  }
  return rows;
}

/**
 * Webhook cost: CPU per message (accepted and delivered, one tenant) of the five services and of the whole system,
 * without an endpoint and with one subscribed to every event type, the second beside the first; the same for the
 * accept path alone (mailers stopped), the system figure judged against the accept-path target; the extra CPU per
 * event at the fixed rate (not judged: there the runs' noise is as large as an event); from backlogs, the CPU per
 * event made and relayed, sent, and both (the system figure judged against the accept-path target); the events the
 * receiver got; and the events per second one webhook-svc sent in the burst.
 */
function webhookRows(webhooks: WebhookCostResult): Row[] {
  const rows: Row[] = [];
  const { none, endpoint, acceptNone, acceptEndpoint, backlogNone, backlogEndpoint, burst } = webhooks;
  const at = `${whole(webhooks.rate)}/s`;
  const cpu = (value: number): string => `${twoPlaces(value)} ms`;
  const noneTotals = none && webhookTotals(none.cpuPerMessage);
  const endpointTotals = endpoint && webhookTotals(endpoint.cpuPerMessage);
  for (const key of ['services', 'system'] as const) {
    if (none && noneTotals)
      rows.push(row(`CPU per message at ${at}, no webhook endpoint: ${key}`, cpuCell(noneTotals, key), { baseline: `${whole(none.messages)} messages` }));
    if (endpoint && endpointTotals) {
      const plain = noneTotals?.[key];
      rows.push(
        row(`CPU per message at ${at}, one webhook endpoint (every event type): ${key}`, cpuCell(endpointTotals, key), {
          ...(plain === undefined || plain <= 0 ? {} : { baseline: `no endpoint ${cpu(plain)}`, ratio: endpointTotals[key] / plain }),
        }),
      );
    }
  }
  const acceptNoneTotals = acceptNone && webhookTotals(acceptNone.cpuPerMessage);
  const acceptEndpointTotals = acceptEndpoint && webhookTotals(acceptEndpoint.cpuPerMessage);
  for (const key of ['services', 'system'] as const) {
    // The accept-path target is on the machine's CPU: the system figure.
    const judgedAgainstTarget = (totals: CpuTotals): { target?: Target; judged?: number } =>
      key === 'system' ? { target: targets.cpuPerRequestMs, judged: withoutSink(totals) } : {};
    if (acceptNone && acceptNoneTotals) {
      rows.push(
        row(`CPU per accepted send, mailers stopped, no webhook endpoint: ${key}`, cpuCell(acceptNoneTotals, key), {
          baseline: `${whole(acceptNone.messages)} sends, one tenant`,
          ...judgedAgainstTarget(acceptNoneTotals),
        }),
      );
    }
    if (acceptEndpoint && acceptEndpointTotals) {
      const plain = acceptNoneTotals?.[key];
      rows.push(
        row(`CPU per accepted send, mailers stopped, one webhook endpoint (every event type): ${key}`, cpuCell(acceptEndpointTotals, key), {
          ...(plain === undefined || plain <= 0 ? {} : { baseline: `no endpoint ${cpu(plain)}`, ratio: acceptEndpointTotals[key] / plain }),
          ...judgedAgainstTarget(acceptEndpointTotals),
        }),
      );
    }
  }
  if (none && endpoint) {
    for (const key of ['services', 'system'] as const) {
      const extra = cpuPerEvent(none, endpoint, key);
      if (extra !== undefined) {
        rows.push(row(`extra CPU per webhook event at ${at}: ${key}`, cpu(extra), { baseline: `(with - without) / ${whole(endpoint.events)} events` }));
      }
    }
  }
  if (backlogNone && backlogEndpoint && burst) {
    for (const key of ['services', 'system'] as const) {
      const cost = backlogCpuPerEvent(backlogNone, backlogEndpoint, burst, key);
      if (cost === undefined) continue;
      rows.push(
        row(`CPU per webhook event made and relayed (dispatch-svc${key === 'system' ? ', PostgreSQL, NATS' : ''}), from a backlog: ${key}`, cpu(cost.made), {
          baseline: `(with - without) / ${whole(backlogEndpoint.events)} events, ${whole(backlogEndpoint.messages)} messages each`,
        }),
        row(`CPU per webhook event sent, one webhook-svc draining a backlog: ${key}`, cpu(cost.sent), {
          baseline: `${whole(burst.eventsAfterReady)} events once it was ready`,
        }),
        row(`CPU per webhook event, from a backlog (made, relayed and sent): ${key}`, cpu(cost.total), {
          ...(key === 'system' ? { target: targets.cpuPerRequestMs, judged: cost.total } : {}),
        }),
      );
    }
  }
  if (endpoint && endpointTotals) {
    rows.push(
      row('webhook events delivered (204)', whole(endpoint.events), {
        baseline: `${whole(endpoint.delivered.sent)} messages sent, receiver ${cpu(endpointTotals.receiver)}/message`,
      }),
    );
  }
  if (burst) {
    rows.push(
      row('webhook events/s, one webhook-svc, one endpoint', perSecond(burst.perSecond), {
        baseline: `${whole(burst.events)} events in ${burst.spanS.toFixed(1)} s; ${burst.fromStartS.toFixed(1)} s from its restart to the last`,
      }),
      row('webhook burst: deliveries put back to the stream, endpoint at its share', whole(burst.endpointBusy.putBack), {
        baseline: `${whole(burst.endpointBusy.parked)} waited in webhook-svc`,
      }),
      // Not per event: the counters of so short a window miss too many of its updates (table-writes.ts).
      ...updateRows('webhook burst', 'webhook_deliveries', burst.deliveryWrites),
    );
  }
  return rows;
}

/**
 * A window's updates of one table: the share made in place (HOT), beside the updates (per message or event when
 * given) and the table's indexes, and the index entries they wrote per update; nothing when there was no update.
 */
function updateRows(window: string, table: string, writes: TableWrites, per?: { readonly count: number; readonly unit: string }): Row[] {
  if (writes.updates <= 0) return [];
  const perItem = per ? ` (${twoPlaces(writes.updates / Math.max(1, per.count))} per ${per.unit})` : '';
  return [
    row(`${window}: HOT share of updates of ${table}`, `${whole((writes.hotUpdates / writes.updates) * 100)}%`, {
      baseline: `${whole(writes.updates)} updates${perItem}, ${writes.indexes} indexes`,
    }),
    row(`${window}: index entries written per update of ${table} (at most)`, twoPlaces(indexEntriesPerUpdate(writes))),
  ];
}

/**
 * Status reads: latency and CPU per read at the fixed rate, where each read pays its wake-ups alone; then CPU per read
 * at saturation, the accept path's condition, the system figure judged against the same target.
 */
function statusReadRows(reads: StatusReadResult, connections: number): Row[] {
  const atRate = webhookTotals(reads.cpuPerRead);
  const saturated = webhookTotals(reads.saturated.cpuPerRead);
  const cpu = (value: number): string => `${twoPlaces(value)} ms`;
  return [
    row(
      `status read (GET /api/v1/messages/{id}/) at ${perSecond(reads.rate)}: p50 / p99`,
      `${ms(reads.load.latencyMs.p50)} / ${ms(reads.load.latencyMs.p99)} ms`,
      {
        baseline: `${whole(reads.reads)} reads of ${whole(reads.messages)} messages`,
      },
    ),
    row(`CPU per status read at ${perSecond(reads.rate)}: services`, cpu(atRate.services)),
    row(`CPU per status read at ${perSecond(reads.rate)}: system`, cpuCell(atRate, 'system')),
    row(`status reads at saturation, ${connections} connections`, perSecond(reads.saturated.load.answeredPerSecond), {
      baseline: `${whole(reads.saturated.reads)} reads`,
    }),
    row('CPU per status read at saturation: services', cpu(saturated.services)),
    row('CPU per status read at saturation: system', cpuCell(saturated, 'system'), { target: targets.cpuPerRequestMs, judged: withoutSink(saturated) }),
  ];
}

/** A management route at saturation (stats reads, template updates): calls per second, p50 / p99 and CPU per call. */
function managementCallRows(result: ManagementCallsResult, names: { figure: string; call: string; baseline: string }): Row[] {
  const cpu = webhookTotals(result.cpuPerCall);
  return [
    row(names.figure, perSecond(result.load.answeredPerSecond), { baseline: names.baseline }),
    row(`${names.call} at saturation: p50 / p99`, `${ms(result.load.latencyMs.p50)} / ${ms(result.load.latencyMs.p99)} ms`),
    row(`CPU per ${names.call} at saturation: services`, `${twoPlaces(cpu.services)} ms`),
    row(`CPU per ${names.call} at saturation: system`, cpuCell(cpu, 'system')),
  ];
}

/**
 * CPU per mail of the drain beside raw nodemailer's (its client is the bench's process, its sink the same): the
 * system's figures, judged without the sink as raw / drain against the same 0.8 as the rate, so at most 1.25 times
 * raw's CPU per mail.
 */
function deliveryCpuRows(delivery: DeliveryResult): Row[] {
  const drain = webhookTotals(delivery.drainCpuPerMessage);
  const raw = webhookTotals(delivery.rawCpuPerMessage);
  if (withoutSink(drain) <= 0 || withoutSink(raw) <= 0) return [];
  const ratio = withoutSink(raw) / withoutSink(drain);
  const rows = [
    row('delivery drain, DKIM-signed: CPU per mail, system', cpuCell(drain, 'system'), {
      baseline: `raw pooled nodemailer, signed ${cpuCell(raw, 'system')}`,
      ratio,
      target: targets.deliveryOfRaw,
      judged: ratio,
    }),
  ];
  const unsigned = delivery.unsigned && webhookTotals(delivery.unsigned.cpuPerMessage);
  if (delivery.unsigned && unsigned) {
    rows.push(
      row(`delivery drain, unsigned, ${whole(delivery.unsigned.messages)} messages: CPU per mail, system`, cpuCell(unsigned, 'system'), {
        baseline: `signed ${cpuCell(drain, 'system')}, ${perSecond(delivery.unsigned.perSecond)}`,
        ratio: withoutSink(unsigned) / withoutSink(drain),
      }),
    );
  }
  // Accepting and delivering a message, every process counted, the sink excluded: the accept path's CPU per send (the
  // backlog, mailers stopped) plus a drain's CPU per mail, each measured at saturation.
  const accept = withoutSink(webhookTotals(delivery.preloadCpuPerMessage));
  const together = (what: string, delivered: CpuTotals, target: Target): Row =>
    row(`accept and delivery together, ${what}: CPU per message, system without the sink`, `${twoPlaces(accept + withoutSink(delivered))} ms`, {
      baseline: `accept ${twoPlaces(accept)} + delivery ${twoPlaces(withoutSink(delivered))} ms`,
      target,
      judged: accept + withoutSink(delivered),
    });
  rows.push(together('DKIM-signed', drain, targets.acceptAndDeliverySignedMs));
  if (unsigned) rows.push(together('unsigned', unsigned, targets.acceptAndDeliveryUnsignedMs));
  return rows;
}

/**
 * The accept path (issue 14, item 1): CPU per send accepted with the mailers stopped, over the delivery backlog (the
 * largest run of single sends, at saturation, the tenants in turn), the system figure judged against the accept-path
 * target; and that figure over the bare Koa ceiling's CPU per request in the same run, judged against the target's own
 * same-run form ("about >= 0.2 x the bare Koa ceiling": at most 5 requests' worth of CPU per send).
 */
function acceptPathRows(delivery: DeliveryResult, ceiling: CeilingResult | undefined): Row[] {
  const totals = webhookTotals(delivery.preloadCpuPerMessage);
  const baseline = `${whole(countOf(delivery.preload, 202))} sends, the tenants in turn`;
  const rows = (['services', 'system'] as const).map((key) =>
    row(`CPU per accepted send, mailers stopped, the backlog: ${key}`, cpuCell(totals, key), {
      baseline,
      ...(key === 'system' ? { target: targets.cpuPerRequestMs, judged: withoutSink(totals) } : {}),
    }),
  );
  const bareKoa = ceiling && webhookTotals(ceiling.cpuPerRequest).system;
  if (bareKoa !== undefined && bareKoa > 0) {
    const ratio = withoutSink(totals) / bareKoa;
    rows.push(
      row('CPU per accepted send, mailers stopped, the backlog / bare Koa CPU per request: system', twoPlaces(ratio), {
        baseline: `bare Koa ${twoPlaces(bareKoa)} ms per request`,
        ratio,
        target: targets.acceptCpuOfCeiling,
        judged: ratio,
      }),
    );
  }
  return rows;
}

/**
 * Batches: accepted messages per second and CPU per accepted message (services and system) in batches of 100, each
 * beside the single sends' figure of the same run, accepted the same way (mailers stopped, saturation).
 */
function batchRows(batch: BatchIngestResult, delivery: DeliveryResult | undefined): Row[] {
  const cpu = (value: number): string => `${twoPlaces(value)} ms`;
  const single = delivery?.preloadAcceptedPerSecond;
  const rows = [
    row(`ingest in batches of ${batch.items}, mailers stopped (accepted messages/s)`, perSecond(batch.acceptedPerSecond), {
      ...(single === undefined || single <= 0
        ? { baseline: `${whole(batch.accepted)} messages` }
        : { baseline: `single sends ${perSecond(single)}`, ratio: batch.acceptedPerSecond / single }),
    }),
  ];
  const totals = webhookTotals(batch.cpuPerMessage);
  const singleTotals = delivery && webhookTotals(delivery.preloadCpuPerMessage);
  for (const key of ['services', 'system'] as const) {
    const plain = singleTotals?.[key];
    rows.push(
      row(`CPU per message accepted in batches of ${batch.items}, mailers stopped: ${key}`, cpuCell(totals, key), {
        ...(plain === undefined || plain <= 0 ? {} : { baseline: `single sends ${cpu(plain)}`, ratio: totals[key] / plain }),
      }),
    );
  }
  return rows;
}

/** Plain-text table for the terminal. */
export function renderTable(rows: readonly Row[]): string {
  const header: Row = { figure: 'figure', measured: 'measured', baseline: 'baseline (same run)', ratio: 'ratio', target: 'target', result: 'result' };
  const columns = ['figure', 'measured', 'baseline', 'ratio', 'target', 'result'] as const;
  const widths = columns.map((column) => Math.max(...[header, ...rows].map((entry) => entry[column].length)));
  const line = (entry: Row): string =>
    columns
      .map((column, index) => entry[column].padEnd(widths[index] ?? 0))
      .join('  ')
      .trimEnd();
  return [line(header), widths.map((width) => '-'.repeat(width)).join('  '), ...rows.map(line)].join('\n');
}

/** The same table in Markdown, for docs/benchmark.md. */
export function renderMarkdown(rows: readonly Row[]): string {
  const cells = (values: readonly string[]): string => `| ${values.map((value) => value.replaceAll('|', '\\|')).join(' | ')} |`;
  return [
    cells(['figure', 'measured', 'baseline (same run)', 'ratio', 'target', 'result']),
    cells(['---', '---:', '---', '---:', '---', '---']),
    ...rows.map((entry) => cells([entry.figure, entry.measured, entry.baseline, entry.ratio, entry.target, entry.result])),
  ].join('\n');
}
