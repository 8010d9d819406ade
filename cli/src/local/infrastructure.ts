// PostgreSQL, Redis and NATS (JetStream) for a local run. Whatever already answers is left alone; whatever is missing
// is installed from Debian's packages when its programs are absent, and started with its data under `.data/`.
// Services started here keep running after the launcher exits, like the machine's own would.
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chown, mkdir, readdir, readFile } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';
import { type Endpoint, type ProbeResult, probeNats, probePostgres, probeRedis } from './probes.ts';

const run = promisify(execFile);

/** Human-readable progress lines. */
export interface Reporter {
  info(message: string): void;
  warn(message: string): void;
}

export type InfrastructureName = 'postgres' | 'redis' | 'nats';

export interface InfrastructureOptions {
  /** `.data/` of the checkout: each service started here keeps its data in a folder below it. */
  dataDir: string;
  logger: Reporter;
  /** Defaults: PostgreSQL 127.0.0.1:5432, Redis 127.0.0.1:6379, NATS 127.0.0.1:4222. */
  endpoints?: Partial<Record<InfrastructureName, Endpoint>>;
  /** Time a started service has to answer; default 60 s. */
  startTimeoutMs?: number;
}

/** What was found for each: already `reachable`, or `started` here. */
export type InfrastructureReport = Record<InfrastructureName, 'reachable' | 'started'>;

interface Kind {
  readonly title: string;
  readonly debianPackage: string;
  readonly defaultEndpoint: Endpoint;
  probe(endpoint: Endpoint): Promise<ProbeResult>;
  /** Path of each program needed to start it, or undefined when one is not installed. */
  programs(): Promise<Record<string, string> | undefined>;
  start(context: { dataDir: string; endpoint: Endpoint; programs: Record<string, string>; logger: Reporter }): Promise<void>;
}

const systemDirectories = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];

function findProgram(name: string, extraDirectories: readonly string[] = []): string | undefined {
  const directories = [...(process.env.PATH ?? '').split(delimiter).filter(Boolean), ...systemDirectories, ...extraDirectories];
  return directories.map((directory) => join(directory, name)).find((path) => existsSync(path));
}

/** Debian installs PostgreSQL's server programs in /usr/lib/postgresql/<major>/bin, off the PATH; the newest wins. */
async function postgresBinDirectories(): Promise<string[]> {
  const root = '/usr/lib/postgresql';
  const versions = await readdir(root).catch(() => [] as string[]);
  return versions
    .filter((version) => /^\d+$/.test(version))
    .sort((a, b) => Number(b) - Number(a))
    .map((version) => join(root, version, 'bin'));
}

const isRoot = process.getuid?.() === 0;

/** PostgreSQL refuses to run as root; as root, its programs run as the `postgres` user the Debian package creates. */
async function runPostgresProgram(program: string, args: readonly string[]): Promise<void> {
  const [command, commandArgs] = isRoot ? [findProgram('runuser') ?? 'runuser', ['-u', 'postgres', '--', program, ...args]] : [program, [...args]];
  try {
    await run(command, commandArgs, { timeout: 120_000 });
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr?.trim();
    throw new Error(`${program} ${args[0] ?? ''} failed${stderr ? `: ${stderr}` : ''}`, { cause: error });
  }
}

async function postgresUser(): Promise<{ uid: number; gid: number }> {
  const { stdout: uid } = await run('id', ['-u', 'postgres']);
  const { stdout: gid } = await run('id', ['-g', 'postgres']);
  return { uid: Number(uid.trim()), gid: Number(gid.trim()) };
}

const kinds: Record<InfrastructureName, Kind> = {
  postgres: {
    title: 'PostgreSQL',
    debianPackage: 'postgresql',
    defaultEndpoint: { host: '127.0.0.1', port: 5432 },
    probe: probePostgres,
    async programs() {
      const extra = await postgresBinDirectories();
      const initdb = findProgram('initdb', extra);
      const pgCtl = findProgram('pg_ctl', extra);
      return initdb && pgCtl ? { initdb, pgCtl } : undefined;
    },
    async start({ dataDir, endpoint, programs, logger }) {
      const directory = join(dataDir, 'postgres');
      // Only the cluster folder is private (initdb insists); `.data` itself must stay traversable by the postgres user.
      await mkdir(dataDir, { recursive: true });
      await mkdir(directory, { recursive: true, mode: 0o700 });
      if (isRoot) {
        const { uid, gid } = await postgresUser();
        await chown(directory, uid, gid);
      }
      if (!existsSync(join(directory, 'PG_VERSION'))) {
        logger.info(`PostgreSQL: creating a cluster in ${directory} (user postgres, trust authentication on loopback)`);
        await runPostgresProgram(programs.initdb as string, ['-D', directory, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--no-locale']);
      }
      // TCP only: no Unix socket directory to create or clash with a system cluster's.
      const serverOptions = `-p ${endpoint.port} -c listen_addresses=${endpoint.host} -c unix_socket_directories=''`;
      logger.info(`PostgreSQL: starting on ${endpoint.host}:${endpoint.port} (log: ${join(directory, 'server.log')})`);
      await runPostgresProgram(programs.pgCtl as string, [
        'start',
        '-D',
        directory,
        '-l',
        join(directory, 'server.log'),
        '-w',
        '-t',
        '60',
        '-o',
        serverOptions,
      ]);
    },
  },
  redis: {
    title: 'Redis',
    debianPackage: 'redis-server',
    defaultEndpoint: { host: '127.0.0.1', port: 6379 },
    probe: probeRedis,
    async programs() {
      const server = findProgram('redis-server');
      return server ? { server } : undefined;
    },
    async start({ dataDir, endpoint, programs, logger }) {
      const directory = join(dataDir, 'redis');
      await mkdir(directory, { recursive: true });
      logger.info(`Redis: starting on ${endpoint.host}:${endpoint.port} with data in ${directory}`);
      await run(programs.server as string, [
        '--port',
        String(endpoint.port),
        '--bind',
        endpoint.host,
        '--daemonize',
        'yes',
        '--dir',
        directory,
        '--pidfile',
        join(directory, 'redis.pid'),
        '--logfile',
        join(directory, 'redis.log'),
      ]);
    },
  },
  nats: {
    title: 'NATS',
    debianPackage: 'nats-server',
    defaultEndpoint: { host: '127.0.0.1', port: 4222 },
    probe: probeNats,
    async programs() {
      const server = findProgram('nats-server');
      return server ? { server } : undefined;
    },
    async start({ dataDir, endpoint, programs, logger }) {
      const directory = join(dataDir, 'nats');
      await mkdir(directory, { recursive: true });
      logger.info(`NATS: starting with JetStream on ${endpoint.host}:${endpoint.port} with data in ${directory}`);
      // nats-server has no daemon mode: a detached child that outlives the launcher, found again by its pid file.
      const child = spawn(
        programs.server as string,
        ['-js', '-sd', directory, '-a', endpoint.host, '-p', String(endpoint.port), '-P', join(directory, 'nats.pid'), '-l', join(directory, 'nats.log')],
        { detached: true, stdio: 'ignore' },
      );
      await new Promise<void>((resolve, reject) => {
        child.once('spawn', resolve);
        child.once('error', reject);
      });
      child.unref();
    },
  },
};

const names: readonly InfrastructureName[] = ['postgres', 'redis', 'nats'];

function describe(endpoint: Endpoint): string {
  return `${endpoint.host}:${endpoint.port}`;
}

async function installPackages(packages: readonly string[], logger: Reporter): Promise<void> {
  const sudo = isRoot ? [] : ['sudo', '-n'];
  if (!isRoot && !findProgram('sudo')) {
    throw new Error(`missing programs; install them as root with: apt-get install -y ${packages.join(' ')}`);
  }
  const step = (args: readonly string[]): Promise<void> => {
    const [command, ...rest] = [...sudo, ...args] as [string, ...string[]];
    logger.info(`running: ${[command, ...rest].join(' ')}`);
    return new Promise((resolve, reject) => {
      const child = spawn(command, rest, { stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
      child.once('error', reject);
      child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${[command, ...rest].join(' ')} exited with code ${code}`))));
    });
  };
  await step(['apt-get', 'update']);
  await step(['apt-get', 'install', '-y', '--no-install-recommends', ...packages]);
}

async function waitUntilReady(kind: Kind, endpoint: Endpoint, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const result = await kind.probe(endpoint);
    if (result.state === 'ready') return;
    if (Date.now() > deadline) throw new Error(`${kind.title} started but does not answer on ${describe(endpoint)}: ${result.reason}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Makes PostgreSQL, Redis and NATS with JetStream answer on their endpoints, touching none that already does. */
export async function ensureInfrastructure(options: InfrastructureOptions): Promise<InfrastructureReport> {
  const { logger } = options;
  const endpointOf = (name: InfrastructureName): Endpoint => options.endpoints?.[name] ?? kinds[name].defaultEndpoint;
  const report: Partial<InfrastructureReport> = {};
  const missing: InfrastructureName[] = [];

  for (const name of names) {
    const kind = kinds[name];
    const result = await kind.probe(endpointOf(name));
    if (result.state === 'wrong') throw new Error(`${kind.title}: something on ${describe(endpointOf(name))} is in the way: ${result.reason}`);
    if (result.state === 'ready') {
      logger.info(`${kind.title}: reachable on ${describe(endpointOf(name))}, left as it is`);
      if (result.note) logger.warn(`${kind.title}: ${result.note}`);
      report[name] = 'reachable';
    } else {
      missing.push(name);
    }
  }

  const uninstalled: InfrastructureName[] = [];
  for (const name of missing) if (!(await kinds[name].programs())) uninstalled.push(name);
  if (uninstalled.length > 0) {
    logger.info(`not installed: ${uninstalled.map((name) => kinds[name].title).join(', ')}; installing from Debian's packages`);
    await installPackages(
      uninstalled.map((name) => kinds[name].debianPackage),
      logger,
    );
  }

  for (const name of missing) {
    const kind = kinds[name];
    const endpoint = endpointOf(name);
    // A freshly installed package may have started its own service already.
    if ((await kind.probe(endpoint)).state === 'ready') {
      logger.info(`${kind.title}: reachable on ${describe(endpoint)} after installing it`);
      report[name] = 'reachable';
      continue;
    }
    const programs = await kind.programs();
    if (!programs) throw new Error(`${kind.title}: its programs are still missing after installing ${kind.debianPackage}`);
    await kind.start({ dataDir: options.dataDir, endpoint, programs, logger });
    await waitUntilReady(kind, endpoint, options.startTimeoutMs ?? 60_000);
    logger.info(`${kind.title}: started on ${describe(endpoint)}`);
    report[name] = 'started';
  }
  return report as InfrastructureReport;
}

async function readPid(file: string): Promise<number | undefined> {
  const text = await readFile(file, 'utf8').catch(() => undefined);
  const pid = Number(text?.split('\n')[0]?.trim());
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function terminate(pid: number, timeoutMs: number): Promise<void> {
  if (!alive(pid)) return;
  process.kill(pid, 'SIGTERM');
  const deadline = Date.now() + timeoutMs;
  while (alive(pid) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
  if (alive(pid)) process.kill(pid, 'SIGKILL');
}

/** Stops what `ensureInfrastructure` started in `dataDir` (never a service it found running); returns what it stopped. */
export async function stopLocalInfrastructure(options: { dataDir: string; logger: Reporter }): Promise<InfrastructureName[]> {
  const stopped: InfrastructureName[] = [];
  const postgresDirectory = join(options.dataDir, 'postgres');
  if (existsSync(join(postgresDirectory, 'postmaster.pid'))) {
    const programs = await kinds.postgres.programs();
    if (programs) {
      options.logger.info('PostgreSQL: stopping');
      await runPostgresProgram(programs.pgCtl as string, ['stop', '-D', postgresDirectory, '-m', 'fast', '-w']);
      stopped.push('postgres');
    }
  }
  for (const [name, file] of [
    ['redis', join(options.dataDir, 'redis', 'redis.pid')],
    ['nats', join(options.dataDir, 'nats', 'nats.pid')],
  ] as const) {
    const pid = await readPid(file);
    if (pid !== undefined && alive(pid)) {
      options.logger.info(`${kinds[name].title}: stopping (pid ${pid})`);
      await terminate(pid, 10_000);
      stopped.push(name);
    }
  }
  return stopped;
}
