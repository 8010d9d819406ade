import { readFileSync } from 'node:fs';
const require_load = () => readFileSync('/proc/loadavg','utf8').trim();
import { startSystemUnderTest } from './system/system-under-test.ts';
import { runPaced } from './generators/paced-load.ts';
import { pacedRequests, benchTemplate } from './scenarios/send-requests.ts';
import { deliveryState, lastMessageId } from './scenarios/message-progress.ts';
const system = await startSystemUnderTest({ mailerReplicas: 1, runningMailers: 1, tenants: 5, template: benchTemplate });
try {
  for (const rate of [100, 300, 300, 600]) {
  const r = await runPaced({ url: system.gatewayUrl, rate, durationS: 4, connections: 64, request: pacedRequests(system.tenants) });
  console.log(rate, r.statuses, r.latencyMs, r.maxScheduleLagMs, require_load());
  }
  const upTo = await lastMessageId(system.db);
  for (let i = 0; i < 20; i++) {
    const s = await deliveryState(system.db, { after: 0, upTo });
    const ev = await system.db.query("select state, count(*) from message_events group by state");
    console.log(i, s, await system.sink.received(), ev.rows.map(r=>`${r.state}:${r.count}`).join(' '));
    if (s.pending === 0) break;
    await new Promise(r => setTimeout(r, 1000));
  }
  console.log(system.stack.logs.text().slice(-3000));
} finally { await system.stop(); }
