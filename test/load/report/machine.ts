// The machine a run was measured on, recorded beside its figures: they mean little without it.
import { readFileSync } from 'node:fs';
import { availableParallelism, loadavg, totalmem } from 'node:os';
import type pg from 'pg';

export interface MachineDescription {
  readonly cpus: number;
  readonly cpuModel: string;
  readonly memoryGiB: number;
  readonly node: string;
  readonly postgres: string;
  readonly kernel: string;
  /** 1, 5 and 15 minute load averages when the run started: above ~1 on 2 cores, something else was busy. */
  readonly loadAtStart: readonly number[];
}

function cpuModel(): string {
  try {
    return /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1]?.trim() ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

function kernel(): string {
  try {
    return readFileSync('/proc/sys/kernel/osrelease', 'utf8').trim();
  } catch {
    return 'unknown';
  }
}

export async function describeMachine(db: pg.Pool, loadAtStart: readonly number[]): Promise<MachineDescription> {
  const { rows } = await db.query<{ version: string }>("SELECT current_setting('server_version') AS version");
  return {
    cpus: availableParallelism(),
    cpuModel: cpuModel(),
    memoryGiB: Math.round((totalmem() / 1024 ** 3) * 10) / 10,
    node: process.version,
    postgres: rows[0]?.version ?? 'unknown',
    kernel: kernel(),
    loadAtStart,
  };
}

export function currentLoad(): number[] {
  return loadavg().map((value) => Math.round(value * 100) / 100);
}
