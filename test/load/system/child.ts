// Helpers of the bench that run in processes of their own (the SMTP sink, the bare Koa ceiling server), so their work
// never shares an event loop with the load generator and bends its latency figures. They talk over the IPC channel:
// the child announces `{ type: 'ready', ... }`, then answers requests carrying an `id` with the same `id`.
import { type ChildProcess, fork } from 'node:child_process';

export interface ChildHandle<Ready> {
  readonly ready: Ready;
  readonly pid: number | undefined;
  /** Sends a request and resolves with the child's answer to it. */
  ask<Answer>(message: Record<string, unknown>): Promise<Answer>;
  /** Asks it to close, then SIGKILL if it has not exited within 5 s. */
  stop(): Promise<void>;
}

export async function startChild<Ready>(entry: URL, args: readonly string[], readyTimeoutMs = 15_000): Promise<ChildHandle<Ready>> {
  const child: ChildProcess = fork(entry, [...args], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const killNow = (): void => void child.kill('SIGKILL');
  process.once('exit', killNow);
  const pending = new Map<number, { resolve: (answer: unknown) => void; reject: (error: Error) => void }>();
  let nextId = 0;
  child.once('exit', (code, signal) => {
    for (const waiter of pending.values()) waiter.reject(new Error(`${entry.pathname} exited (${signal ?? code})`));
    pending.clear();
  });
  const ready = await new Promise<Ready>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${entry.pathname} did not start within ${readyTimeoutMs} ms`)), readyTimeoutMs);
    child.once('exit', (code, signal) => reject(new Error(`${entry.pathname} exited before it was ready (${signal ?? code})`)));
    child.on('message', (message: { type?: string; id?: number }) => {
      if (message.type === 'ready') {
        clearTimeout(timer);
        resolve(message as Ready);
      } else if (message.id !== undefined) {
        pending.get(message.id)?.resolve(message);
        pending.delete(message.id);
      }
    });
  }).catch(async (error: unknown) => {
    child.kill('SIGKILL');
    await exited;
    process.off('exit', killNow);
    throw error;
  });
  return {
    ready,
    pid: child.pid,
    ask<Answer>(message: Record<string, unknown>) {
      const id = nextId++;
      return new Promise<Answer>((resolve, reject) => {
        if (child.exitCode !== null || child.signalCode !== null) return reject(new Error(`${entry.pathname} is not running`));
        pending.set(id, { resolve: resolve as (answer: unknown) => void, reject });
        child.send({ ...message, id });
      });
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.send({ type: 'close' });
        const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await exited;
        clearTimeout(timer);
      }
      process.off('exit', killNow);
    },
  };
}
