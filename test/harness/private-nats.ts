// A nats-server with JetStream of the test's own, on a free port, that the test may kill and restart (the machine's
// shared NATS must never be touched that way). A restart reuses the port and the store directory, so streams,
// consumers and stored messages survive it, as they survive a restart of a real NATS node.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { get } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port.ts';

export interface PrivateNats {
  /** nats://127.0.0.1:<port> */
  readonly url: string;
  readonly port: number;
  /** True while the server process runs. */
  readonly running: boolean;
  /** Stops the server with `signal` (SIGKILL: a crash; SIGTERM: a clean stop) and waits for it to exit. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Starts it again on the same port and store (after kill), and waits until JetStream answers. */
  start(): Promise<void>;
  /** Empties its store while it is stopped, as a node that comes back on a new volume: no stream, consumer or bucket. */
  emptyStore(): void;
  /** Kills it for good and removes its store. */
  stop(): Promise<void>;
}

/** GET `path` on the monitoring port: its status and body, or undefined while nothing answers. */
export function monitor(port: number, path: string): Promise<{ status: number; body: string } | undefined> {
  return new Promise((resolve) => {
    const request = get({ host: '127.0.0.1', port, path, timeout: 1_000, agent: false }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
      response.on('error', () => resolve(undefined));
    });
    request.on('timeout', () => request.destroy());
    request.on('error', () => resolve(undefined));
  });
}

/** One nats-server process that can be killed and started again with the same arguments (port, store, name). */
export interface NatsProcess {
  readonly running: boolean;
  /** Stops the server with `signal` (SIGKILL: a crash; SIGTERM: a clean stop) and waits for it to exit. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Starts it (again) and waits until GET `healthPath` on its monitoring port answers 200. */
  start(): Promise<void>;
  /** Kills it for good. */
  stop(): Promise<void>;
}

/** `args` are nats-server's; `monitorPort` the `-m` among them; `env` the variables a configuration file refers to. */
export function natsProcess(options: {
  args: readonly string[];
  monitorPort: number;
  healthPath: string;
  env?: Record<string, string>;
  label: string;
}): NatsProcess {
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  let running = false;
  let output = '';
  // A test process that dies without stop() must not leave a nats-server behind.
  const killNow = (): void => void child?.kill('SIGKILL');
  process.once('exit', killNow);

  async function start(): Promise<void> {
    if (running) throw new Error(`${options.label} is already running`);
    output = '';
    const started = spawn('nats-server', [...options.args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...options.env } });
    child = started;
    running = true;
    exited = new Promise((resolve) => {
      started.once('exit', () => {
        running = false;
        resolve();
      });
      started.once('error', (error) => {
        output += `could not start: ${error.message}\n`;
        running = false;
        resolve();
      });
    });
    started.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    started.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (!running) throw new Error(`${options.label} exited before it was ready:\n${output}`);
      if ((await monitor(options.monitorPort, options.healthPath))?.status === 200) return;
      if (Date.now() > deadline) throw new Error(`${options.label} was not healthy within 30 s:\n${output.slice(-4_000)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  return {
    get running() {
      return running;
    },
    async kill(signal = 'SIGKILL') {
      if (!running) return;
      child?.kill(signal);
      await exited;
    },
    start,
    async stop() {
      child?.kill('SIGKILL');
      await exited;
      process.off('exit', killNow);
    },
  };
}

/**
 * `config`: a nats-server configuration file (users, permissions), `env` the variables it refers to as `$NAME`;
 * the port, store and JetStream flags still come from here.
 */
export async function startPrivateNats(options: { config?: string; env?: Record<string, string> } = {}): Promise<PrivateNats> {
  const [port, monitorPort] = [await freePort(), await freePort()];
  const storeDir = mkdtempSync(join(tmpdir(), 'notify-nats-'));
  const configuration = options.config ? ['-c', options.config] : [];
  const server = natsProcess({
    args: [...configuration, '-a', '127.0.0.1', '-p', String(port), '-m', String(monitorPort), '-js', '-sd', storeDir, '-n', `notify-test-${port}`],
    monitorPort,
    // 200 once JetStream is up.
    healthPath: '/healthz?js-enabled-only=true',
    ...(options.env ? { env: options.env } : {}),
    label: `private nats-server on port ${port}`,
  });
  await server.start();
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    get running() {
      return server.running;
    },
    kill: (signal) => server.kill(signal),
    start: () => server.start(),
    emptyStore() {
      if (server.running) throw new Error('the store of a running nats-server is not emptied');
      rmSync(storeDir, { recursive: true, force: true });
      mkdirSync(storeDir);
    },
    async stop() {
      await server.stop();
      rmSync(storeDir, { recursive: true, force: true });
    },
  };
}
