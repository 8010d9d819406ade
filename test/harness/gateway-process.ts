// Extra gateway processes beside a stack's own: another replica with the same environment (optionally changed), started
// the way production starts it, or a run that is expected to stop at start (a malformed configuration).
import { type ChildProcess, spawn } from 'node:child_process';
import { get } from 'node:http';
import { fileURLToPath } from 'node:url';
import type { Stack } from '@notify/cli/local';
import { freePort } from './free-port.ts';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const command = ['--import', '@notify/platform/telemetry-register', 'gateway/src/main.ts'];

export interface GatewayExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface GatewayReplica {
  /** http://127.0.0.1:<port> of its public listener. */
  readonly url: string;
  readonly metricsPort: number;
  readonly pid: number | undefined;
  /** Everything it printed so far, for failure messages. */
  output(): string;
  /** Resolves when it has exited. */
  readonly exited: Promise<GatewayExit>;
  /** SIGTERM, SIGKILL after 10 s; resolves once it has exited. */
  stop(): Promise<GatewayExit>;
}

function spawnGateway(env: Readonly<Record<string, string>>): { child: ChildProcess; exited: Promise<GatewayExit>; output: () => string } {
  const child = spawn(process.execPath, command, { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const exited = new Promise<GatewayExit>((resolve) => {
    child.once('error', (error) => resolve({ code: null, signal: null, stdout, stderr: `${stderr}could not start: ${error.message}` }));
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
  return { child, exited, output: () => `${stdout}${stderr}` };
}

function readyz(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const request = get({ host: '127.0.0.1', port, path: '/readyz', timeout: 1_000, agent: false }, (response) => {
      response.resume();
      resolve(response.statusCode === 200);
    });
    request.on('timeout', () => request.destroy());
    request.on('error', () => resolve(false));
  });
}

/** The environment the stack's own gateway runs with, with `env` merged over it. */
export function gatewayEnv(stack: Stack, env: Readonly<Record<string, string>> = {}): Record<string, string> {
  return { ...stack.serviceEnv('gateway'), ...env };
}

/**
 * Another gateway process on free ports, with the stack gateway's environment and `env` merged over it (e.g. another
 * REDIS_URL); resolves once its /readyz answers 200.
 */
export async function startGatewayReplica(stack: Stack, env: Readonly<Record<string, string>> = {}): Promise<GatewayReplica> {
  const httpPort = await freePort();
  const metricsPort = await freePort();
  const { child, exited, output } = spawnGateway(gatewayEnv(stack, { ...env, HTTP_PORT: String(httpPort), METRICS_PORT: String(metricsPort) }));
  let running = true;
  void exited.then(() => (running = false));
  const killNow = (): void => void child.kill('SIGKILL');
  process.once('exit', killNow);
  const stop = async (): Promise<GatewayExit> => {
    if (running) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    process.off('exit', killNow);
    return exited;
  };

  const deadline = Date.now() + 30_000;
  while (!(await readyz(metricsPort))) {
    if (!running || Date.now() > deadline) {
      await stop();
      throw new Error(`the extra gateway ${running ? 'was not ready within 30 s' : 'exited before it was ready'}:\n${output()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    url: `http://127.0.0.1:${httpPort}`,
    metricsPort,
    get pid() {
      return running ? child.pid : undefined;
    },
    output,
    exited,
    stop,
  };
}

/** Runs a gateway that is expected to refuse its configuration; SIGKILL if it is still running after `timeoutMs`. */
export async function runGatewayExpectingExit(env: Readonly<Record<string, string>>, timeoutMs = 15_000): Promise<GatewayExit & { timedOut: boolean }> {
  const { child, exited } = spawnGateway(env);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill('SIGKILL');
  }, timeoutMs);
  const exit = await exited;
  clearTimeout(timer);
  return { ...exit, timedOut };
}
