// Postfix's smtp-sink (Debian's postfix package, installed when missing): an SMTP server written to measure its
// clients, which speaks PIPELINING and throws every mail away, for the bench's relay. The same sink serves raw pooled
// nodemailer and Notify, so neither row pays for a sink heavier than the other's. It counts what it received with -c
// (a line of counters at every final dot), written unbuffered (stdbuf) so the count is current when asked.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { connect } from 'node:net';
import { dirname, join } from 'node:path';
import { ensurePostfix } from '../../harness/private-postfix.ts';
import { waitFor } from '../../harness/wait.ts';

export interface PostfixSink {
  readonly pid: number | undefined;
  /** Mails received since it started. */
  received(): number;
  stop(): Promise<void>;
}

/** smtp-sink's -c counters, rewritten in place with a carriage return: `sess=2 quit=0 mesg=5`. */
const counters = /mesg=(\d+)/g;

/** Starts smtp-sink on 127.0.0.1:`port` and resolves once it accepts connections. */
export async function startPostfixSink(port: number): Promise<PostfixSink> {
  const program = join(dirname(await ensurePostfix()), 'smtp-sink');
  // As root smtp-sink must be told whose privileges to take once its socket is open.
  const user = process.getuid?.() === 0 ? ['-u', 'nobody'] : [];
  const child: ChildProcess = spawn('stdbuf', ['-o0', program, '-c', ...user, `127.0.0.1:${port}`, '1024'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = once(child, 'exit');
  let received = 0;
  let errors = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    for (const match of chunk.toString('latin1').matchAll(counters)) received = Number(match[1]);
  });
  child.stderr?.on('data', (chunk: Buffer) => (errors += chunk.toString('utf8')));
  const killNow = (): void => void child.kill('SIGKILL');
  process.once('exit', killNow);
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
    process.off('exit', killNow);
  };
  try {
    await waitFor(() => (child.exitCode !== null || child.signalCode !== null ? Promise.reject(new Error('it exited')) : accepts(port)), {
      timeoutMs: 10_000,
      intervalMs: 50,
      what: `smtp-sink to listen on port ${port}`,
    });
  } catch (error) {
    await stop();
    throw new Error(`smtp-sink did not start: ${(error as Error).message}\n${errors}`);
  }
  return { pid: child.pid, received: () => received, stop };
}

/** Whether something accepts a connection on 127.0.0.1:`port`. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
