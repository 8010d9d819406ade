// A redis-server of the test's own, on a free port, that the test may kill, pause and restart (the machine's shared Redis
// must never be touched that way). Nothing is persisted: a restart starts empty, as a replaced Redis node would.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port.ts';

export interface PrivateRedis {
  readonly port: number;
  /** redis://127.0.0.1:<port> */
  readonly url: string;
  readonly pid: number | undefined;
  /** Sends a signal (SIGKILL, SIGSTOP, SIGCONT...); resolves once the process has exited when the signal ends it. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Starts redis-server again on the same port (after kill) and waits until it answers PING. */
  restart(): Promise<void>;
  /** Runs one command over a fresh connection and returns the raw RESP reply (for inspecting keys). */
  command(...args: string[]): Promise<string>;
  stop(): Promise<void>;
}

/** RESP encoding of one command. */
function encode(args: readonly string[]): string {
  return `*${args.length}\r\n${args.map((arg) => `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`).join('')}`;
}

/** One command on a fresh connection; the whole reply is whatever arrives within a short quiet period. */
export function rawCommand(port: number, args: readonly string[], timeoutMs = 1_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    let reply = '';
    let quiet: NodeJS.Timeout | undefined;
    const timer = setTimeout(() => finish(new Error(`redis-server on port ${port} did not answer within ${timeoutMs} ms`)), timeoutMs);
    const finish = (error?: Error): void => {
      clearTimeout(timer);
      clearTimeout(quiet);
      socket.destroy();
      if (error) reject(error);
      else resolve(reply);
    };
    socket.once('connect', () => socket.write(encode(args)));
    socket.on('data', (chunk: Buffer) => {
      reply += chunk.toString('utf8');
      clearTimeout(quiet);
      quiet = setTimeout(() => finish(), 30);
    });
    socket.once('error', (error) => finish(error));
  });
}

export async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'notify-redis-'));
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  let output = '';
  // A test process that dies without stop() must not leave a redis-server behind.
  const killNow = (): void => void child?.kill('SIGKILL');
  process.once('exit', killNow);

  async function start(): Promise<void> {
    output = '';
    const started = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, '--loglevel', 'warning'],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    child = started;
    let running = true;
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
    const deadline = Date.now() + 10_000;
    for (;;) {
      if (!running) throw new Error(`redis-server on port ${port} exited before it was ready:\n${output}`);
      const pong = await rawCommand(port, ['PING'], 500).catch(() => '');
      if (pong.startsWith('+PONG')) return;
      if (Date.now() > deadline) throw new Error(`redis-server on port ${port} did not answer PING within 10 s:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  await start();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    get pid() {
      return child?.exitCode === null && child.signalCode === null ? child.pid : undefined;
    },
    async kill(signal = 'SIGKILL') {
      child?.kill(signal);
      if (signal === 'SIGKILL' || signal === 'SIGTERM') await exited;
    },
    async restart() {
      child?.kill('SIGKILL');
      await exited;
      await start();
    },
    command: (...args) => rawCommand(port, args),
    async stop() {
      child?.kill('SIGCONT');
      child?.kill('SIGKILL');
      await exited;
      process.off('exit', killNow);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
