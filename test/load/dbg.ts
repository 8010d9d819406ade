import { readFileSync, mkdirSync, rmSync } from 'node:fs';
import { startSystemUnderTest } from './system/system-under-test.ts';
import { runPaced } from './generators/paced-load.ts';
import { pacedRequests, benchTemplate } from './scenarios/send-requests.ts';
import { readProfiles, summarizeProfiles } from './report/profile-summary.ts';
import { monotonicUs } from './scenarios/context.ts';
const dir = '/tmp/benchdbg/prof'; rmSync(dir, { recursive: true, force: true }); mkdirSync(dir, { recursive: true });
const system = await startSystemUnderTest({ mailerReplicas: 1, runningMailers: 1, tenants: 50, template: benchTemplate, profile: { dir, services: ['gateway', 'dispatch-svc', 'auth-svc'] } });
let w;
try {
  const startUs = monotonicUs();
  const r = await runPaced({ url: system.gatewayUrl, rate: 100, durationS: 10, connections: 64, request: pacedRequests(system.tenants) });
  w = [{ label: 'x', startUs, endUs: monotonicUs() }];
  console.log(r.statuses, r.latencyMs, r.durationS, readFileSync('/proc/loadavg','utf8'));
} finally { await system.stop(); }
for (const s of ['gateway', 'dispatch-svc', 'auth-svc']) {
  const sum = summarizeProfiles(s, readProfiles(dir, s), { windows: w, repoRoot: '/work/main/', top: 25 });
  console.log(s, sum.busyMs, sum.sampledMs, sum.gcShare.toFixed(3));
  for (const l of sum.packages.slice(0, 10)) console.log('   P', (l.share*100).toFixed(1), l.name);
  for (const l of sum.functions.slice(0, 20)) console.log('   F', (l.share*100).toFixed(1), l.name);
}
