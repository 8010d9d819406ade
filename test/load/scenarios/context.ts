// What every scenario gets: the plan (sizes and durations), the running system, and where it reports failures,
// progress and the time windows the CPU profiles are cut to.
import type { LoadResult } from '../generators/load-result.ts';
import { count5xx } from '../generators/load-result.ts';
import type { CpuSnapshot } from '../system/cpu-usage.ts';
import type { SystemUnderTest } from '../system/system-under-test.ts';

export interface BenchPlan {
  readonly name: 'full' | 'quick';
  /** Connections of the saturation runs and of the paced runs' socket pool, for the ceiling as for the gateway. */
  readonly connections: number;
  readonly tenants: number;
  readonly ceilingS: number;
  /** The ceiling again, open-loop at `tracingRate`: the paced runs' floor per request. */
  readonly ceilingPacedS: number;
  readonly warmupRate: number;
  readonly warmupS: number;
  /** Length of the end-to-end run at half the sustained rate (the rate is derived from the same run's capacity). */
  readonly endToEndS: number;
  readonly saturationS: number;
  readonly replayKeys: number;
  readonly replayRate: number;
  readonly replayS: number;
  /** The replay keys replayed again while one mailer drains the delivery backlog: a low rate, a few seconds. */
  readonly drainReplayRate: number;
  readonly drainReplayS: number;
  readonly deliveryMessages: number;
  /** The delivery backlog is accepted for at most this long: a system far below the targets gets fewer messages. */
  readonly deliveryPreloadMaxS: number;
  /** Messages of the second, unsigned drain (MAIL_FROM's domain without its DKIM key), accepted after the first. */
  readonly unsignedDrainMessages: number;
  /** Mailer settings, set explicitly so the raw nodemailer baseline uses the very same. */
  readonly mailerConcurrency: number;
  readonly smtpPoolSize: number;
  readonly scaleReplicas: readonly number[];
  readonly scaleWindowS: number;
  readonly scaleDelayMs: number;
  /** Tracing cost: the offered rate (at most half of what was accepted at saturation), and each run's length. */
  readonly tracingRate: number;
  readonly tracingS: number;
  readonly tracingWarmupS: number;
  /** Webhook cost: each run's length (at the tracing rate), and the messages of the one-sender burst. */
  readonly webhookS: number;
  readonly webhookWarmupS: number;
  readonly webhookBurst: number;
  /** Webhook accept path: sends accepted from one tenant with the mailers stopped, without and with an endpoint. */
  readonly webhookAcceptMessages: number;
  /** Unmeasured sends from another tenant before each of those runs: the services as warm as for the backlog's row. */
  readonly webhookAcceptWarmUp: number;
  /**
   * Status reads (GET /api/v1/messages/{id}/, after a warm-up as long as the webhook one): the offered rate (fixed: a
   * read is not bounded by what sends saturate at), the run's length, and the messages read.
   */
  readonly statusReadRate: number;
  readonly statusReadS: number;
  readonly statusReadMessages: number;
  /** Then as many reads as `connections` keep in flight, closed-loop (the accept path's condition), up to this many. */
  readonly statusReadsSaturated: number;
  /** Statistics reads (GET /api/v1/stats/, a year by day over a year of hour rows), closed-loop: how many. */
  readonly statsReadsSaturated: number;
  /** Template updates (PUT /api/v1/templates/{slug}/, a new version each), closed-loop: how many. */
  readonly templateUpdatesSaturated: number;
  /** Batch ingest (POST /api/v1/send/batch/, 100 messages a request, mailers stopped): messages, connections, longest run. */
  readonly batchMessages: number;
  readonly batchConnections: number;
  readonly batchMaxS: number;
  /** Longest wait for a scenario's messages to be delivered before moving on. */
  readonly settleTimeoutMs: number;
  /** Longest wait, at the end, for every accepted message to be delivered before it counts as lost. */
  readonly finalTimeoutMs: number;
  /** The whole run is stopped (and fails) past this. */
  readonly limitMs: number;
}

export const plans: Record<BenchPlan['name'], BenchPlan> = {
  full: {
    name: 'full',
    connections: 64,
    tenants: 50,
    ceilingS: 10,
    ceilingPacedS: 5,
    warmupRate: 200,
    warmupS: 3,
    endToEndS: 10,
    saturationS: 15,
    replayKeys: 2_000,
    replayRate: 500,
    replayS: 10,
    drainReplayRate: 100,
    drainReplayS: 5,
    deliveryMessages: 16_000,
    deliveryPreloadMaxS: 75,
    unsignedDrainMessages: 5_000,
    mailerConcurrency: 32,
    smtpPoolSize: 5,
    scaleReplicas: [1, 2, 4],
    scaleWindowS: 5,
    scaleDelayMs: 100,
    tracingRate: 200,
    tracingS: 10,
    tracingWarmupS: 2,
    webhookS: 10,
    webhookWarmupS: 2,
    webhookBurst: 2_000,
    webhookAcceptMessages: 1_000,
    webhookAcceptWarmUp: 2_000,
    statusReadRate: 200,
    statusReadS: 5,
    statusReadMessages: 1_000,
    statusReadsSaturated: 5_000,
    statsReadsSaturated: 3_000,
    templateUpdatesSaturated: 3_000,
    batchMessages: 10_000,
    batchConnections: 8,
    batchMaxS: 30,
    settleTimeoutMs: 90_000,
    finalTimeoutMs: 120_000,
    limitMs: 12 * 60_000,
  },
  quick: {
    name: 'quick',
    connections: 64,
    tenants: 20,
    ceilingS: 3,
    ceilingPacedS: 2,
    warmupRate: 200,
    warmupS: 1,
    endToEndS: 4,
    saturationS: 4,
    replayKeys: 300,
    replayRate: 500,
    replayS: 3,
    drainReplayRate: 100,
    drainReplayS: 2,
    deliveryMessages: 2_000,
    deliveryPreloadMaxS: 12,
    unsignedDrainMessages: 1_000,
    mailerConcurrency: 32,
    smtpPoolSize: 5,
    scaleReplicas: [1, 2, 4],
    scaleWindowS: 2,
    scaleDelayMs: 100,
    tracingRate: 200,
    tracingS: 4,
    tracingWarmupS: 1,
    webhookS: 4,
    webhookWarmupS: 1,
    webhookBurst: 500,
    webhookAcceptMessages: 500,
    webhookAcceptWarmUp: 2_000,
    statusReadRate: 200,
    statusReadS: 3,
    statusReadMessages: 300,
    statusReadsSaturated: 3_000,
    statsReadsSaturated: 1_000,
    templateUpdatesSaturated: 1_000,
    batchMessages: 2_000,
    batchConnections: 8,
    batchMaxS: 10,
    settleTimeoutMs: 20_000,
    finalTimeoutMs: 60_000,
    limitMs: 5 * 60_000,
  },
};

/** The run's time limit: half as long again with CPU profiles, whose sampler slows every process it profiles. */
export function runLimitMs(plan: Pick<BenchPlan, 'limitMs'>, profiled: boolean): number {
  return profiled ? plan.limitMs * 1.5 : plan.limitMs;
}

/** A stretch of time on the monotonic clock, in microseconds (the clock V8's CPU profiles use). */
export interface TimeWindow {
  readonly label: string;
  readonly startUs: number;
  readonly endUs: number;
}

export interface BenchContext {
  readonly plan: BenchPlan;
  readonly system: SystemUnderTest;
  /** Why the run fails (a 5xx, a lost message...); misses of targets are not failures. */
  readonly failures: string[];
  /** Messages the gateway accepted as new (202 without Idempotent-Replayed), across all scenarios. */
  accepted: number;
  /**
   * Send requests abandoned at the client's deadline: the system may still have accepted them after the client gave
   * up, so the database may hold up to this many messages more than `accepted`.
   */
  abandoned: number;
  readonly windows: TimeWindow[];
  progress(line: string): void;
  /** CPU time used so far per process group (see system/cpu-usage.ts), with `helpers` counted as groups of their own. */
  cpu(helpers?: ReadonlyArray<readonly [string, number | undefined]>): Promise<CpuSnapshot>;
  /** Time waited for a CPU so far per process of the same groups (see system/cpu-usage.ts). */
  runQueueWait(): Promise<CpuSnapshot>;
}

export function monotonicUs(): number {
  return Number(process.hrtime.bigint() / 1_000n);
}

/** Runs `work`, recording its time window under `label` for the profile summary. */
export async function inWindow<T>(context: BenchContext, label: string, work: () => Promise<T>): Promise<T> {
  const startUs = monotonicUs();
  try {
    return await work();
  } finally {
    context.windows.push({ label, startUs, endUs: monotonicUs() });
  }
}

/**
 * No request may get a 5xx or lose its connection; either fails the bench. A request unanswered at the deadline fails
 * it too, except where `timeoutsAllowed` (open-loop runs at a fixed rate: there the client's queue grows when the
 * offered rate is above what the system sustains, and the run is reported as not sustained instead).
 */
export function requireAnswers(
  context: BenchContext,
  what: string,
  result: LoadResult & { readonly cutOff?: number },
  options: { timeoutsAllowed?: boolean } = {},
): void {
  const serverErrors = count5xx(result);
  context.abandoned += result.timeouts + result.errors + (result.cutOff ?? 0);
  if (serverErrors > 0) context.failures.push(`${what}: ${serverErrors} responses with a 5xx status (${JSON.stringify(result.statuses)})`);
  if (result.errors > 0) context.failures.push(`${what}: ${result.errors} requests lost their connection without an answer`);
  if (result.timeouts > 0 && !options.timeoutsAllowed) context.failures.push(`${what}: ${result.timeouts} requests unanswered within the deadline`);
}
