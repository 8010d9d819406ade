// Reads the .cpuprofile files `node --cpu-prof` wrote for a service and summarises where its CPU went: the functions
// with the most self time, and the same time grouped by package (a node_modules package, a folder of this
// repository, or Node's internals). Only samples taken inside the given time windows count, so start-up and idle
// stretches between scenarios do not dilute the figures.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TimeWindow } from '../scenarios/context.ts';

/** The subset of V8's CPU profile format the summary reads. Times are microseconds on the monotonic clock. */
export interface CpuProfile {
  readonly nodes: ReadonlyArray<{ readonly id: number; readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number } }>;
  readonly startTime: number;
  readonly endTime: number;
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

export interface CostLine {
  readonly name: string;
  readonly selfMs: number;
  /** Share of the busy (non-idle) time in the windows. */
  readonly share: number;
}

export interface ProfileSummary {
  readonly service: string;
  readonly files: number;
  /** Sampled time inside the windows. */
  readonly sampledMs: number;
  /** Of which not idle. */
  readonly busyMs: number;
  /** Garbage collection, as a share of busy time. */
  readonly gcShare: number;
  readonly functions: readonly CostLine[];
  readonly packages: readonly CostLine[];
}

const idle = '(idle)';
const garbageCollector = '(garbage collector)';

/** `file:///…/node_modules/@scope/pkg/lib/x.js` -> `@scope/pkg`; `file:///…/gateway/src/x.ts` -> `gateway`; `node:internal/…` -> `node (internal)`. */
export function packageOf(url: string, repoRoot: string): string {
  if (url === '') return '(native / V8)';
  if (url.startsWith('node:')) return 'node (internal)';
  const modules = url.lastIndexOf('/node_modules/');
  if (modules >= 0) {
    const [first, second] = url.slice(modules + '/node_modules/'.length).split('/');
    return first?.startsWith('@') ? `${first}/${second ?? ''}` : (first ?? url);
  }
  const path = url.replace(/^file:\/\//, '');
  if (path.startsWith(repoRoot)) return path.slice(repoRoot.length).split('/')[0] ?? path;
  return path;
}

/** Where a function lives, short: package-relative for dependencies, repository-relative for our code. */
export function locationOf(url: string, lineNumber: number, repoRoot: string): string {
  if (url === '') return '';
  const modules = url.lastIndexOf('/node_modules/');
  const path = modules >= 0 ? url.slice(modules + '/node_modules/'.length) : url.replace(/^file:\/\//, '').replace(repoRoot, '');
  return `${path}:${lineNumber + 1}`;
}

function inside(windows: readonly TimeWindow[] | undefined, timeUs: number): boolean {
  return windows === undefined || windows.some((window) => timeUs >= window.startUs && timeUs < window.endUs);
}

export function summarizeProfiles(service: string, profiles: readonly CpuProfile[], options: { windows?: readonly TimeWindow[]; repoRoot: string; top?: number }): ProfileSummary {
  const byFunction = new Map<string, number>();
  const byPackage = new Map<string, number>();
  let sampledUs = 0;
  let idleUs = 0;
  let gcUs = 0;
  for (const profile of profiles) {
    const frames = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
    let timeUs = profile.startTime;
    for (let index = 0; index < profile.samples.length; index += 1) {
      timeUs += profile.timeDeltas[index] ?? 0;
      // A sample stands for the time until the next one (the last one: until the profile ends).
      const nextUs = index + 1 < profile.samples.length ? timeUs + (profile.timeDeltas[index + 1] ?? 0) : profile.endTime;
      const durationUs = Math.max(0, nextUs - timeUs);
      if (!inside(options.windows, timeUs)) continue;
      const frame = frames.get(profile.samples[index] ?? -1);
      if (!frame) continue;
      sampledUs += durationUs;
      if (frame.functionName === idle) {
        idleUs += durationUs;
        continue;
      }
      if (frame.functionName === garbageCollector) gcUs += durationUs;
      const location = locationOf(frame.url, frame.lineNumber, options.repoRoot);
      const name = `${frame.functionName || '(anonymous)'}${location ? ` ${location}` : ''}`;
      byFunction.set(name, (byFunction.get(name) ?? 0) + durationUs);
      const owner = frame.url === '' && frame.functionName.startsWith('(') ? frame.functionName : packageOf(frame.url, options.repoRoot);
      byPackage.set(owner, (byPackage.get(owner) ?? 0) + durationUs);
    }
  }
  const busyUs = sampledUs - idleUs;
  const ranked = (costs: Map<string, number>): CostLine[] =>
    [...costs]
      .sort((a, b) => b[1] - a[1])
      .slice(0, options.top ?? 15)
      .map(([name, us]) => ({ name, selfMs: Math.round(us / 1_000), share: busyUs > 0 ? us / busyUs : 0 }));
  return {
    service,
    files: profiles.length,
    sampledMs: Math.round(sampledUs / 1_000),
    busyMs: Math.round(busyUs / 1_000),
    gcShare: busyUs > 0 ? gcUs / busyUs : 0,
    functions: ranked(byFunction),
    packages: ranked(byPackage),
  };
}

/** Main-thread profiles (thread id 0 in Node's default file name) of every process of a service, from `<dir>/<service>/`. */
export function readProfiles(dir: string, service: string): CpuProfile[] {
  let names: string[];
  try {
    names = readdirSync(join(dir, service));
  } catch {
    return [];
  }
  return names
    .filter((name) => /^CPU\.\d+\.\d+\.\d+\.0\.\d+\.cpuprofile$/.test(name))
    .map((name) => JSON.parse(readFileSync(join(dir, service, name), 'utf8')) as CpuProfile);
}
