// The OTLP/HTTP trace receiver of the end-to-end tests (test/harness/otlp-receiver.ts) in a process of its own, for
// the bench's tracing-cost scenario: decoding the services' exports is a collector's work, and must neither share the
// load generator's event loop nor hide in its CPU figure. It answers how many spans it has received, per service.
import { startOtlpReceiver } from '../../harness/otlp-receiver.ts';

const send = (message: Record<string, unknown>): void => void process.send?.(message);
const receiver = await startOtlpReceiver();

// Spans are tallied per service as they are counted, then let go: a run of the bench receives tens of thousands.
const byService: Record<string, number> = {};
let total = 0;
function tally(): void {
  const spans = receiver.spans as unknown[] as Array<{ service: string }>;
  for (const span of spans) byService[span.service || '(unnamed)'] = (byService[span.service || '(unnamed)'] ?? 0) + 1;
  total += spans.length;
  spans.length = 0;
}

process.on('message', (message: { type: string; id?: number }) => {
  if (message.type === 'count') {
    tally();
    send({ id: message.id, spans: total, byService, requests: receiver.requests, undecodable: receiver.undecodable });
  } else if (message.type === 'close') {
    void receiver.close().then(() => process.exit(0));
  }
});
// The bench going away without a word must not leave the receiver behind.
process.on('disconnect', () => process.exit(0));
send({ type: 'ready', tracesUrl: receiver.tracesUrl });
