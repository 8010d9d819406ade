// Where the machine's CPU time goes during a scenario, per process group: each service, this run's PostgreSQL
// backends, the shared NATS and Redis servers, the bench itself, and the rest of the machine (other work that shares
// it). Divided by the messages accepted, it says what one message costs and what limits the figure. Beside it, the
// time the same processes spent ready to run but waiting for a CPU (the scheduler's run queue): divided by the
// requests of a paced run, the share of their latency that is waiting for a core, not work.
import { readdirSync, readFileSync } from 'node:fs';
import type pg from 'pg';

/** Kernel clock ticks per second for /proc/<pid>/stat and /proc/stat times (USER_HZ, 100 on Linux). */
const ticksPerSecond = 100;

/**
 * CPU milliseconds used so far, per process (`<label>\0<pid>`), and by the whole machine (`machine`). Kept per process,
 * not per group: a group's processes change during a phase (a pooled backend closes and another opens, a mailer is
 * restarted), and a group's total would then fall by what the leaving process had used before the phase.
 */
export type CpuSnapshot = ReadonlyMap<string, number>;

/** The bench's SMTP relay among the helper processes: counted in a run's system figures, and also given apart. */
export const sinkLabel = 'smtp-sink';

export const processKey = (label: string, pid: number): string => `${label}\0${pid}`;
const labelOf = (key: string): string => key.split('\0')[0] as string;

export interface CpuSources {
  /** Service processes as [label, pid]. */
  readonly services: () => ReadonlyArray<readonly [string, number]>;
  /** Other processes of the bench as [label, pid] (the SMTP sink). */
  readonly helpers: ReadonlyArray<readonly [string, number | undefined]>;
  readonly db: pg.Pool;
}

function processMs(pid: number): number {
  try {
    // Fields after the command name (which may contain spaces) start at field 3; utime and stime are fields 14 and 15.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1_000) / ticksPerSecond;
  } catch {
    return 0; // exited
  }
}

/**
 * Milliseconds the process's threads have spent runnable but waiting for a CPU: the second field of each thread's
 * /proc/<pid>/task/<tid>/schedstat (nanoseconds), summed over the threads alive now: a thread's figure ends with it
 * (V8's and libuv's threads live as long as the process). Undefined when the kernel does not keep it or the process
 * exited.
 */
export function runQueueWaitMs(pid: number): number | undefined {
  try {
    let waitNs = 0;
    for (const thread of readdirSync(`/proc/${pid}/task`)) {
      try {
        waitNs += Number(readFileSync(`/proc/${pid}/task/${thread}/schedstat`, 'utf8').split(' ')[1]);
      } catch {
        // the thread ended while listed
      }
    }
    return Number.isFinite(waitNs) ? waitNs / 1e6 : undefined;
  } catch {
    return undefined;
  }
}

/** Busy time of the whole machine (all CPUs), from the first line of /proc/stat. */
function machineBusyMs(): number {
  const [, ...values] = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '').trim().split(/\s+/);
  const [user, nice, system, , , irq, softirq, steal] = values.map(Number);
  return (((user ?? 0) + (nice ?? 0) + (system ?? 0) + (irq ?? 0) + (softirq ?? 0) + (steal ?? 0)) * 1_000) / ticksPerSecond;
}

/** The machine's shared servers: the NATS on 4222 and the Redis on 6379 the run uses (private test instances excluded). */
function sharedServers(): Array<[string, number]> {
  const found: Array<[string, number]> = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const command = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ');
      if (/nats-server/.test(command) && /-p 4222\b/.test(command)) found.push(['nats-server', Number(entry)]);
      else if (/redis-server/.test(command) && /:6379\b/.test(command)) found.push(['redis-server', Number(entry)]);
    } catch {
      // exited while listed
    }
  }
  return found;
}

async function postgresBackends(db: pg.Pool): Promise<number[]> {
  const { rows } = await db.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()');
  return rows.map((row) => row.pid);
}

/** Every process the bench accounts for, as [label, pid]. */
async function accountedProcesses(sources: CpuSources): Promise<Array<readonly [string, number]>> {
  const found: Array<readonly [string, number]> = [...sources.services()];
  for (const [label, pid] of sources.helpers) if (pid !== undefined) found.push([label, pid]);
  for (const pid of await postgresBackends(sources.db)) found.push(['postgres (this run)', pid]);
  found.push(...sharedServers(), ['bench (load generator)', process.pid]);
  return found;
}

export async function snapshotCpu(sources: CpuSources): Promise<CpuSnapshot> {
  const totals = new Map<string, number>();
  for (const [label, pid] of await accountedProcesses(sources)) totals.set(processKey(label, pid), processMs(pid));
  totals.set('machine', machineBusyMs());
  return totals;
}

/** Run-queue waits so far, per process (`<label>\0<pid>`): empty where the kernel keeps no scheduler statistics. */
export async function snapshotRunQueueWait(sources: CpuSources): Promise<CpuSnapshot> {
  const totals = new Map<string, number>();
  for (const [label, pid] of await accountedProcesses(sources)) {
    const waited = runQueueWaitMs(pid);
    if (waited !== undefined) totals.set(processKey(label, pid), waited);
  }
  return totals;
}

/** Each group's use between two snapshots, each process counted from its own start (see CpuSnapshot). */
function usedPerGroup(before: CpuSnapshot, after: CpuSnapshot): Map<string, number> {
  const used = new Map<string, number>();
  for (const [key, ms] of after) {
    if (key === 'machine') continue;
    const label = labelOf(key);
    used.set(label, (used.get(label) ?? 0) + Math.max(0, ms - (before.get(key) ?? 0)));
  }
  return used;
}

/**
 * CPU milliseconds per accepted message between two snapshots, per group, plus `other`: machine time no group
 * accounts for (other users of the machine, PostgreSQL's background writers, the kernel, and what a process that
 * exited between the snapshots used). A process missing from the first snapshot (started in between) counts from zero.
 */
export function cpuPerMessage(before: CpuSnapshot, after: CpuSnapshot, messages: number): Record<string, number> {
  const used = usedPerGroup(before, after);
  const perMessage: Record<string, number> = {};
  let accounted = 0;
  for (const [label, ms] of used) {
    accounted += ms;
    perMessage[label] = ms / Math.max(1, messages);
  }
  const machine = (after.get('machine') ?? 0) - (before.get('machine') ?? 0);
  perMessage['other (not this run)'] = Math.max(0, machine - accounted) / Math.max(1, messages);
  perMessage['machine total'] = machine / Math.max(1, messages);
  return perMessage;
}

/**
 * Milliseconds each group waited for a CPU per request between two run-queue snapshots, and `in all`; undefined when
 * the kernel keeps no scheduler statistics (no group measured).
 */
export function runQueueWaitPerRequest(before: CpuSnapshot, after: CpuSnapshot, requests: number): Record<string, number> | undefined {
  const waited = usedPerGroup(before, after);
  if (waited.size === 0) return undefined;
  const perRequest: Record<string, number> = {};
  let total = 0;
  for (const [label, ms] of waited) {
    total += ms;
    perRequest[label] = ms / Math.max(1, requests);
  }
  perRequest['in all'] = total / Math.max(1, requests);
  return perRequest;
}
