// The test's side of receiver-process.ts: starts it, with a fake dispatch-svc in the test's process, and asks it what
// it used.
import { type ChildProcess, fork } from 'node:child_process';
import { once } from 'node:events';
import { startFakeDispatch } from './fake-dispatch.ts';
import type { ReceiverProcessSettings } from './receiver-process.ts';

export interface Usage {
  /** The highest resident set size since the previous call (or the start), and the one now, in bytes. */
  peak: number;
  now: number;
  /**
   * The most CPU time, in ms, the receiver's main thread spent between two turns of its event loop since the previous
   * call: how long it kept every other client waiting, whatever else the machine was running.
   */
  longestTurnMs: number;
}

export interface ForkedReceiver {
  readonly port: number;
  /** The messageId of every report applied, in order. */
  readonly applied: readonly number[];
  usage(): Promise<Usage>;
  close(): Promise<void>;
}

async function nextMessage<T>(child: ChildProcess): Promise<T> {
  const [message] = (await once(child, 'message')) as [T];
  return message;
}

export async function forkReceiver(settings: Omit<ReceiverProcessSettings, 'dispatch'>): Promise<ForkedReceiver> {
  const dispatch = await startFakeDispatch();
  const child = fork(
    new URL('./receiver-process.ts', import.meta.url),
    [JSON.stringify({ ...settings, dispatch: { address: dispatch.address, token: dispatch.token } })],
    {
      execArgv: [],
      stdio: 'inherit',
    },
  );
  const { port } = await nextMessage<{ port: number }>(child);
  return {
    port,
    applied: dispatch.applied,
    async usage() {
      child.send('usage');
      return nextMessage<Usage>(child);
    },
    async close() {
      child.send('close');
      await once(child, 'exit');
      await dispatch.close();
    },
  };
}
