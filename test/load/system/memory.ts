// Peak resident memory of each service process, from the kernel's own high-water mark (VmHWM in /proc/<pid>/status),
// sampled while the bench runs: a process that is restarted (mailer replicas) is a new pid, and the peak of every
// pid that ever ran under a label is kept.
import { readFile } from 'node:fs/promises';

export interface MemorySampler {
  /** Peak RSS in MiB per label, over every process sampled under it. */
  peaks(): Record<string, number>;
  stop(): Promise<void>;
}

async function highWaterMarkKiB(pid: number): Promise<number | undefined> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const match = /^VmHWM:\s+(\d+)\s+kB$/m.exec(status);
    return match?.[1] === undefined ? undefined : Number(match[1]);
  } catch {
    return undefined; // exited between listing and reading
  }
}

/** `pids()` lists the processes to sample now, as [label, pid] pairs (several pids may share a label). */
export function sampleMemory(pids: () => ReadonlyArray<readonly [string, number]>, intervalMs = 1_000): MemorySampler {
  const peakKiB = new Map<string, number>();
  const sample = async (): Promise<void> => {
    await Promise.all(
      pids().map(async ([label, pid]) => {
        const kib = await highWaterMarkKiB(pid);
        if (kib !== undefined) peakKiB.set(label, Math.max(peakKiB.get(label) ?? 0, kib));
      }),
    );
  };
  let running = sample();
  const timer = setInterval(() => {
    running = running.then(sample);
  }, intervalMs);
  return {
    peaks: () => Object.fromEntries([...peakKiB].map(([label, kib]) => [label, Math.round(kib / 1024)])),
    async stop() {
      clearInterval(timer);
      await running;
      await sample();
    },
  };
}
