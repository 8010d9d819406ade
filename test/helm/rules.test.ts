// The alerts of the PrometheusRule, checked by promtool: syntax and templates (`check rules`), and each alert's
// expression, `for` and labels against synthetic series (`test rules`), so a broken threshold or selector fails here.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { stringify } from 'yaml';
import { productionValues, render } from './chart.ts';
import { ensureHelm, ensurePromtool, repoRoot, runTool } from './tools.ts';

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

let promtool = '';
let skip: string | undefined;
let groups: { name: string; rules: Rule[] }[] = [];
const work = mkdtempSync(join(tmpdir(), 'notify-rules-'));

before(async () => {
  const [helm, prom] = await Promise.all([ensureHelm(), ensurePromtool()]);
  if ('skip' in helm) {
    skip = helm.skip;
    return;
  }
  if ('skip' in prom) {
    skip = prom.skip;
    return;
  }
  promtool = prom.path;
  const rendered = await render(helm.path, { valuesFiles: [productionValues] });
  groups = (rendered.get('PrometheusRule', 'notify').spec as { groups: typeof groups }).groups;
});

after(() => rmSync(work, { recursive: true, force: true }));

const selector = 'namespace="notify", job="notify-gateway"';
const mailer = 'namespace="notify", job="notify-mailer-svc"';
const dispatch = 'namespace="notify", job="notify-dispatch-svc"';
const send = `${selector}, route="/api/v1/send/"`;
const webhook = 'namespace="notify", job="notify-webhook-svc"';
const bounce = 'namespace="notify", job="notify-bounce-svc"';
/** The per-project gauges as two dispatch-svc replicas export them (the same values: both read PostgreSQL). */
const perProject = (metric: string, values: Record<string, string>): Record<string, string> =>
  Object.fromEntries(
    Object.entries(values).flatMap(([project, value]) =>
      ['a', 'b'].map((pod) => [`${metric}{${dispatch}, pod="notify-dispatch-svc-${pod}", project_id="${project}"}`, value]),
    ),
  );

/** The retention gauges as the purge leader exports them: per organization, the oldest kept final message's age and its retention. */
const retention = (organizations: Record<string, [age: string, retention: string]>): Record<string, string> =>
  Object.fromEntries(
    Object.entries(organizations).flatMap(([organization, [age, kept]]) => [
      [`notify_retention_oldest_final_message_age_seconds{${dispatch}, pod="notify-dispatch-svc-a", organization_id="${organization}"}`, age],
      [`notify_message_retention_seconds{${dispatch}, pod="notify-dispatch-svc-a", organization_id="${organization}"}`, kept],
    ]),
  );

/** One case per alert: series, when to look, and the alerts expected then (labels beyond alertname and severity). */
const cases: { alert: string; series: Record<string, string>; at: string; firing: Record<string, string>[]; severity: string }[] = [
  {
    alert: 'NotifyHigh5xxRatio',
    // Batches count too: here they are the failing tenth.
    series: {
      [`notify_http_requests_total{${send}, method="POST", status="202"}`]: '0+90x20',
      [`notify_http_requests_total{${selector}, route="/api/v1/send/batch/", method="POST", status="503"}`]: '0+10x20',
    },
    at: '15m',
    firing: [{}],
    severity: 'critical',
  },
  {
    alert: 'NotifySendLatencyHigh',
    series: {
      [`notify_http_request_duration_seconds_bucket{${send}, method="POST", le="0.25"}`]: '0+50x30',
      [`notify_http_request_duration_seconds_bucket{${send}, method="POST", le="1"}`]: '0+100x30',
      [`notify_http_request_duration_seconds_bucket{${send}, method="POST", le="+Inf"}`]: '0+100x30',
    },
    at: '20m',
    firing: [{}],
    severity: 'warning',
  },
  // A client retrying a revoked key every 10 s (60 per 10 minutes): a missed rotation. Guesses of unknown keys are not it.
  {
    alert: 'NotifyRevokedKeyInUse',
    series: {
      [`notify_gateway_auth_failures_total{${selector}, pod="notify-gateway-a", reason="revoked"}`]: '0+6x40',
      [`notify_gateway_auth_failures_total{${selector}, pod="notify-gateway-a", reason="unknown_key"}`]: '0+600x40',
    },
    at: '30m',
    firing: [{}],
    severity: 'warning',
  },
  {
    alert: 'NotifyConsumerLagGrowing',
    // Two dispatch-svc replicas report the same consumer: 10 more jobs wait every minute, 150 per 15 minutes.
    series: {
      [`notify_jetstream_consumer_pending_messages{${dispatch}, pod="notify-dispatch-svc-a", consumer="mailer"}`]: '0+10x40',
      [`notify_jetstream_consumer_pending_messages{${dispatch}, pod="notify-dispatch-svc-b", consumer="mailer"}`]: '0+10x40',
    },
    at: '35m',
    firing: [{}],
    severity: 'warning',
  },
  {
    alert: 'NotifyFailedDeliveryRatioHigh',
    // 10 % failed, whatever the reason: the failures of each reason add up (none alone passes 5 %).
    series: {
      [`notify_deliveries_total{${mailer}, outcome="sent"}`]: '0+90x40',
      [`notify_deliveries_total{${mailer}, outcome="failed", reason="rejected"}`]: '0+4x40',
      [`notify_deliveries_total{${mailer}, outcome="failed", reason="retries_exhausted"}`]: '0+3x40',
      [`notify_deliveries_total{${mailer}, outcome="failed", reason="render_failed"}`]: '0+3x40',
      [`notify_deliveries_total{${mailer}, outcome="failed", reason="too_old"}`]: '0+0x40',
      [`notify_deliveries_total{${mailer}, outcome="deferred"}`]: '0+500x40',
    },
    at: '35m',
    firing: [{}],
    severity: 'warning',
  },
  {
    alert: 'NotifyDeliveryLatencyHigh',
    series: {
      [`notify_delivery_latency_seconds_bucket{${mailer}, le="60"}`]: '0+10x40',
      [`notify_delivery_latency_seconds_bucket{${mailer}, le="900"}`]: '0+100x40',
      [`notify_delivery_latency_seconds_bucket{${mailer}, le="+Inf"}`]: '0+100x40',
    },
    at: '35m',
    firing: [{}],
    severity: 'warning',
  },
  // The events consumer has 40 waiting and JetStream delivers it nothing; the mailers' consumer is busy and moving.
  {
    alert: 'NotifyConsumerStalled',
    series: {
      [`notify_jetstream_consumer_pending_messages{${dispatch}, consumer="dispatch-events"}`]: '40x30',
      [`notify_jetstream_consumer_delivered_messages{${dispatch}, consumer="dispatch-events"}`]: '500x30',
      [`notify_jetstream_consumer_pending_messages{${dispatch}, consumer="mailer"}`]: '900x30',
      [`notify_jetstream_consumer_delivered_messages{${dispatch}, consumer="mailer"}`]: '0+100x30',
    },
    at: '15m',
    firing: [{ consumer: 'dispatch-events' }],
    severity: 'critical',
  },
  {
    alert: 'NotifyOutboxBacklog',
    series: { [`notify_outbox_backlog{${dispatch}, pod="notify-dispatch-svc-a"}`]: '500x30' },
    at: '20m',
    firing: [{}],
    severity: 'critical',
  },
  {
    alert: 'NotifyWebhookEventsUnpublished',
    series: { [`notify_webhook_events_unpublished_age_seconds{${dispatch}, pod="notify-dispatch-svc-a"}`]: '0+60x30' },
    at: '15m',
    firing: [{}],
    severity: 'warning',
  },
  // Nothing scraped from any mailer: absent() keeps the equality matchers as labels.
  // Two replicas report the same shared pace; the domain is named once. One that left its floor after 10 minutes does not fire.
  {
    alert: 'NotifyDestinationThrottled',
    series: {
      [`notify_destination_at_floor{${mailer}, pod="notify-mailer-svc-a", domain="slow.example"}`]: '1x30',
      [`notify_destination_at_floor{${mailer}, pod="notify-mailer-svc-b", domain="slow.example"}`]: '1x30',
      [`notify_destination_at_floor{${mailer}, pod="notify-mailer-svc-a", domain="recovering.example"}`]: '1x10 0x20',
    },
    at: '25m',
    firing: [{ domain: 'slow.example' }],
    severity: 'warning',
  },
  // One relay of two down on both mailers: its circuit open, then half-open between failed probes.
  {
    alert: 'NotifyRelayCircuitOpen',
    series: {
      [`notify_relay_circuit_state{${mailer}, pod="notify-mailer-svc-a", relay="relay-a.example:465"}`]: '2x5 1x5 2x20',
      [`notify_relay_circuit_state{${mailer}, pod="notify-mailer-svc-b", relay="relay-a.example:465"}`]: '2x30',
      [`notify_relay_circuit_state{${mailer}, pod="notify-mailer-svc-a", relay="relay-b.example:465"}`]: '0x30',
      [`notify_relay_circuit_state{${mailer}, pod="notify-mailer-svc-b", relay="relay-b.example:465"}`]: '0x30',
    },
    at: '10m',
    firing: [{ relay: 'relay-a.example:465' }],
    severity: 'warning',
  },
  // Mailer a has no relay left; mailer b still has relay-b.
  {
    alert: 'NotifyAllRelaysOpen',
    series: {
      [`notify_relay_circuit_state{${mailer}, pod="notify-mailer-svc-a", relay="relay-a.example:465"}`]: '2x30',
      [`notify_relay_circuit_state{${mailer}, pod="notify-mailer-svc-a", relay="relay-b.example:465"}`]: '1x30',
      [`notify_relay_circuit_state{${mailer}, pod="notify-mailer-svc-b", relay="relay-a.example:465"}`]: '2x30',
      [`notify_relay_circuit_state{${mailer}, pod="notify-mailer-svc-b", relay="relay-b.example:465"}`]: '0x30',
    },
    at: '5m',
    firing: [{ pod: 'notify-mailer-svc-a' }],
    severity: 'critical',
  },
  {
    alert: 'NotifyNoActiveMailer',
    series: { [`notify_outbox_backlog{${dispatch}}`]: '0x30' },
    at: '10m',
    firing: [{ namespace: 'notify' }],
    severity: 'critical',
  },
  // Every attempt fails (a NetworkPolicy blocking egress, DNS down): 30 failed attempts a minute, none succeeded.
  {
    alert: 'NotifyWebhookAttemptsFailing',
    series: {
      [`notify_webhook_attempts_total{${webhook}, result="retrying"}`]: '0+30x80',
      [`notify_webhook_attempts_total{${webhook}, result="succeeded"}`]: '0+0x80',
    },
    at: '75m',
    firing: [{}],
    severity: 'warning',
  },
  // Project 7 passes 0.1 % with 5000 messages a day; project 8's 5 % on 200 messages is too little mail to judge; project 9
  // stays under the threshold. The alert names the project, once, though two replicas report it.
  {
    alert: 'NotifyProjectComplaintRateHigh',
    series: {
      ...perProject('notify_project_complaint_ratio', { '7': '0.002x60', '8': '0.05x60', '9': '0.0009x60' }),
      ...perProject('notify_project_delivered_last_day', { '7': '5000x60', '8': '200x60', '9': '100000x60' }),
    },
    at: '45m',
    firing: [{ project_id: '7' }],
    severity: 'warning',
  },
  {
    alert: 'NotifyProjectBounceRateHigh',
    series: {
      ...perProject('notify_project_bounce_ratio', { '7': '0.06x60', '8': '0.5x60', '9': '0.039x60' }),
      ...perProject('notify_project_delivered_last_day', { '7': '1000x60', '8': '999x60', '9': '100000x60' }),
    },
    at: '45m',
    firing: [{ project_id: '7' }],
    severity: 'warning',
  },
  // The receiver refuses 30 reports a minute and applies 5: Notify's own return paths no longer verify.
  {
    alert: 'NotifyBounceReportsRefused',
    series: {
      [`notify_bounce_reports_total{${bounce}, kind="dsn", outcome="refused"}`]: '0+20x80',
      [`notify_bounce_reports_total{${bounce}, kind="other", outcome="refused"}`]: '0+10x80',
      [`notify_bounce_reports_total{${bounce}, kind="dsn", outcome="applied"}`]: '0+5x80',
      [`notify_bounce_reports_total{${bounce}, kind="arf", outcome="applied"}`]: '0+0x80',
    },
    at: '75m',
    firing: [{}],
    severity: 'warning',
  },
  // Every other service is scraped, bounce-svc is not.
  {
    alert: 'NotifyBounceReceiverDown',
    series: { [`notify_mailer_in_flight{${mailer}}`]: '1x30' },
    at: '15m',
    firing: [{ namespace: 'notify' }],
    severity: 'warning',
  },
  {
    alert: 'NotifyPodCrashLooping',
    series: {
      'kube_pod_container_status_waiting_reason{namespace="notify", pod="notify-gateway-7d9f", container="gateway", reason="CrashLoopBackOff"}': '1x30',
    },
    at: '25m',
    firing: [{ namespace: 'notify', pod: 'notify-gateway-7d9f', container: 'gateway', reason: 'CrashLoopBackOff' }],
    severity: 'warning',
  },
  // Organization 7 keeps the default 30 days and its oldest final message is 32 days old (the purge stopped two days
  // ago); organization 8 keeps 90 days of its own, and its 60-day-old message is no concern.
  {
    alert: 'NotifyRetentionPurgeStuck',
    series: retention({ '7': [`${32 * 86_400}+60x60`, '2592000x60'], '8': [`${60 * 86_400}+60x60`, '7776000x60'] }),
    at: '45m',
    firing: [{ organization_id: '7' }],
    severity: 'warning',
  },
];

/** Healthy series for every alert at once: none may fire. */
const healthy: Record<string, string> = {
  // A flood of guesses and one stray revoked key are no missed rotation.
  [`notify_gateway_auth_failures_total{${selector}, pod="notify-gateway-a", reason="unknown_key"}`]: '0+1000x40',
  [`notify_gateway_auth_failures_total{${selector}, pod="notify-gateway-a", reason="revoked"}`]: '0+0x40',
  [`notify_http_requests_total{${send}, method="POST", status="202"}`]: '0+100x40',
  [`notify_http_requests_total{${send}, method="POST", status="500"}`]: '0+0x40',
  [`notify_http_request_duration_seconds_bucket{${send}, method="POST", le="0.1"}`]: '0+100x40',
  [`notify_http_request_duration_seconds_bucket{${send}, method="POST", le="+Inf"}`]: '0+100x40',
  [`notify_jobs_published_total{${dispatch}, path="direct"}`]: '0+100x40',
  [`notify_deliveries_total{${mailer}, outcome="sent"}`]: '0+100x40',
  [`notify_deliveries_total{${mailer}, outcome="failed", reason="rejected"}`]: '0+1x40',
  [`notify_deliveries_total{${mailer}, outcome="failed", reason="unreadable_job"}`]: '0+0x40',
  [`notify_delivery_latency_seconds_bucket{${mailer}, le="10"}`]: '0+100x40',
  [`notify_delivery_latency_seconds_bucket{${mailer}, le="+Inf"}`]: '0+100x40',
  [`notify_outbox_backlog{${dispatch}}`]: '3x40',
  // Webhook events published within seconds: the oldest unpublished one is never a minute old.
  [`notify_webhook_events_unpublished_age_seconds{${dispatch}}`]: '0x20 4x1 0x19',
  // A long but steady mailer queue, and another consumer's growing one, are not the mailers falling behind.
  [`notify_jetstream_consumer_pending_messages{${dispatch}, consumer="mailer"}`]: '5000x40',
  [`notify_jetstream_consumer_pending_messages{${dispatch}, consumer="dispatch-events"}`]: '0+50x40',
  // Both receive all along; an idle consumer (nothing waiting, nothing delivered) is not a stalled one.
  [`notify_jetstream_consumer_delivered_messages{${dispatch}, consumer="mailer"}`]: '0+100x40',
  [`notify_jetstream_consumer_delivered_messages{${dispatch}, consumer="dispatch-events"}`]: '0+50x40',
  [`notify_jetstream_consumer_pending_messages{${dispatch}, consumer="webhook-sender"}`]: '0x40',
  [`notify_jetstream_consumer_delivered_messages{${dispatch}, consumer="webhook-sender"}`]: '7x40',
  [`notify_mailer_in_flight{${mailer}}`]: '4x40',
  // A domain slowed for a few minutes, then back above its floor: the throttle doing its work, nothing to act on.
  [`notify_destination_at_floor{${mailer}, domain="busy.example"}`]: '0x20 1x10 0x10',
  // A relay whose circuit opened for two minutes, then closed again: failover did its job, nothing to page about.
  [`notify_relay_circuit_state{${mailer}, pod="notify-mailer-svc-a", relay="relay-a.example:465"}`]: '0x20 2x2 1x1 0x17',
  [`notify_relay_circuit_state{${mailer}, pod="notify-mailer-svc-a", relay="relay-b.example:465"}`]: '0x40',
  // One dead endpoint among healthy ones: its retries are a small share of the attempts.
  [`notify_webhook_attempts_total{${webhook}, result="succeeded"}`]: '0+100x40',
  [`notify_webhook_attempts_total{${webhook}, result="retrying"}`]: '0+5x40',
  'kube_pod_container_status_waiting_reason{namespace="notify", pod="notify-gateway-7d9f", container="gateway", reason="CrashLoopBackOff"}': '0x40',
  // Projects under both thresholds, and a tiny one far over them: too little mail for a ratio to mean anything.
  ...perProject('notify_project_complaint_ratio', { '7': '0.0005x40', '8': '0.5x40' }),
  ...perProject('notify_project_bounce_ratio', { '7': '0.02x40', '8': '0.5x40' }),
  ...perProject('notify_project_delivered_last_day', { '7': '50000x40', '8': '4x40' }),
  // Some spam to the bounce domain is refused; most reports apply. And a quiet receiver is not a refusing one.
  [`notify_bounce_reports_total{${bounce}, kind="dsn", outcome="applied"}`]: '0+10x40',
  [`notify_bounce_reports_total{${bounce}, kind="other", outcome="refused"}`]: '0+2x40',
  [`notify_bounce_reports_total{${bounce}, kind="arf", outcome="refused"}`]: '0+0x40',
  // A purge that runs every 10 minutes keeps the oldest final message within minutes of the retention (30.5 days is
  // under a day past it); another organization keeps 90 days of its own.
  ...retention({ '7': [`${30.5 * 86_400}x40`, '2592000x40'], '8': [`${85 * 86_400}x40`, '7776000x40'] }),
};

describe('alert rules', () => {
  test("promtool check rules accepts the PrometheusRule's groups", async (t) => {
    if (skip) return t.skip(skip);
    const file = join(work, 'notify-rules.yaml');
    writeFileSync(file, stringify({ groups }));
    const result = await runTool(promtool, ['check', 'rules', file]);
    assert.equal(result.code, 0, result.stdout + result.stderr);
    assert.match(result.stdout, new RegExp(`SUCCESS: ${cases.length} rules found`));
  });

  test('every alert has a summary, a description and a runbook section that exists in docs/operations.md', (t) => {
    if (skip) return t.skip(skip);
    const guide = readFileSync(join(repoRoot, 'docs', 'operations.md'), 'utf8');
    const anchors = new Set(
      [...guide.matchAll(/^#{2,4} (.+)$/gm)].map((match) =>
        (match[1] ?? '')
          .trim()
          .toLowerCase()
          .replace(/[^a-z0-9 -]/g, '')
          .replace(/ /g, '-'),
      ),
    );
    const alerts = groups.flatMap((group) => group.rules);
    assert.deepEqual(alerts.map((rule) => rule.alert).sort(), cases.map((c) => c.alert).sort());
    for (const rule of alerts) {
      assert.ok(rule.annotations?.summary && rule.annotations.description, rule.alert);
      const anchor = /#(.+)$/.exec(rule.annotations?.runbook_url ?? '')?.[1] ?? '';
      assert.equal(anchor, rule.alert.toLowerCase(), rule.alert);
      assert.ok(anchors.has(anchor), `docs/operations.md has no section for ${rule.alert}`);
    }
  });

  test('each alert fires on the series it watches and none fires on a healthy system', { timeout: 60_000 }, async (t) => {
    if (skip) return t.skip(skip);
    // Annotations are checked above and by `check rules`; stripping them keeps the expectations to what decides firing.
    const rulesFile = join(work, 'rules-without-annotations.yaml');
    writeFileSync(rulesFile, stringify({ groups: groups.map((group) => ({ ...group, rules: group.rules.map(({ annotations: _, ...rule }) => rule) })) }));
    const series = (values: Record<string, string>) => Object.entries(values).map(([name, value]) => ({ series: name, values: value }));
    const tests = [
      ...cases.map((c) => ({
        interval: '1m',
        input_series: series(c.series),
        alert_rule_test: [{ eval_time: c.at, alertname: c.alert, exp_alerts: c.firing.map((labels) => ({ exp_labels: { severity: c.severity, ...labels } })) }],
      })),
      { interval: '1m', input_series: series(healthy), alert_rule_test: cases.map((c) => ({ eval_time: '39m', alertname: c.alert, exp_alerts: [] })) },
    ];
    const testFile = join(work, 'tests.yaml');
    writeFileSync(testFile, stringify({ rule_files: [rulesFile], evaluation_interval: '1m', tests }));
    const result = await runTool(promtool, ['test', 'rules', testFile]);
    assert.equal(result.code, 0, result.stdout + result.stderr);
  });
});
