// `node test/load/retention-purge.ts [--rows N] [--rate R] [--seconds S]`: the accept latency while the retention
// purge deletes a large backlog (docs/benchmark.md, "Retention purge while sending"). Not part of `npm run bench` or
// `npm test`: it takes minutes, most of them PostgreSQL writing and deleting the rows. On the bench's system (run-unique
// database, one mailer delivering as sends come), it inserts N messages in a final state past their retention with SQL
// (one event each, spread over the tenants), then, after a warm-up, sends open-loop at R/s for S seconds three times: before the purge,
// while `RetentionAdminService.PurgeExpiredMessages` (what `notifyctl messages purge` calls) works through the
// backlog, and after it. Prints each window's accept latency and the purge's rate; exits 1 on a 5xx, a lost request or
// rows left behind.
import { parseArgs } from 'node:util';
import { GrpcClient } from '@notify/platform';
import { dispatchProto } from '@notify/proto';
import { count5xx } from './generators/load-result.ts';
import { type PacedLoadResult, runPaced } from './generators/paced-load.ts';
import { currentLoad } from './report/machine.ts';
import { benchTemplate, pacedRequests } from './scenarios/send-requests.ts';
import { type SystemUnderTest, startSystemUnderTest } from './system/system-under-test.ts';

const { values } = parseArgs({
  options: { rows: { type: 'string', default: '1000000' }, rate: { type: 'string', default: '100' }, seconds: { type: 'string', default: '20' } },
});
const rows = Number(values.rows);
const rate = Number(values.rate);
const seconds = Number(values.seconds);
const chunk = 50_000;

/** N sent messages, 40 days past their last change (the default retention keeps 30), each with its `sent` event. */
async function insertOldMessages(system: SystemUnderTest): Promise<void> {
  const owners = [];
  for (const tenant of system.tenants) {
    const { rows: found } = await system.db.query<{ template_id: number; api_key_id: number }>(
      'SELECT (SELECT id FROM templates WHERE project_id = $1 AND slug = $2) AS template_id, (SELECT id FROM api_keys WHERE project_id = $1 LIMIT 1) AS api_key_id',
      [tenant.projectId, benchTemplate],
    );
    owners.push({ ...tenant, ...found[0] });
  }
  for (let first = 0; first < rows; first += chunk) {
    const owner = owners[(first / chunk) % owners.length]!;
    await system.db.query(
      `WITH inserted AS (
         INSERT INTO messages (project_id, organization_id, api_key_id, template_id, template_slug, template_version, recipient, data, state, celery_task_id, created_at, updated_at)
         SELECT $1, $2, $3, $4, $5, 1, 'old-' || i || '@example.com', '{"name": "Ada Lovelace", "code": "N-1843"}', 'sent', gen_random_uuid(),
                now() - interval '41 days', now() - interval '40 days' - i * interval '1 second'
           FROM generate_series($6::int, $7::int) i
         RETURNING id, updated_at)
       INSERT INTO message_events (message_id, state, attempt, occurred_at) SELECT id, 'sent', 1, updated_at FROM inserted`,
      [owner.projectId, owner.organizationId, owner.api_key_id, owner.template_id, benchTemplate, first, Math.min(rows, first + chunk) - 1],
    );
  }
  await system.db.query('VACUUM ANALYZE messages, message_events');
}

async function sendWindow(system: SystemUnderTest, label: string): Promise<PacedLoadResult> {
  const result = await runPaced({ url: system.gatewayUrl, rate, durationS: seconds, connections: 64, request: pacedRequests(system.tenants) });
  const { p50, p90, p99, max } = result.latencyMs;
  console.log(
    `${label}: ${result.completed}/${result.sent} answered, statuses ${JSON.stringify(result.statuses)}, p50 ${p50.toFixed(1)} ms, p90 ${p90.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, max ${max.toFixed(1)} ms, load average ${currentLoad().join(' ')}`,
  );
  return result;
}

const system = await startSystemUnderTest({
  mailerReplicas: 1,
  runningMailers: 1,
  tenants: 10,
  template: benchTemplate,
  env: { RETENTION_PURGE_INTERVAL: '1h' },
});
let failed = false;
try {
  const insertStart = performance.now();
  await insertOldMessages(system);
  console.log(`inserted ${rows} old messages and ${rows} events in ${((performance.now() - insertStart) / 1_000).toFixed(1)} s`);
  // Not reported: the first sends of a fresh system pay for compiling and connecting.
  await sendWindow(system, 'warm-up');
  const windows = [await sendWindow(system, 'before the purge')];

  const admin = new GrpcClient(dispatchProto.RetentionAdminService.service, system.stack.env.DISPATCH_SVC_ADDR, {
    token: system.stack.env.ADMIN_TOKEN,
    deadlineMs: 3_600_000,
  });
  const purgeStart = performance.now();
  const purge = admin.call('PurgeExpiredMessages', {});
  let purgeDoneS: number | undefined;
  void purge.then(() => (purgeDoneS = (performance.now() - purgeStart) / 1_000));
  windows.push(await sendWindow(system, 'while purging'));
  if (purgeDoneS !== undefined) console.log(`the purge ended ${purgeDoneS.toFixed(1)} s in, before the window did: use more --rows`);
  const purged = await purge;
  const purgeS = (performance.now() - purgeStart) / 1_000;
  admin.close();
  console.log(
    `purged ${purged.deleted} messages (${JSON.stringify(Object.fromEntries(purged.tables.map(({ table, rows: deleted }) => [table, deleted])))}) in ${purgeS.toFixed(1)} s: ${(purged.deleted / purgeS).toFixed(0)} messages/s`,
  );
  windows.push(await sendWindow(system, 'after the purge'));

  const left = await system.db.query<{ n: number }>("SELECT count(*)::int AS n FROM messages WHERE recipient LIKE 'old-%'");
  failed = windows.some((window) => count5xx(window) > 0 || window.errors > 0 || window.timeouts > 0) || (left.rows[0]?.n ?? 0) > 0 || purged.deleted < rows;
} finally {
  await system.stop();
}
process.exitCode = failed ? 1 : 0;
