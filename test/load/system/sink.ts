// The bench's SMTP relay: Postfix's smtp-sink (postfix-sink.ts), the same for raw pooled nodemailer and for Notify.
// The scale-out scenario needs a relay that holds every mail 100 ms, which smtp-sink cannot (its delays are whole
// seconds): for it, and only while the mailers are stopped on either side, the port is handed to the Node sink of
// sink-process.ts, which can. The count of received mails runs on across the swaps.
import { freePort } from '../../harness/free-port.ts';
import { startChild } from './child.ts';
import { startPostfixSink } from './postfix-sink.ts';

export interface BenchSink {
  readonly port: number;
  /** The process receiving mail now (its CPU is the sink's). */
  readonly pid: number | undefined;
  /** Mails received so far, by every sink the port has had. */
  received(): Promise<number>;
  /**
   * Holds every mail this long before accepting it (0: answer at once, Postfix's smtp-sink). Only while no mailer is
   * connected: the port changes hands.
   */
  setDelay(ms: number): Promise<void>;
  close(): Promise<void>;
}

interface Incarnation {
  readonly delaying: boolean;
  readonly pid: number | undefined;
  received(): Promise<number>;
  setDelay(ms: number): Promise<void>;
  stop(): Promise<void>;
}

async function postfixSink(port: number): Promise<Incarnation> {
  const sink = await startPostfixSink(port);
  return {
    delaying: false,
    pid: sink.pid,
    received: async () => sink.received(),
    setDelay: async () => undefined,
    stop: () => sink.stop(),
  };
}

async function delayingSink(dir: string, port: number): Promise<Incarnation> {
  const child = await startChild<{ port: number }>(new URL('./sink-process.ts', import.meta.url), [dir, String(port)]);
  return {
    delaying: true,
    pid: child.pid,
    received: async () => (await child.ask<{ received: number }>({ type: 'received' })).received,
    setDelay: async (ms) => void (await child.ask({ type: 'delay', ms })),
    stop: () => child.stop(),
  };
}

export async function startBenchSink(dir: string): Promise<BenchSink> {
  const port = await freePort();
  let current = await postfixSink(port);
  let before = 0;
  const handOver = async (next: () => Promise<Incarnation>): Promise<void> => {
    const stopping = current;
    const stored = await stopping.received();
    await stopping.stop();
    before += stored;
    current = await next();
  };
  return {
    port,
    get pid() {
      return current.pid;
    },
    received: async () => before + (await current.received()),
    async setDelay(ms) {
      if (ms > 0 && !current.delaying) await handOver(() => delayingSink(dir, port));
      if (ms === 0 && current.delaying) await handOver(() => postfixSink(port));
      await current.setDelay(ms);
    },
    close: () => current.stop(),
  };
}
