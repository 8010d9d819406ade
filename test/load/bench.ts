// `npm run bench [-- --quick] [-- --profile]`: Notify against its ceilings, each figure beside a baseline measured in
// the same run (the machine is shared and noisy, so ratios travel better than absolutes). Prints the table, writes
// test/load/results/<timestamp>.json, and exits 1 if any request got a 5xx or no answer, or a message was lost;
// a missed target is reported, not failed. See docs/benchmark.md.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { LoadResult } from './generators/load-result.ts';
import { currentLoad, describeMachine, type MachineDescription } from './report/machine.ts';
import { type ProfileSummary, readProfiles, summarizeProfiles } from './report/profile-summary.ts';
import { buildRows, type Figures, renderTable } from './report/rows.ts';
import { runCeiling } from './scenarios/ceiling.ts';
import { type BenchContext, plans, runLimitMs, type TimeWindow } from './scenarios/context.ts';
import { runDelivery, runUnsignedDrain } from './scenarios/delivery.ts';
import { runEndToEnd } from './scenarios/end-to-end.ts';
import { type FinalCheck, finalCheck } from './scenarios/final-check.ts';
import { runIngest } from './scenarios/ingest.ts';
import { keyedRequests, runReplay } from './scenarios/replay.ts';
import { benchTemplate } from './scenarios/send-requests.ts';
import { runStatsReads } from './scenarios/stats-reads.ts';
import { runStatusReads } from './scenarios/status-reads.ts';
import { runTemplateUpdates } from './scenarios/template-updates.ts';
import { runTracingCost, tracingRate } from './scenarios/tracing-cost.ts';
import { runWebhookCost, webhookTotals } from './scenarios/webhook-cost.ts';
import { sinkLabel, snapshotCpu, snapshotRunQueueWait } from './system/cpu-usage.ts';
import { type MemorySampler, sampleMemory } from './system/memory.ts';
import { type SystemUnderTest, startSystemUnderTest } from './system/system-under-test.ts';

const usage = `usage: npm run bench [-- --quick] [-- --profile]
  --quick    about two minutes: shorter runs, 2,000 messages for delivery (a smoke test of the bench, not a measurement)
  --profile  run gateway, auth-svc, dispatch-svc, mailer-svc and webhook-svc under node --cpu-prof and summarise where their CPU went`;

const { values: flags } = parseArgs({
  options: { quick: { type: 'boolean', default: false }, profile: { type: 'boolean', default: false }, help: { type: 'boolean', default: false } },
});
if (flags.help) {
  console.log(usage);
  process.exit(0);
}

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const resultsDir = fileURLToPath(new URL('./results/', import.meta.url));
const plan = plans[flags.quick ? 'quick' : 'full'];
const startedAt = new Date();
// ISO 8601 basic format: sortable, and no colons in a file name.
const stamp = startedAt
  .toISOString()
  .replace(/[-:]/g, '')
  .replace(/\.\d+Z$/, 'Z');
const profileDir = flags.profile ? join(resultsDir, 'profiles', stamp) : undefined;
const profiledServices = ['gateway', 'auth-svc', 'dispatch-svc', 'mailer-svc', 'webhook-svc'] as const;
const command = `npm run bench${flags.quick || flags.profile ? ' --' : ''}${flags.quick ? ' --quick' : ''}${flags.profile ? ' --profile' : ''}`;
const began = performance.now();
const progress = (line: string): void => void process.stderr.write(`[${((performance.now() - began) / 1_000).toFixed(1).padStart(6)} s] ${line}\n`);

const failures: string[] = [];
const windows: TimeWindow[] = [];
const figures: Figures = { connections: plan.connections };
const loadAtStart = currentLoad();
let machine: MachineDescription | undefined;
let final: FinalCheck | undefined;
let profiles: Array<ProfileSummary & { window: string }> = [];
let system: SystemUnderTest | undefined;
let memory: MemorySampler | undefined;

function writeResults(): string {
  mkdirSync(resultsDir, { recursive: true });
  const file = join(resultsDir, `${stamp}.json`);
  const results = {
    startedAt: startedAt.toISOString(),
    durationS: Math.round((performance.now() - began) / 100) / 10,
    command,
    plan,
    machine,
    loadAtEnd: currentLoad(),
    passed: failures.length === 0,
    failures,
    rows: buildRows(figures),
    figures,
    final,
    profiles,
    profileDir: profileDir && relative(repoRoot, profileDir),
    // The scenarios' windows on the profiles' clock (monotonic µs), to cut the .cpuprofile files other ways later.
    profileWindows: profileDir ? windows : undefined,
  };
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  return file;
}

/** The time limit or Ctrl-C: stop everything, keep what was measured, fail. */
async function abort(reason: string): Promise<never> {
  failures.push(reason);
  progress(`${reason}: stopping`);
  setTimeout(() => process.exit(1), 60_000).unref();
  figures.memory = memory?.peaks();
  await system?.stop().catch(() => undefined);
  progress(`partial results in ${relative(process.cwd(), writeResults())}`);
  process.exit(1);
}
const limitMs = runLimitMs(plan, flags.profile);
setTimeout(() => void abort(`the run exceeded its limit of ${limitMs / 60_000} minutes`), limitMs).unref();
process.once('SIGINT', () => void abort('interrupted'));

function summarizeAll(): Array<ProfileSummary & { window: string }> {
  if (!profileDir) return [];
  // Each service is judged where it does the work the targets are about.
  const wanted: Record<(typeof profiledServices)[number], readonly string[]> = {
    gateway: ['ingest', 'replay', 'status reads', 'stats reads', 'tracing on'],
    'auth-svc': ['ingest'],
    'dispatch-svc': ['ingest', 'delivery', 'status reads', 'stats reads', 'tracing on'],
    'mailer-svc': ['delivery', 'tracing on'],
    'webhook-svc': ['webhook endpoint', 'webhook burst'],
  };
  const summaries: Array<ProfileSummary & { window: string }> = [];
  for (const service of profiledServices) {
    const read = readProfiles(profileDir, service);
    for (const label of wanted[service]) {
      const chosen = windows.filter((window) => window.label === label);
      if (read.length > 0 && chosen.length > 0) summaries.push({ ...summarizeProfiles(service, read, { windows: chosen, repoRoot, top: 15 }), window: label });
    }
  }
  return summaries;
}

/** Every load run's answers other than 202, so refusals (409, 429...) are visible even when they are not failures. */
function printOtherAnswers(measured: Figures): void {
  const runs: Array<[string, LoadResult | undefined]> = [
    ['ceiling', measured.ceiling?.load],
    ['ingest saturation', measured.ingest?.saturation?.load],
    ['replay keys', measured.replay?.create],
    ['replays', measured.replay?.replay],
    ['replays while draining', measured.delivery?.replayWhileDraining?.replay],
    ['delivery backlog', measured.delivery?.preload],
    [`end to end ${measured.endToEnd?.rate}/s`, measured.endToEnd?.load],
    ['tracing on', measured.tracing?.on?.load],
    ['tracing off', measured.tracing?.off?.load],
    ['webhooks none', measured.webhooks?.none?.load],
    ['webhooks endpoint', measured.webhooks?.endpoint?.load],
    ['webhook accept, no endpoint', measured.webhooks?.acceptNone?.load],
    ['webhook accept, one endpoint', measured.webhooks?.acceptEndpoint?.load],
    ['webhook backlog, no endpoint', measured.webhooks?.backlogNone?.load],
    ['webhook burst', measured.webhooks?.burst?.load],
    ['batches', measured.batch?.load],
  ];
  const lines = runs.flatMap(([name, load]) => {
    if (!load) return [];
    const other = Object.entries(load.statuses).filter(([status]) => status !== '202');
    const unanswered = load.timeouts + load.errors;
    if (other.length === 0 && unanswered === 0) return [];
    return [`  ${name}: ${[...other.map(([status, count]) => `${count} x ${status}`), ...(unanswered > 0 ? [`${unanswered} unanswered`] : [])].join(', ')}`];
  });
  console.log(lines.length === 0 ? '\nanswers other than 202: none' : `\nanswers other than 202:\n${lines.join('\n')}`);
}

function printCpu(measured: Figures): void {
  const phases: Array<[string, Record<string, number> | undefined]> = [
    ['accepting at saturation, mailer running', measured.ingest?.saturation?.cpuPerMessage],
    ['accepting the backlog, mailers stopped', measured.delivery?.preloadCpuPerMessage],
    ['raw pooled nodemailer into the same sink, the baseline (per mail)', measured.delivery?.rawCpuPerMessage],
    ['delivering the backlog, DKIM-signed (per message sent)', measured.delivery?.drainCpuPerMessage],
    ['delivering a backlog unsigned (per message sent)', measured.delivery?.unsigned?.cpuPerMessage],
    [`accepting and delivering at ${measured.tracing?.rate}/s, no OTLP endpoint`, measured.tracing?.off?.cpuPerMessage],
    [`accepting and delivering at ${measured.tracing?.rate}/s, spans exported to OTLP`, measured.tracing?.on?.cpuPerMessage],
    [`accepting and delivering at ${measured.webhooks?.rate}/s from one tenant, no webhook endpoint`, measured.webhooks?.none?.cpuPerMessage],
    [`accepting and delivering at ${measured.webhooks?.rate}/s from one tenant, one webhook endpoint`, measured.webhooks?.endpoint?.cpuPerMessage],
    ['accepting from one tenant, mailers stopped, no webhook endpoint', measured.webhooks?.acceptNone?.cpuPerMessage],
    ['accepting from one tenant, mailers stopped, one webhook endpoint', measured.webhooks?.acceptEndpoint?.cpuPerMessage],
    ['accepting and delivering a backlog from one tenant, no webhook endpoint', measured.webhooks?.backlogNone?.cpuPerMessage],
    ['accepting and delivering a backlog from one tenant, one webhook endpoint, its events relayed', measured.webhooks?.backlogEndpoint?.cpuPerMessage],
    ['sending webhook events, one webhook-svc draining a backlog (per event)', measured.webhooks?.burst?.cpuPerEvent],
    [`status reads at ${measured.statusReads?.rate}/s (per read)`, measured.statusReads?.cpuPerRead],
    ['status reads at saturation (per read)', measured.statusReads?.saturated.cpuPerRead],
    ['stats reads, a year by day, at saturation (per read)', measured.statsReads?.cpuPerCall],
    ['template updates at saturation (per update)', measured.templateUpdates?.cpuPerCall],
    [`accepting in batches of ${measured.batch?.items}, mailers stopped`, measured.batch?.cpuPerMessage],
  ];
  for (const [phase, perMessage] of phases) {
    if (!perMessage) continue;
    const parts = Object.entries(perMessage)
      .filter(([, ms]) => ms >= 0.05)
      .sort((a, b) => b[1] - a[1])
      .map(([label, ms]) => `${label} ${ms.toFixed(2)}`);
    console.log(`\nCPU ms per message, ${phase}:\n  ${parts.join(', ')}`);
  }
  const traced = measured.tracing?.on;
  if (traced) {
    const perMessage = (count: number): string => (count / Math.max(1, traced.messages)).toFixed(1);
    const parts = Object.entries(traced.spansByService)
      .sort((a, b) => b[1] - a[1])
      .map(([service, count]) => `${service} ${perMessage(count)}`);
    console.log(
      `\nspans per message received by the OTLP receiver: ${perMessage(traced.spans)} (${parts.join(', ')}), ${traced.exportRequests} export requests`,
    );
  }
  const hooked = measured.webhooks?.endpoint;
  if (hooked) {
    console.log(
      `\nwebhook events received: ${hooked.events} for ${hooked.messages} messages; receiver ${webhookTotals(hooked.cpuPerMessage).receiver.toFixed(2)} ms of CPU per message (left out of the totals)`,
    );
  }
}

function printProfiles(summaries: ReadonlyArray<ProfileSummary & { window: string }>): void {
  const share = (value: number): string => `${(value * 100).toFixed(1).padStart(5)}%`;
  for (const summary of summaries) {
    console.log(
      `\nCPU profile ${summary.service} during ${summary.window}: busy ${summary.busyMs.toLocaleString('en-US')} ms of ${summary.sampledMs.toLocaleString('en-US')} ms sampled, GC ${share(summary.gcShare).trim()} of busy`,
    );
    const { ours, dependencies, node, vm } = summary.split;
    console.log(
      `  by who asked (self time charged to the nearest frame with a file): our code ${share(ours).trim()}, dependencies ${share(dependencies).trim()}, Node alone ${share(node).trim()}, V8 ${share(vm).trim()}`,
    );
    for (const line of summary.askers.slice(0, 8)) console.log(`    ${share(line.share)}  ${line.name}`);
    console.log('  by package (self time, share of busy):');
    for (const line of summary.packages.slice(0, 8)) console.log(`    ${share(line.share)}  ${line.name}`);
    console.log('  top functions (self time):');
    for (const line of summary.functions.slice(0, 10)) console.log(`    ${share(line.share)}  ${line.name}`);
  }
}

progress(`${plan.name} run${flags.profile ? ' with CPU profiles' : ''}; load average at start ${loadAtStart.join(' ')}`);
try {
  progress('starting the system: run-unique database and prefixes, SMTP sink, services, tenants');
  system = await startSystemUnderTest({
    mailerReplicas: Math.max(...plan.scaleReplicas),
    runningMailers: 1,
    tenants: plan.tenants,
    template: benchTemplate,
    // Private targets allowed: the webhook-cost scenario's receiver listens on 127.0.0.1.
    env: { MAILER_CONCURRENCY: String(plan.mailerConcurrency), SMTP_POOL_SIZE: String(plan.smtpPoolSize), NOTIFY_WEBHOOK_ALLOW_PRIVATE: 'true' },
    ...(profileDir ? { profile: { dir: profileDir, services: profiledServices } } : {}),
  });
  const running = system;
  memory = sampleMemory(() => running.processes());
  machine = await describeMachine(running.db, loadAtStart);
  const context: BenchContext = {
    plan,
    system: running,
    failures,
    accepted: 0,
    abandoned: 0,
    windows,
    progress,
    cpu: (helpers = []) => snapshotCpu({ services: () => running.processes(), helpers: [[sinkLabel, running.sink.pid], ...helpers], db: running.db }),
    runQueueWait: () => snapshotRunQueueWait({ services: () => running.processes(), helpers: [[sinkLabel, running.sink.pid]], db: running.db }),
  };

  figures.ceiling = await runCeiling(context);
  figures.ingest = {};
  await runIngest(context, figures.ingest);
  const replayed = keyedRequests(running.tenants, plan.replayKeys);
  figures.replay = await runReplay(context, replayed, figures.ingest.saturation?.acceptedPerSecond);
  // The batch figure too: its batches are accepted beside the single sends' backlog, the same way (mailers stopped, saturation).
  await runDelivery(context, figures, replayed);
  figures.endToEnd = await runEndToEnd(context, {
    acceptedWhileDelivering: figures.ingest.saturation?.acceptedPerSecond,
    drain: figures.delivery?.notify.perSecond,
  });
  figures.tracing = { rate: tracingRate(plan.tracingRate, figures.ingest.saturation?.acceptedPerSecond) };
  await runTracingCost(context, figures.tracing);
  figures.webhooks = { rate: figures.tracing.rate };
  await runWebhookCost(context, figures.webhooks);
  figures.statusReads = await runStatusReads(context);
  figures.statsReads = await runStatsReads(context);
  figures.templateUpdates = await runTemplateUpdates(context);
  // Last: it restarts the mailer, which the scenarios above measure warm.
  if (figures.delivery) await runUnsignedDrain(context, figures.delivery);
  final = await finalCheck(context, figures.delivery?.raw.messages ?? 0);
} catch (error) {
  failures.push(`the bench stopped: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
} finally {
  await memory?.stop();
  figures.memory = memory?.peaks();
  progress('stopping the system');
  await system?.stop().catch((error: unknown) => failures.push(`stopping the system failed: ${String(error)}`));
}
// Profiles are written as each service exits, so they are read only now.
profiles = summarizeAll();

console.log(`\nNotify benchmark (${plan.name}), ${startedAt.toISOString()}`);
if (machine) {
  console.log(`machine: ${machine.cpus} CPUs (${machine.cpuModel}), ${machine.memoryGiB} GiB, Node ${machine.node}, PostgreSQL ${machine.postgres}`);
}
console.log(`load average: ${loadAtStart.join(' ')} at start, ${currentLoad().join(' ')} at end (other work on this machine shows here)\n`);
console.log(renderTable(buildRows(figures)));
printOtherAnswers(figures);
printCpu(figures);
printProfiles(profiles);
const file = writeResults();
console.log(`\nresults: ${relative(process.cwd(), file)}${profileDir ? `\nprofiles: ${relative(process.cwd(), profileDir)}` : ''}`);
if (failures.length > 0) {
  console.log(`\nFAILED:\n${failures.map((failure) => `  - ${failure}`).join('\n')}`);
  process.exitCode = 1;
} else {
  console.log('\npassed: no 5xx, no lost connection, no lost message (misses and requests left unanswered at an unsustainable fixed rate are reported above)');
}
process.exit();
