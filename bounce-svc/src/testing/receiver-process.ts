// bounce-svc's receiver in a process of its own, for the tests that measure what the receiver alone costs (its resident
// set, its event loop) while their clients, and the dispatch-svc it calls, run in the test's process.
// Started by forkReceiver (forked-receiver.ts) with its settings as JSON in argv[2]; it sends { port } once listening,
// and answers each 'usage' with what it sampled since the previous one (or its start): the highest resident set size,
// and the most CPU its main thread spent between two turns of its event loop; and its resident set size now.
import { createRegistry, GrpcClient } from '@notify/platform';
import { createDataKey } from '@notify/platform/mail';
import { dispatchProto } from '@notify/proto';
import { silentLogger } from '@notify/test/harness/logger.ts';
import { createBounceMetrics } from '../reports/metrics.ts';
import { Receiver, type ReceiverLimits } from '../reports/receiver.ts';

export interface ReceiverProcessSettings {
  dataKeyHex: string;
  bounceDomain: string;
  maxBytes: number;
  limits: ReceiverLimits;
  dispatch: { address: string; token: string };
}

const settings = JSON.parse(process.argv[2]!) as ReceiverProcessSettings;
const reports = new GrpcClient(dispatchProto.ReportService.service, settings.dispatch.address, { token: settings.dispatch.token, deadlineMs: 2_000 });
const receiver = await Receiver.start({
  host: '127.0.0.1',
  port: 0,
  dataKey: createDataKey(Buffer.from(settings.dataKeyHex, 'hex')),
  bounceDomain: settings.bounceDomain,
  maxBytes: settings.maxBytes,
  limits: settings.limits,
  reports,
  metrics: createBounceMetrics(createRegistry('bounce-test')),
  logger: silentLogger(),
  closeTimeoutMs: 1_000,
});

/** The main thread's CPU time so far, in ms: unlike a clock, it does not run on while the machine gives the CPU to others. */
const mainThreadCpuMs = (): number => {
  const { user, system } = process.threadCpuUsage();
  return (user + system) / 1_000;
};
let peak = process.memoryUsage.rss();
let longestTurnMs = 0;
let lastTurnCpuMs = mainThreadCpuMs();
const sampler = setInterval(() => {
  peak = Math.max(peak, process.memoryUsage.rss());
  const cpuMs = mainThreadCpuMs();
  longestTurnMs = Math.max(longestTurnMs, cpuMs - lastTurnCpuMs);
  lastTurnCpuMs = cpuMs;
}, 5);
process.on('message', (message) => {
  if (message === 'usage') {
    const now = process.memoryUsage.rss();
    process.send!({ peak: Math.max(peak, now), now, longestTurnMs });
    peak = now;
    longestTurnMs = 0;
  }
  if (message === 'close') {
    clearInterval(sampler);
    void receiver.close().then(() => {
      reports.close();
      process.disconnect();
    });
  }
});
process.send!({ port: receiver.port });
