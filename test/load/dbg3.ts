import { readFileSync } from 'node:fs';
import { startSystemUnderTest } from './system/system-under-test.ts';
import { runPaced } from './generators/paced-load.ts';
import { pacedRequests, benchTemplate } from './scenarios/send-requests.ts';
const cpu = (pid: number) => { const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' '); return (Number(f[11]) + Number(f[12])) * 10; };
const system = await startSystemUnderTest({ mailerReplicas: 1, runningMailers: 1, tenants: 50, template: benchTemplate });
const snap = () => Object.fromEntries(system.processes().map(([l, p]) => [l, cpu(p)]));
const diff = (a: any, b: any) => Object.fromEntries(Object.keys(a).map(k => [k, b[k] - a[k]]));
try {
  await new Promise(r => setTimeout(r, 3000));
  let a = snap(); await new Promise(r => setTimeout(r, 5000)); console.log('idle 5s cpu ms', diff(a, snap()), readFileSync('/proc/loadavg','utf8').trim());
  for (const rate of [100, 100]) {
  a = snap();
  const r = await runPaced({ url: system.gatewayUrl, rate, durationS: 5, connections: 64, request: pacedRequests(system.tenants) });
  const d = diff(a, snap());
  console.log(`${rate}/s`, r.statuses, 'p50', r.latencyMs.p50.toFixed(1), 'p99', r.latencyMs.p99.toFixed(1), 'dur', r.durationS.toFixed(1), 'cpu ms per msg', Object.fromEntries(Object.entries(d).map(([k,v]) => [k, (v as number / 500).toFixed(2)])), readFileSync('/proc/loadavg','utf8').trim());
  }
} finally { await system.stop(); }
