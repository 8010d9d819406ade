// The results table: one row per figure, with its baseline from the same run, the ratio, the target and the verdict.
// Scenarios that did not run (the bench stopped early) leave their rows out.
import type { CeilingResult } from '../scenarios/ceiling.ts';
import type { DeliveryResult } from '../scenarios/delivery.ts';
import type { IngestResult } from '../scenarios/ingest.ts';
import type { ReplayResult } from '../scenarios/replay.ts';
import type { ScaleOutResult } from '../scenarios/scale-out.ts';
import { tracingTotals, type TracingCostResult } from '../scenarios/tracing-cost.ts';
import { cpuPerEvent, webhookTotals, type WebhookCostResult } from '../scenarios/webhook-cost.ts';
import { judge, targets, type Target } from './targets.ts';

export interface Figures {
  /** Connections of the ceiling and saturation runs. */
  connections: number;
  ceiling?: CeilingResult;
  ingest?: IngestResult;
  replay?: ReplayResult;
  delivery?: DeliveryResult;
  scaleOut?: ScaleOutResult;
  tracing?: TracingCostResult;
  webhooks?: WebhookCostResult;
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
  const { connections, ceiling, ingest, replay, delivery, scaleOut, tracing, webhooks, memory } = figures;
  if (ceiling) rows.push(row(`HTTP ceiling: bare Koa, ${connections} connections (202/s)`, perSecond(ceiling.perSecond)));
  if (ingest?.saturation) {
    const saturated = ingest.saturation.acceptedPerSecond;
    rows.push(row(`ingest at saturation, ${connections} connections (accepted/s)`, perSecond(saturated), { target: targets.ingestPerSecond, judged: saturated }));
    if (ceiling && ceiling.perSecond > 0) {
      const ratio = saturated / ceiling.perSecond;
      rows.push(row('ingest / HTTP ceiling', twoPlaces(ratio), { baseline: `ceiling ${perSecond(ceiling.perSecond)}`, ratio, target: targets.ingestOfCeiling, judged: ratio }));
    }
  }
  if (ingest) {
    for (const paced of ingest.paced) {
      const at1000 = paced.rate === 1_000;
      rows.push(
        row(`ingest latency at ${whole(paced.rate)}/s offered: p50 / p99`, `${ms(paced.load.latencyMs.p50)} / ${ms(paced.load.latencyMs.p99)} ms`, {
          baseline: `achieved ${perSecond(paced.acceptedPerSecond)}${paced.load.timeouts > 0 ? `, ${whole(paced.load.timeouts)} unanswered in 10 s` : ''}`,
          ...(at1000 ? { target: targets.p99At1000Ms, judged: paced.load.latencyMs.p99 } : {}),
        }),
      );
    }
    for (const rate of ingest.skippedRates) {
      const at1000 = rate === 1_000;
      rows.push({
        figure: `ingest latency at ${whole(rate)}/s offered: p50 / p99`,
        measured: 'not run',
        baseline: 'a lower rate was not sustained',
        ratio: '',
        target: at1000 ? targets.p99At1000Ms.text : '',
        result: at1000 ? 'MISS (rate not sustained)' : '',
      });
    }
    for (const paced of ingest.paced) {
      rows.push(row(`queued->sent at ${whole(paced.rate)}/s offered: p50 / p99`, `${ms(paced.queuedToSent.p50Ms)} / ${ms(paced.queuedToSent.p99Ms)} ms`));
    }
  }
  if (delivery) {
    const notify = delivery.notify.perSecond;
    rows.push(row(`delivery drain, ${whole(delivery.messages)} messages (sent/s)`, perSecond(notify), { target: targets.deliveryPerSecond, judged: notify }));
    if (delivery.raw.perSecond > 0) {
      const ratio = notify / delivery.raw.perSecond;
      rows.push(row('delivery / raw pooled nodemailer', twoPlaces(ratio), { baseline: `raw ${perSecond(delivery.raw.perSecond)}`, ratio, target: targets.deliveryOfRaw, judged: ratio }));
    }
    rows.push(row('ingest at saturation, mailers stopped (accepted/s)', perSecond(delivery.preloadAcceptedPerSecond)));
  }
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
  if (replay) {
    rows.push(
      row(`idempotent replay at ${whole(replay.rate)}/s: p50 / p99`, `${ms(replay.replay.latencyMs.p50)} / ${ms(replay.replay.latencyMs.p99)} ms`, {
        baseline: `${whole(replay.keys)} keys`,
        target: targets.replayP99Ms,
        judged: replay.replay.latencyMs.p99,
      }),
    );
  }
  if (tracing) rows.push(...tracingRows(tracing));
  if (webhooks) rows.push(...webhookRows(webhooks));
  for (const [service, mib] of Object.entries(memory ?? {})) rows.push(row(`peak RSS ${service}`, `${whole(mib)} MiB`));
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
      rows.push(row(`CPU per message at ${at}, no OTLP endpoint (default): ${what}`, cpu(offTotals[key]), { baseline: `${whole(off.messages)} messages` }));
    }
    if (on && onTotals) rows.push(row(`CPU per message at ${at}, spans exported to OTLP: ${what}`, cpu(onTotals[key]), ratio(onTotals[key], offTotals?.[key])));
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
 * without an endpoint and with one subscribed to message.sent, the second beside the first; the extra CPU per event
 * delivered; the events the receiver got; and the events per second one webhook-svc sent in the burst.
 */
function webhookRows(webhooks: WebhookCostResult): Row[] {
  const rows: Row[] = [];
  const { none, endpoint, burst } = webhooks;
  const at = `${whole(webhooks.rate)}/s`;
  const cpu = (value: number): string => `${twoPlaces(value)} ms`;
  const noneTotals = none && webhookTotals(none.cpuPerMessage);
  const endpointTotals = endpoint && webhookTotals(endpoint.cpuPerMessage);
  for (const key of ['services', 'system'] as const) {
    if (none && noneTotals) rows.push(row(`CPU per message at ${at}, no webhook endpoint: ${key}`, cpu(noneTotals[key]), { baseline: `${whole(none.messages)} messages` }));
    if (endpoint && endpointTotals) {
      const plain = noneTotals?.[key];
      rows.push(
        row(`CPU per message at ${at}, one webhook endpoint: ${key}`, cpu(endpointTotals[key]), {
          ...(plain === undefined || plain <= 0 ? {} : { baseline: `no endpoint ${cpu(plain)}`, ratio: endpointTotals[key] / plain }),
        }),
      );
    }
  }
  if (none && endpoint) {
    for (const key of ['services', 'system'] as const) {
      const extra = cpuPerEvent(none, endpoint, key);
      if (extra !== undefined) rows.push(row(`extra CPU per webhook event: ${key}`, cpu(extra), { baseline: `(with - without) / ${whole(endpoint.events)} events` }));
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
    );
  }
  return rows;
}

/** Plain-text table for the terminal. */
export function renderTable(rows: readonly Row[]): string {
  const header: Row = { figure: 'figure', measured: 'measured', baseline: 'baseline (same run)', ratio: 'ratio', target: 'target', result: 'result' };
  const columns = ['figure', 'measured', 'baseline', 'ratio', 'target', 'result'] as const;
  const widths = columns.map((column) => Math.max(...[header, ...rows].map((entry) => entry[column].length)));
  const line = (entry: Row): string => columns.map((column, index) => entry[column].padEnd(widths[index] ?? 0)).join('  ').trimEnd();
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
