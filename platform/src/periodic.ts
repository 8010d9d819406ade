// A background task run at a fixed pause between passes (never overlapping), stoppable for shutdown.
import type { Logger } from './logger.ts';

export interface PeriodicTask {
  /** Lets a pass in progress finish, then stops. */
  stop(): Promise<void>;
}

/** Runs `pass` every `intervalMs` after the previous pass ended; a failed pass is logged and the next one still runs. */
export function runPeriodically(name: string, intervalMs: number, pass: () => Promise<unknown>, logger: Logger): PeriodicTask {
  let timer: NodeJS.Timeout | undefined;
  let current: Promise<void> = Promise.resolve();
  let stopped = false;
  const schedule = (): void => {
    timer = setTimeout(() => {
      current = pass().then(
        () => undefined,
        (error: unknown) => logger.warn({ err: error, task: name }, 'background pass failed'),
      );
      void current.then(() => {
        if (!stopped) schedule();
      });
    }, intervalMs);
  };
  schedule();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await current;
    },
  };
}
