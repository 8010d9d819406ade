// A PostgreSQL cluster of the test's own (initdb under a temporary directory, a free port), that the test may stop and
// start again: the machine's shared PostgreSQL must never be touched that way. A restart keeps the data, as a
// restarted database server does. As root (CI containers), its programs run as the `postgres` user, since PostgreSQL
// refuses to run as root.
import { execFile, execFileSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './free-port.ts';

const run = promisify(execFile);
const isRoot = process.getuid?.() === 0;

export interface PrivatePostgres {
  /** postgres://postgres@127.0.0.1:<port>/postgres, the admin URL resources.ts creates the run's database from. */
  readonly adminUrl: string;
  readonly port: number;
  /** Stops the server: `fast` disconnects clients and shuts down cleanly; `immediate` is a crash (recovery at start). */
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  /** Starts it again on the same port and data, and waits until it accepts connections. */
  start(): Promise<void>;
  /** Stops it for good and removes its data. */
  destroy(): Promise<void>;
}

/** Debian keeps the server programs off the PATH, in /usr/lib/postgresql/<major>/bin; the newest wins. */
export function binDirectory(): string {
  const root = '/usr/lib/postgresql';
  const major = readdirSync(root)
    .filter((name) => /^\d+$/.test(name))
    .sort((a, b) => Number(b) - Number(a))[0];
  const dir = major === undefined ? undefined : join(root, major, 'bin');
  if (!dir || !existsSync(join(dir, 'pg_ctl'))) throw new Error(`no PostgreSQL server programs under ${root}`);
  return dir;
}

export async function postgresProgram(program: string, args: readonly string[]): Promise<void> {
  const [command, commandArgs] = isRoot ? ['runuser', ['-u', 'postgres', '--', program, ...args]] : [program, [...args]];
  try {
    await run(command, commandArgs, { timeout: 60_000 });
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr?.trim();
    throw new Error(`${program} ${args[0] ?? ''} failed${stderr ? `: ${stderr}` : ''}`, { cause: error });
  }
}

async function postgresOwner(): Promise<{ uid: number; gid: number }> {
  const { stdout: uid } = await run('id', ['-u', 'postgres']);
  const { stdout: gid } = await run('id', ['-g', 'postgres']);
  return { uid: Number(uid.trim()), gid: Number(gid.trim()) };
}

export interface PostgresServer {
  start(): Promise<void>;
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  /** Stops it immediately and forgets it: for destroy(). */
  release(): Promise<void>;
}

/** A directory for a private cluster (its data, socket and log), owned by `postgres` when the tests run as root. */
export async function clusterRoot(): Promise<string> {
  const root = mkdtempSync(join(tmpdir(), 'notify-pg-'));
  if (isRoot) {
    const { uid, gid } = await postgresOwner();
    chownSync(root, uid, gid);
    chmodSync(root, 0o700);
  }
  return root;
}

/** Starts and stops the server of `dataDir` with `options`; one that is running when the test process exits is stopped. */
export function postgresServer(bin: string, dataDir: string, logFile: string, options: string): PostgresServer {
  let running = false;
  async function start(): Promise<void> {
    await postgresProgram(join(bin, 'pg_ctl'), ['-D', dataDir, '-l', logFile, '-o', options, '-w', '-t', '30', 'start']);
    running = true;
  }
  async function stop(mode: 'fast' | 'immediate' = 'fast'): Promise<void> {
    if (!running) return;
    await postgresProgram(join(bin, 'pg_ctl'), ['-D', dataDir, '-m', mode, '-w', '-t', '30', 'stop']);
    running = false;
  }
  // A test process that dies without destroy() must not leave a postgres behind.
  const stopNow = (): void => {
    if (!running) return;
    const args = ['-D', dataDir, '-m', 'immediate', 'stop'];
    try {
      if (isRoot) execFileSync('runuser', ['-u', 'postgres', '--', join(bin, 'pg_ctl'), ...args], { stdio: 'ignore' });
      else execFileSync(join(bin, 'pg_ctl'), args, { stdio: 'ignore' });
    } catch {
      // Exiting anyway; nothing more can be done here.
    }
  };
  process.once('exit', stopNow);
  return {
    start,
    stop,
    async release() {
      await stop('immediate').catch(() => undefined);
      process.off('exit', stopNow);
    },
  };
}

/** The server options every private cluster has: its port, loopback only, its socket in `root`. */
export function serverOptions(port: number, root: string): string {
  return `-p ${port} -c listen_addresses=127.0.0.1 -k ${root} -c fsync=off -c full_page_writes=off -c max_connections=100`;
}

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const bin = binDirectory();
  const port = await freePort();
  const root = await clusterRoot();
  const dataDir = join(root, 'data');
  // Durability settings are off: the data only has to survive a clean or crash stop of the server, not of the machine.
  await postgresProgram(join(bin, 'initdb'), ['-D', dataDir, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--no-locale', '--no-sync']);
  const server = postgresServer(bin, dataDir, join(root, 'server.log'), `${serverOptions(port, root)} -c synchronous_commit=off`);
  await server.start();
  return {
    adminUrl: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    stop: server.stop,
    start: server.start,
    async destroy() {
      await server.release();
      rmSync(root, { recursive: true, force: true });
    },
  };
}
