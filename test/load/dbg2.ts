import { readFileSync } from 'node:fs';
import { startSystemUnderTest } from './system/system-under-test.ts';
import { benchTemplate, sendBody, sendHeaders } from './scenarios/send-requests.ts';
const system = await startSystemUnderTest({ mailerReplicas: 1, runningMailers: 1, tenants: 2, template: benchTemplate });
try {
  for (let round = 0; round < 3; round++) {
    const times: number[] = [];
    for (let i = 0; i < 50; i++) {
      const t = performance.now();
      const r = await fetch(system.gatewayUrl + '/api/v1/send/', { method: 'POST', headers: sendHeaders(system.tenants[0]!), body: sendBody(0) });
      await r.text();
      times.push(performance.now() - t);
    }
    times.sort((a, b) => a - b);
    console.log('sequential ms p50', times[25]?.toFixed(1), 'max', times[49]?.toFixed(1), readFileSync('/proc/loadavg', 'utf8').trim());
  }
} finally { await system.stop(); }
