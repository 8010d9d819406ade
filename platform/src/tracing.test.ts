// The trace context Notify stores and carries itself: a message row's traceparent, NATS headers, and the resource
// every process names itself with. Spans here come from a real SDK tracer provider, recorded in memory.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { testEnvironment } from '@notify/test/harness/environment.ts';
import { silentLogger } from '@notify/test/harness/logger.ts';
import { context, trace } from '@opentelemetry/api';
import { AlwaysOffSampler, InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { carriedContext, connectNats, jetstream, jetstreamManager, type NatsConnection, publishTraced, startCreateSpan } from './nats/index.ts';
import { propagatorFromEnvironment, samplerFromEnvironment, serviceResource, spanLimitsFromEnvironment } from './telemetry.ts';
import { contextFromTraceparent, inSpan, linkTo, startSpan, traceIdOf, traceparentOf } from './tracing.ts';

const exporter = new InMemorySpanExporter();
const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
let nc: NatsConnection;
const stream = `TRACING_${randomBytes(4).toString('hex').toUpperCase()}`;
const subject = `${stream.toLowerCase()}.jobs`;

before(async () => {
  trace.setGlobalTracerProvider(provider);
  nc = await connectNats(testEnvironment.natsUrl, 'tracing-test', silentLogger('tracing-test'));
  await (await jetstreamManager(nc)).streams.add({ name: stream, subjects: [subject] });
});

after(async () => {
  await (await jetstreamManager(nc)).streams.delete(stream).catch(() => false);
  await nc.close();
  await provider.shutdown();
});

test('a stored traceparent gives back the span it was taken from, and nothing gives the root context', () => {
  const span = trace.getTracer('test').startSpan('accept');
  const traceparent = traceparentOf(span);
  span.end();
  const { traceId, spanId } = span.spanContext();
  assert.equal(traceparent, `00-${traceId}-${spanId}-01`);
  assert.equal(traceIdOf(traceparent), traceId);
  assert.deepEqual(trace.getSpanContext(contextFromTraceparent(traceparent)), { traceId, spanId, traceFlags: 1, isRemote: true });
  assert.deepEqual(linkTo(traceparent), [{ context: { traceId, spanId, traceFlags: 1, isRemote: true } }]);
  for (const nothing of ['', null, undefined, 'not-a-traceparent', `00-${'0'.repeat(32)}-${spanId}-01`]) {
    assert.equal(trace.getSpanContext(contextFromTraceparent(nothing)), undefined, String(nothing));
    assert.equal(traceIdOf(nothing), null);
    assert.deepEqual(linkTo(nothing), []);
  }
  assert.equal(traceparentOf(context.active()), '');
});

test('a job published long after its creation carries the creation context, under a send span that is its child', async () => {
  const request = trace.getTracer('test').startSpan('request');
  const creation = startCreateSpan({ destination: subject, attributes: { 'notify.message.id': 7 } }, trace.setSpan(context.active(), request));
  creation.end();
  request.end();
  const created = traceparentOf(creation);
  // Later, from no request at all (the outbox relay's pass).
  const ack = await publishTraced(
    jetstream(nc),
    subject,
    { schema: 'test.Job', bytes: new TextEncoder().encode('job') },
    { msgID: '7' },
    { attributes: { 'notify.message.id': 7 }, created },
  );
  const stored = await (await jetstreamManager(nc)).streams.getMessage(stream, { seq: ack.seq });
  assert.equal(stored?.header.get('traceparent'), created);
  assert.equal(stored?.header.get('Notify-Schema'), 'test.Job', 'the schema travels beside the trace context');
  assert.equal(trace.getSpanContext(carriedContext(stored?.header))?.spanId, creation.spanContext().spanId);

  const spans = exporter.getFinishedSpans();
  const send = spans.find((span) => span.name === `send ${subject}`);
  assert.ok(send);
  assert.equal(send.spanContext().traceId, request.spanContext().traceId);
  assert.equal(send.parentSpanContext?.spanId, creation.spanContext().spanId);
  assert.deepEqual(
    {
      system: send.attributes['messaging.system'],
      operation: send.attributes['messaging.operation.type'],
      destination: send.attributes['messaging.destination.name'],
      id: send.attributes['messaging.message.id'],
    },
    { system: 'nats', operation: 'send', destination: subject, id: '7' },
  );
});

test('a message published without a stored creation carries its own send span', async () => {
  exporter.reset();
  const ack = await publishTraced(jetstream(nc), subject, { schema: 'test.Event', bytes: new TextEncoder().encode('event') }, { msgID: '7:1:sent' }, {});
  const stored = await (await jetstreamManager(nc)).streams.getMessage(stream, { seq: ack.seq });
  const [send] = exporter.getFinishedSpans();
  assert.ok(send);
  assert.equal(stored?.header.get('traceparent'), `00-${send.spanContext().traceId}-${send.spanContext().spanId}-01`);
});

test('a process names itself after its package, with its version and an instance of its own', () => {
  const entry = new URL('../../mailer-svc/src/main.ts', import.meta.url).pathname;
  const attributes = serviceResource({}, entry, 4242).attributes;
  assert.equal(attributes['service.name'], 'mailer-svc');
  assert.equal(attributes['service.version'], '0.1.0');
  assert.match(String(attributes['service.instance.id']), /^.+:4242$/);
  assert.equal(serviceResource({ POD_NAME: 'notify-mailer-7d9c-x2' }, entry, 4242).attributes['service.instance.id'], 'notify-mailer-7d9c-x2');
});

test('OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG choose the sampler the specification names; unset or unknown, the default stands', () => {
  const sampler = (env: Record<string, string>): string | undefined => samplerFromEnvironment(env).sampler?.toString();
  assert.equal(sampler({}), undefined);
  assert.equal(sampler({ OTEL_TRACES_SAMPLER: 'no_such_sampler' }), undefined);
  assert.equal(sampler({ OTEL_TRACES_SAMPLER: 'always_off' }), 'AlwaysOffSampler');
  assert.equal(sampler({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25' }), 'TraceIdRatioBased{0.25}');
  // Out of [0, 1] or missing, the ratio is 1, as the specification says.
  assert.equal(sampler({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '7' }), 'TraceIdRatioBased{1}');
  assert.match(
    String(sampler({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.1' })),
    /^ParentBased\{root=TraceIdRatioBased\{0\.1\}/,
  );
});

test('OTEL_PROPAGATORS: W3C trace context and baggage unless it names fewer, or none', () => {
  const fields = (env: Record<string, string>): string[] | undefined => propagatorFromEnvironment(env)?.fields().sort();
  assert.deepEqual(fields({}), ['baggage', 'traceparent', 'tracestate']);
  assert.deepEqual(fields({ OTEL_PROPAGATORS: 'tracecontext' }), ['traceparent', 'tracestate']);
  assert.deepEqual(fields({ OTEL_PROPAGATORS: 'tracecontext,b3' }), ['traceparent', 'tracestate']);
  assert.equal(fields({ OTEL_PROPAGATORS: 'none' }), undefined);
});

test('the OTEL_*_LIMIT variables bound what a span keeps; the span-specific one wins over the general one, and unset or unreadable ones leave the defaults', async () => {
  assert.deepEqual(spanLimitsFromEnvironment({}), {});
  assert.deepEqual(spanLimitsFromEnvironment({ OTEL_SPAN_EVENT_COUNT_LIMIT: 'many', OTEL_SPAN_LINK_COUNT_LIMIT: ' ' }), {});
  const limits = spanLimitsFromEnvironment({
    OTEL_ATTRIBUTE_COUNT_LIMIT: '9',
    OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT: '2',
    OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT: '4',
    OTEL_SPAN_EVENT_COUNT_LIMIT: '1',
    OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT: '1',
  });
  assert.deepEqual(limits, { attributeCountLimit: 2, attributeValueLengthLimit: 4, eventCountLimit: 1, attributePerEventCountLimit: 1 });

  const limitedExporter = new InMemorySpanExporter();
  const limited = new TracerProvider({ spanLimits: limits, spanProcessors: [new SimpleSpanProcessor({ exporter: limitedExporter })] });
  const span = limited.getTracer('test').startSpan('limited', { attributes: { first: 'abcdefgh', second: 'xy', third: 'dropped' } });
  // Past the event count limit the oldest events go.
  span.addEvent('dropped');
  span.addEvent('kept', { one: 1, two: 2 });
  span.end();
  const [recorded] = limitedExporter.getFinishedSpans();
  assert.deepEqual(recorded?.attributes, { first: 'abcd', second: 'xy' });
  assert.deepEqual(
    recorded?.events.map((event) => [event.name, event.attributes]),
    [['kept', { one: 1 }]],
  );
  await limited.shutdown();
});

test('the children of a span this process did not record are not made: the parent context stands in for them', async () => {
  const unrecorded = new TracerProvider({ sampler: new AlwaysOffSampler() }).getTracer('test').startSpan('process');
  assert.equal(unrecorded.isRecording(), false);
  const parent = trace.setSpan(context.active(), unrecorded);
  const child = startSpan('send', { parent });
  assert.deepEqual(child.spanContext(), unrecorded.spanContext());
  assert.equal(child.isRecording(), false);
  assert.deepEqual(await inSpan('render', { parent }, async (span) => span.spanContext()), unrecorded.spanContext());

  exporter.reset();
  // A carried context is the sampler's to decide (recorded here), and so is the child of a recorded span.
  const carried = startSpan('process carried', {
    parent: contextFromTraceparent(`00-${unrecorded.spanContext().traceId}-${unrecorded.spanContext().spanId}-01`),
  });
  const recordedChild = startSpan('send', { parent: trace.setSpan(context.active(), carried) });
  assert.equal(carried.isRecording(), true);
  assert.notEqual(recordedChild.spanContext().spanId, carried.spanContext().spanId);
  assert.equal(recordedChild.isRecording(), true);
  recordedChild.end();
  carried.end();
  assert.deepEqual(
    exporter.getFinishedSpans().map((span) => span.name),
    ['send', 'process carried'],
  );
});
