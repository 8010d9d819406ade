// A nats-server with JetStream of the test's own, on a free port, that the test may kill and restart (the machine's
// shared NATS must never be touched that way). A restart reuses the port and the store directory, so streams,
// consumers and stored messages survive it, as they survive a restart of a real NATS node.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
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
  /** Kills it for good and removes its store. */
  stop(): Promise<void>;
}

/** GET /healthz?js-enabled-only=true on the monitoring port: 200 once JetStream is up. */
function healthy(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const request = get({ host: '127.0.0.1', port, path: '/healthz?js-enabled-only=true', timeout: 1_000, agent: false }, (response) => {
      response.resume();
      resolve(response.statusCode === 200);
    });
    request.on('timeout', () => request.destroy());
    request.on('error', () => resolve(false));
  });
}

/**
 * `config`: a nats-server configuration file (users, permissions), `env` the variables it refers to as `$NAME`;
 * the port, store and JetStream flags still come from here.
 */
export async function startPrivateNats(options: { config?: string; env?: Record<string, string> } = {}): Promise<PrivateNats> {
  const [port, monitorPort] = [await freePort(), await freePort()];
  const storeDir = mkdtempSync(join(tmpdir(), 'notify-nats-'));
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  let running = false;
  let output = '';
  // A test process that dies without stop() must not leave a nats-server behind.
  const killNow = (): void => void child?.kill('SIGKILL');
  process.once('exit', killNow);

  async function start(): Promise<void> {
    if (running) throw new Error(`private nats-server on port ${port} is already running`);
    output = '';
    const configuration = options.config ? ['-c', options.config] : [];
    const started = spawn('nats-server', [...configuration, '-a', '127.0.0.1', '-p', String(port), '-m', String(monitorPort), '-js', '-sd', storeDir, '-n', `notify-test-${port}`], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...options.env },
    });
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
    const deadline = Date.now() + 15_000;
    for (;;) {
      if (!running) throw new Error(`nats-server on port ${port} exited before it was ready:\n${output}`);
      if (await healthy(monitorPort)) return;
      if (Date.now() > deadline) throw new Error(`nats-server on port ${port} was not healthy within 15 s:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  await start();
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
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
      rmSync(storeDir, { recursive: true, force: true });
    },
  };
}
