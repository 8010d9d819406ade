// The command-line tools the chart checks run, installed once per machine into the user's cache directory
// ($XDG_CACHE_HOME or ~/.cache, under notify/tools/bin), outside any clone, so a fresh clone reuses them:
// helm and kube-strict with `go install` (Go module proxy), promtool from Debian's `prometheus` package (apt).
// Nothing else is downloaded. Each resolves to the binary's path, or to a reason the checks must be skipped.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);

export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
export const toolsBin = join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'notify', 'tools', 'bin');

/** Pinned: the newest v3.21 patch on the Go module proxy when this was written. */
export const helmVersion = 'v3.21.4';
/** Strict decoding into the Kubernetes API's Go types (test/helm/kube-strict, its versions pinned by its go.mod). */
export const kubeStrictDir = join(repoRoot, 'test', 'helm', 'kube-strict');

export type Tool = { readonly path: string } | { readonly skip: string };

async function goAvailable(): Promise<boolean> {
  try {
    await run('go', ['version']);
    return true;
  } catch {
    return false;
  }
}

/**
 * `go install` into a private GOBIN, the binary then kept as <binary>-<version>: a pin that changes installs anew,
 * one that does not reuses the cached build.
 */
async function goInstall(binary: string, version: string, target: string, cwd: string): Promise<Tool> {
  const path = join(toolsBin, `${binary}-${version}`);
  if (existsSync(path)) return { path };
  if (!(await goAvailable())) return { skip: `Go is not installed: cannot \`go install ${target}\` (install Go to run these checks)` };
  mkdirSync(toolsBin, { recursive: true });
  // Test files run in parallel processes: one compiles, the others wait for its binary.
  const lock = `${path}.lock`;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      if (existsSync(path)) return { path };
      const since = statSync(lock, { throwIfNoEntry: false })?.mtimeMs;
      if (since !== undefined && Date.now() - since > 20 * 60_000) rmSync(lock, { recursive: true, force: true }); // left by a killed run
      await new Promise((resolve) => setTimeout(resolve, 2_000));
    }
  }
  const gobin = mkdtempSync(join(toolsBin, `.${binary}-`));
  try {
    if (existsSync(path)) return { path };
    // Minutes the first time (compiling), then never again on this machine.
    await run('go', ['install', target], {
      cwd,
      env: { ...process.env, GOBIN: gobin, GOFLAGS: '-buildvcs=false' },
      maxBuffer: 16 * 1024 * 1024,
      timeout: 15 * 60_000,
    });
    renameSync(join(gobin, binary), path);
  } finally {
    rmSync(gobin, { recursive: true, force: true });
    rmSync(lock, { recursive: true, force: true });
  }
  return { path };
}

/** Changes whenever the checker's source or its pinned dependencies do. */
function kubeStrictVersion(): string {
  const hash = createHash('sha256');
  for (const file of ['go.mod', 'go.sum', 'main.go']) hash.update(readFileSync(join(kubeStrictDir, file)));
  return hash.digest('hex').slice(0, 12);
}

let helm: Promise<Tool> | undefined;
let kubeStrict: Promise<Tool> | undefined;
let promtool: Promise<Tool> | undefined;

export function ensureHelm(): Promise<Tool> {
  helm ??= goInstall('helm', helmVersion, `helm.sh/helm/v3/cmd/helm@${helmVersion}`, repoRoot);
  return helm;
}

export function ensureKubeStrict(): Promise<Tool> {
  kubeStrict ??= goInstall('kube-strict', kubeStrictVersion(), '.', kubeStrictDir);
  return kubeStrict;
}

async function onPath(binary: string): Promise<string | undefined> {
  try {
    const { stdout } = await run('sh', ['-c', `command -v ${binary}`]);
    return stdout.trim() || undefined;
  } catch {
    return undefined;
  }
}

/**
 * promtool from the machine, else from Debian's `prometheus` package: downloaded with apt and unpacked (not installed,
 * so no Prometheus server is set up or started), only promtool kept.
 */
async function installPromtool(): Promise<Tool> {
  const cached = join(toolsBin, 'promtool');
  if (existsSync(cached)) return { path: cached };
  const system = await onPath('promtool');
  if (system) return { path: system };
  const work = mkdtempSync(join(tmpdir(), 'notify-promtool-'));
  try {
    try {
      await run('apt-get', ['download', 'prometheus'], { cwd: work, timeout: 5 * 60_000 });
    } catch {
      await run('apt-get', ['update', '-qq'], { timeout: 5 * 60_000 });
      await run('apt-get', ['download', 'prometheus'], { cwd: work, timeout: 5 * 60_000 });
    }
    const { stdout } = await run('sh', ['-c', 'ls prometheus_*.deb'], { cwd: work });
    await run('dpkg-deb', ['-x', stdout.trim(), 'root'], { cwd: work });
    mkdirSync(toolsBin, { recursive: true });
    copyFileSync(join(work, 'root', 'usr', 'bin', 'promtool'), `${cached}.partial`);
    chmodSync(`${cached}.partial`, 0o755);
    renameSync(`${cached}.partial`, cached);
    return { path: cached };
  } catch (error) {
    return { skip: `promtool is missing and Debian's prometheus package could not be fetched with apt (${(error as Error).message.split('\n')[0]})` };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

export function ensurePromtool(): Promise<Tool> {
  promtool ??= installPromtool();
  return promtool;
}

export interface Result {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a tool; resolves whatever its exit code (the checks assert on it). */
export function runTool(path: string, args: readonly string[], options: { input?: string; cwd?: string } = {}): Promise<Result> {
  return new Promise((resolve, reject) => {
    const child = execFile(path, args, { cwd: options.cwd ?? repoRoot, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error && typeof error.code !== 'number') return reject(error);
      resolve({ code: error ? Number(error.code) : 0, stdout, stderr });
    });
    if (options.input !== undefined) child.stdin?.end(options.input);
  });
}
