// Reads the .cpuprofile files `node --cpu-prof` wrote for a service and summarises where its CPU went: the functions
// with the most self time, and the same time grouped by package (a node_modules package, a folder of this
// repository, or Node's internals). Only samples taken inside the given time windows count, so start-up and idle
// stretches between scenarios do not dilute the figures. The same time is also charged to whoever asked for it: the
// nearest frame above a sample that has a file of its own (Node's internals and V8's builtins have none), so that a
// socket write made for pg counts as pg's and one made for our code as ours.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TimeWindow } from '../scenarios/context.ts';

/** The subset of V8's CPU profile format the summary reads. Times are microseconds on the monotonic clock. */
export interface CpuProfile {
  readonly nodes: ReadonlyArray<{
    readonly id: number;
    readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
    readonly children?: readonly number[];
  }>;
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
  /** Self time charged to the package or repository folder that asked for it (see askerOf). */
  readonly askers: readonly CostLine[];
  /** The same as shares of busy time, in four: our code, its dependencies, Node with nothing of either above, V8 (GC, unattributed). */
  readonly split: { readonly ours: number; readonly dependencies: number; readonly node: number; readonly vm: number };
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

type Frame = CpuProfile['nodes'][number];

/** Node and V8 code: Node's internals (`node:`, its `wasm://` parsers) and builtins or native code (no file). */
const isRuntime = (frame: Frame): boolean => !frame.callFrame.url.startsWith('file://');

/**
 * Who a sample's time is charged to: the package or repository folder of the nearest frame above it that is not Node's
 * or V8's (its kind: `ours` for a folder of this repository, `dependencies` for node_modules), or Node itself when no
 * such frame is there (the event loop's own work, a microtask queue drained from Node); the garbage collector and
 * V8's unattributed time are V8's.
 */
function askerOf(frame: Frame, parentOf: ReadonlyMap<number, Frame>, repoRoot: string): { name: string; kind: keyof ProfileSummary['split'] } {
  const name = frame.callFrame.functionName;
  if (frame.callFrame.url === '' && (name === garbageCollector || name === '(program)')) return { name, kind: 'vm' };
  for (let above: Frame | undefined = frame; above; above = parentOf.get(above.id)) {
    if (isRuntime(above)) continue;
    const url = above.callFrame.url;
    const kind = url.includes('/node_modules/') || !url.slice('file://'.length).startsWith(repoRoot) ? 'dependencies' : 'ours';
    return { name: packageOf(url, repoRoot), kind };
  }
  return { name: 'node (no package above)', kind: 'node' };
}

function inside(windows: readonly TimeWindow[] | undefined, timeUs: number): boolean {
  return windows === undefined || windows.some((window) => timeUs >= window.startUs && timeUs < window.endUs);
}

export function summarizeProfiles(
  service: string,
  profiles: readonly CpuProfile[],
  options: { windows?: readonly TimeWindow[]; repoRoot: string; top?: number },
): ProfileSummary {
  const byFunction = new Map<string, number>();
  const byPackage = new Map<string, number>();
  const byAsker = new Map<string, number>();
  const split = { ours: 0, dependencies: 0, node: 0, vm: 0 };
  let sampledUs = 0;
  let idleUs = 0;
  let gcUs = 0;
  for (const profile of profiles) {
    const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
    const parentOf = new Map<number, Frame>();
    for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node);
    const askers = new Map<number, ReturnType<typeof askerOf>>();
    let timeUs = profile.startTime;
    for (let index = 0; index < profile.samples.length; index += 1) {
      timeUs += profile.timeDeltas[index] ?? 0;
      // A sample stands for the time until the next one (the last one: until the profile ends).
      const nextUs = index + 1 < profile.samples.length ? timeUs + (profile.timeDeltas[index + 1] ?? 0) : profile.endTime;
      const durationUs = Math.max(0, nextUs - timeUs);
      if (!inside(options.windows, timeUs)) continue;
      const node = nodes.get(profile.samples[index] ?? -1);
      if (!node) continue;
      const frame = node.callFrame;
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
      let asker = askers.get(node.id);
      if (!asker) {
        asker = askerOf(node, parentOf, options.repoRoot);
        askers.set(node.id, asker);
      }
      byAsker.set(asker.name, (byAsker.get(asker.name) ?? 0) + durationUs);
      split[asker.kind] += durationUs;
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
    askers: ranked(byAsker),
    split: {
      ours: busyUs > 0 ? split.ours / busyUs : 0,
      dependencies: busyUs > 0 ? split.dependencies / busyUs : 0,
      node: busyUs > 0 ? split.node / busyUs : 0,
      vm: busyUs > 0 ? split.vm / busyUs : 0,
    },
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
