// The bench's relay (sink.ts): Postfix's smtp-sink counts what it receives; for a delay the port goes to the Node sink
// and back, and the count runs on across both.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { createTransport } from 'nodemailer';
import { waitFor } from '../../harness/wait.ts';
import { type BenchSink, startBenchSink } from './sink.ts';

const dir = mkdtempSync(join(tmpdir(), 'bench-sink-'));
let sink: BenchSink;

before(async () => {
  sink = await startBenchSink(dir);
});

after(async () => {
  await sink?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Sends `count` mails over one new pooled transport; answers the ms the slowest took. */
async function send(count: number): Promise<number> {
  const transport = createTransport({ host: '127.0.0.1', port: sink.port, pool: true, maxConnections: 2, ignoreTLS: true });
  try {
    const took = await Promise.all(
      Array.from({ length: count }, async (_, index) => {
        const started = performance.now();
        await transport.sendMail({ from: 'bench@example.com', to: `reader${index}@example.org`, subject: 'bench', text: 'hello' });
        return performance.now() - started;
      }),
    );
    return Math.max(...took);
  } finally {
    transport.close();
  }
}

/** smtp-sink counts at the final dot and writes the count a moment later: what it has counted once it reaches `expected`. */
const receivedReaches = (expected: number): Promise<number> =>
  waitFor(
    async () => {
      const received = await sink.received();
      return received >= expected && received;
    },
    { timeoutMs: 2_000, intervalMs: 20, what: `the sink to count ${expected} mails` },
  );

test('smtp-sink receives and counts; a delay hands the port to the Node sink and back, the count running on', async () => {
  const postfixPid = sink.pid;
  await send(3);
  assert.equal(await receivedReaches(3), 3);

  await sink.setDelay(100);
  assert.notEqual(sink.pid, postfixPid, 'another process holds the port');
  assert.ok((await send(2)) >= 100, 'each mail held 100 ms');
  assert.equal(await receivedReaches(5), 5);

  await sink.setDelay(0);
  await send(4);
  assert.equal(await receivedReaches(9), 9);
  assert.notEqual(sink.pid, postfixPid, 'a new smtp-sink');
});
