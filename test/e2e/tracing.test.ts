// One trace per message, from the HTTP request to the SMTP reply and back: every service exports its spans to an
// OTLP/HTTP receiver of the test's own (decoded with OpenTelemetry's protobuf definitions), and the test follows one
// message through them. It runs on a private nats-server, which the last case stops to make the outbox relay publish.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { waitForStates } from '../harness/delivery-audit.ts';
import { type OtlpReceiver, otlpSpanKind, type ReceivedSpan, startOtlpReceiver } from '../harness/otlp-receiver.ts';
import { type PrivateNats, startPrivateNats } from '../harness/private-nats.ts';
import { startReliableSystem } from '../harness/reliable-system.ts';
import type { System, Tenant } from '../harness/system.ts';
import { waitFor } from '../harness/wait.ts';

let receiver: OtlpReceiver;
let nats: PrivateNats;
let system: System;
let tenant: Tenant;
/** Recipients the relay greylists once (451 4.7.1), then accepts. */
const greylisted = new Set<string>();

before(async () => {
  receiver = await startOtlpReceiver();
  nats = await startPrivateNats();
  system = await startReliableSystem({
    nats,
    env: { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: receiver.tracesUrl, OTEL_BSP_SCHEDULE_DELAY: '100', OUTBOX_RELAY_INTERVAL: '200ms', OUTBOX_RELAY_MIN_AGE: '1s' },
    smtpReply: ({ to }) => {
      if (!to.startsWith('greylist') || greylisted.has(to)) return undefined;
      greylisted.add(to);
      return { code: 451, message: '4.7.1 Greylisted, try again later' };
    },
  });
  tenant = await system.createTenant('tracing');
  await system.putTemplate(tenant.projectId, 'welcome');
});

after(async () => {
  if (nats && !nats.running) await nats.start();
  await system?.stop();
  await nats?.stop();
  await receiver?.close();
});

const names = () => {
  const prefix = system.resources.natsPrefix;
  return {
    jobs: `${prefix.toLowerCase()}notify.jobs.email`,
    /** Where the mailers publish their batches of delivery events; each event's spans carry its message id. */
    events: `${prefix.toLowerCase()}notify.events.batch`,
    eventsStream: `${prefix.toUpperCase()}NOTIFY_EVENTS`,
  };
};

const one = (spans: readonly ReceivedSpan[], what: string, match: (span: ReceivedSpan) => boolean): ReceivedSpan => {
  const found = spans.filter(match);
  assert.equal(found.length, 1, `exactly one ${what}, found ${found.length}: ${found.map((span) => `${span.service} ${span.name}`).join(', ')}`);
  return found[0] as ReceivedSpan;
};

/** Sends one message and waits until it is final and dispatch-svc's span for applying its final event was exported. */
async function sendAndFollow(to: string, requestId: string): Promise<{ id: number; trace: ReceivedSpan[]; all: readonly ReceivedSpan[] }> {
  const response = await system.send(tenant, { template: 'welcome', to, channel: 'email', data: { name: 'Ada' } }, { 'x-request-id': requestId });
  assert.equal(response.status, 202, response.text);
  const id = response.body.message_id as number;
  await waitForStates(system.db, [id], { timeoutMs: 30_000 });
  const applied = (span: ReceivedSpan) =>
    span.service === 'dispatch-svc' &&
    span.name === `process ${names().events}` &&
    span.attributes['notify.message.id'] === id &&
    span.attributes['notify.delivery.state'] === 'sent';
  const final = await waitFor(async () => receiver.spans.find(applied), { timeoutMs: 15_000, what: `the span applying message ${id}'s sent event` });
  // The gateway's and the mailer's last spans may still be in their exporters' next batch.
  await new Promise((resolve) => setTimeout(resolve, 500));
  return { id, trace: receiver.spans.filter((span) => span.traceId === final.traceId), all: receiver.spans };
}

test('one send is one trace from the HTTP request through auth-svc, dispatch-svc, NATS and the mailer to the SMTP reply, and back', async () => {
  const { id, trace, all } = await sendAndFollow('ada@example.com', 'trace-e2e-one');
  const { jobs, events, eventsStream } = names();
  assert.equal(receiver.undecodable, 0);

  // Every service took part, under its own name, version and instance.
  const services = new Set(trace.map((span) => span.service));
  assert.deepEqual([...services].sort(), ['auth-svc', 'dispatch-svc', 'gateway', 'mailer-svc']);
  for (const span of trace) {
    assert.equal(span.resource['service.version'], '0.1.0', `${span.service} ${span.name}`);
    assert.match(String(span.resource['service.instance.id']), /^.+:\d+$/);
  }
  assert.equal(new Set(trace.map((span) => `${span.service} ${span.resource['service.instance.id']}`)).size, 4);

  // The request: the gateway's server span knows the caller's X-Request-ID and the message it made.
  const request = one(trace, 'HTTP server span', (span) => span.service === 'gateway' && span.kind === otlpSpanKind.server);
  assert.equal(request.parentSpanId, '');
  assert.equal(request.attributes['notify.request.id'], 'trace-e2e-one');
  assert.equal(request.attributes['notify.message.id'], id);
  assert.ok(
    trace.some((span) => span.service === 'auth-svc' && span.kind === otlpSpanKind.server),
    'auth-svc served the authorization in the same trace',
  );

  // dispatch-svc: the Send call, the message's creation under it, and the publish of its job under the creation.
  const sendCall = one(trace, 'Send server span', (span) => span.service === 'dispatch-svc' && span.kind === otlpSpanKind.server && /Send$/.test(span.name));
  assert.equal(sendCall.attributes['notify.message.id'], id);
  const create = one(trace, 'create span', (span) => span.name === `create ${jobs}`);
  assert.equal(create.kind, otlpSpanKind.producer);
  assert.equal(create.parentSpanId, sendCall.spanId);
  assert.equal(create.attributes['messaging.system'], 'nats');
  assert.equal(create.attributes['messaging.operation.type'], 'create');
  const publish = one(trace, 'job publish', (span) => span.name === `send ${jobs}`);
  assert.equal(publish.kind, otlpSpanKind.client);
  assert.equal(publish.parentSpanId, create.spanId);
  // The job's Nats-Msg-Id: the message's celery_task_id (message ids come back when a database is created again).
  const {
    rows: [message],
  } = await system.db.query<{ celeryTaskId: string }>('SELECT celery_task_id AS "celeryTaskId" FROM messages WHERE id = $1', [id]);
  assert.equal(publish.attributes['messaging.message.id'], message?.celeryTaskId);
  assert.equal(publish.attributes['notify.publish.path'], 'direct');

  // mailer-svc: processing the job is a child of the message's creation; rendering and the SMTP exchange under it.
  const processJob = one(trace, 'job process span', (span) => span.service === 'mailer-svc' && span.name === `process ${jobs}`);
  assert.equal(processJob.kind, otlpSpanKind.consumer);
  assert.equal(processJob.parentSpanId, create.spanId);
  assert.equal(processJob.attributes['notify.delivery.state'], 'sent');
  const render = one(trace, 'render span', (span) => span.name === 'render');
  assert.equal(render.parentSpanId, processJob.spanId);
  const smtp = one(trace, 'SMTP span', (span) => span.name === 'smtp send');
  assert.equal(smtp.kind, otlpSpanKind.client);
  assert.equal(smtp.parentSpanId, processJob.spanId);
  assert.equal(smtp.attributes['notify.smtp.reply_code'], 250);
  assert.match(String(smtp.attributes['notify.smtp.reply']), /^250 /);
  assert.equal(smtp.attributes['server.address'], '127.0.0.1');
  assert.equal(smtp.attributes['server.port'], system.sink.port);
  assert.equal(smtp.attributes['notify.delivery.attempt'], 1);
  // Under it, the relay the mail went to (SMTP_URL may list several, tried in turn).
  const relay = one(trace, 'relay span', (span) => span.name === 'smtp relay');
  assert.equal(relay.parentSpanId, smtp.spanId);
  assert.equal(relay.attributes['server.port'], system.sink.port);

  // The delivery events: published under the job's processing, applied by dispatch-svc as children of their publish,
  // each linked to the batch it was applied in (a batch of its own trace, linked back to every event it served).
  for (const state of ['sending', 'sent']) {
    const eventPublish = one(trace, `${state} event publish`, (span) => span.name === `send ${events}` && span.attributes['notify.delivery.state'] === state);
    assert.equal(eventPublish.kind, otlpSpanKind.producer);
    assert.equal(eventPublish.parentSpanId, processJob.spanId);
    const applied = one(trace, `${state} event application`, (span) => span.name === `process ${events}` && span.attributes['notify.delivery.state'] === state);
    assert.equal(applied.service, 'dispatch-svc');
    assert.equal(applied.kind, otlpSpanKind.consumer);
    assert.equal(applied.parentSpanId, eventPublish.spanId);
    assert.equal(applied.attributes['notify.event.outcome'], 'applied');
    const [batchLink] = applied.links;
    assert.ok(batchLink, 'the event span links to its batch');
    const batch = one(all, 'batch span', (span) => span.spanId === batchLink.spanId);
    assert.equal(batch.name, `process ${eventsStream}`);
    assert.notEqual(batch.traceId, request.traceId);
    assert.ok(
      batch.links.some((link) => link.traceId === request.traceId && link.spanId === eventPublish.spanId),
      'the batch links to the event',
    );
  }

  // From the acceptance on, every span of the message names it.
  for (const span of trace.filter((each) => each.service === 'mailer-svc' || [create, publish].includes(each) || each.name.startsWith('process '))) {
    assert.equal(span.attributes['notify.message.id'], id, `${span.service} ${span.name}`);
  }
});

test('a batch is one trace: the SendBatch call, under it one create span per message, each message delivered under its own', async () => {
  const response = await system.request('/api/v1/send/batch/', {
    method: 'POST',
    headers: {
      authorization: `Api-Key ${tenant.apiKey}`,
      'x-organization-id': String(tenant.organizationId),
      'content-type': 'application/json',
      'x-request-id': 'trace-e2e-batch',
    },
    body: JSON.stringify({
      messages: ['batch-one@example.com', 'batch-two@example.com'].map((to) => ({ template: 'welcome', to, channel: 'email', data: { name: 'Ada' } })),
    }),
  });
  assert.equal(response.status, 200, response.text);
  const ids = (response.body.results as Array<{ message_id: number }>).map((entry) => entry.message_id);
  await waitForStates(system.db, ids, { timeoutMs: 30_000 });
  const { jobs } = names();
  const sent = (id: number) => (span: ReceivedSpan) =>
    span.service === 'mailer-svc' && span.name === `process ${jobs}` && span.attributes['notify.message.id'] === id;
  await waitFor(async () => ids.every((id) => receiver.spans.some(sent(id))), { timeoutMs: 15_000, what: "both messages' delivery spans" });
  await new Promise((resolve) => setTimeout(resolve, 500));

  const request = one(
    receiver.spans,
    'batch HTTP server span',
    (span) => span.service === 'gateway' && span.kind === otlpSpanKind.server && span.attributes['notify.request.id'] === 'trace-e2e-batch',
  );
  assert.equal(request.attributes['notify.batch.items'], 2);
  assert.equal(request.attributes['notify.batch.accepted'], 2);
  const trace = receiver.spans.filter((span) => span.traceId === request.traceId);
  const call = one(
    trace,
    'SendBatch server span',
    (span) => span.service === 'dispatch-svc' && span.kind === otlpSpanKind.server && /SendBatch$/.test(span.name),
  );
  for (const id of ids) {
    const create = one(trace, `create span of message ${id}`, (span) => span.name === `create ${jobs}` && span.attributes['notify.message.id'] === id);
    assert.equal(create.parentSpanId, call.spanId);
    const processJob = one(trace, `job process span of message ${id}`, sent(id));
    assert.equal(processJob.parentSpanId, create.spanId);
  }
});

test('a deferred delivery retried later continues the same trace', async () => {
  const { id, trace } = await sendAndFollow('greylist-ada@example.com', 'trace-e2e-retry');
  const { jobs } = names();
  const create = one(trace, 'create span', (span) => span.name === `create ${jobs}`);
  const attempts = trace
    .filter((span) => span.name === `process ${jobs}`)
    .sort((a, b) => Number(a.attributes['notify.delivery.attempt']) - Number(b.attributes['notify.delivery.attempt']));
  assert.deepEqual(
    attempts.map((span) => [span.parentSpanId, span.attributes['messaging.nats.delivery_count'], span.attributes['notify.delivery.state']]),
    [
      [create.spanId, 1, 'deferred'],
      [create.spanId, 2, 'sent'],
    ],
  );
  const replies = trace
    .filter((span) => span.name === 'smtp send')
    .map((span) => [span.attributes['notify.smtp.reply_code'], span.attributes['notify.smtp.enhanced_status'] ?? null]);
  assert.deepEqual(
    replies.sort(),
    [
      [250, null],
      [451, '4.7.1'],
    ].sort(),
  );
  assert.ok(trace.every((span) => span.service !== 'mailer-svc' || span.attributes['notify.message.id'] === id));
});

test('a job published by the outbox relay after a NATS outage still joins the trace of the request that accepted it', async () => {
  await nats.kill('SIGTERM');
  const response = await system.send(
    tenant,
    { template: 'welcome', to: 'outage@example.com', channel: 'email', data: { name: 'Ada' } },
    { 'x-request-id': 'trace-e2e-outage' },
  );
  assert.equal(response.status, 202, response.text);
  const id = response.body.message_id as number;
  await nats.start();
  await waitForStates(system.db, [id], { timeoutMs: 45_000 });
  const { jobs } = names();
  const request = await waitFor(
    async () => receiver.spans.find((span) => span.service === 'gateway' && span.attributes['notify.request.id'] === 'trace-e2e-outage'),
    { timeoutMs: 10_000, what: 'the request span' },
  );
  const relayed = await waitFor(
    async () =>
      receiver.spans.find(
        (span) =>
          span.name === `send ${jobs}` &&
          span.attributes['notify.message.id'] === id &&
          span.attributes['notify.publish.path'] === 'relay' &&
          span.statusCode !== 2,
      ),
    {
      timeoutMs: 10_000,
      what: 'the relay publish span',
    },
  );
  const processJob = await waitFor(async () => receiver.spans.find((span) => span.name === `process ${jobs}` && span.attributes['notify.message.id'] === id), {
    timeoutMs: 10_000,
    what: 'the mailer span',
  });
  const create = one(receiver.spans, 'create span', (span) => span.name === `create ${jobs}` && span.attributes['notify.message.id'] === id);
  assert.equal(relayed.traceId, request.traceId);
  assert.equal(relayed.parentSpanId, create.spanId);
  assert.equal(processJob.traceId, request.traceId);
  assert.equal(processJob.parentSpanId, create.spanId);
  const { rows } = await system.db.query<{ traceparent: string }>('SELECT traceparent FROM messages WHERE id = $1', [id]);
  assert.equal(rows[0]?.traceparent, `00-${request.traceId}-${create.spanId}-01`);
});
