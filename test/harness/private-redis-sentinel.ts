// A Redis that fails over, of the test's own: a primary and one replica (redis-server --replicaof) and three sentinels
// (redis-server --sentinel) on free loopback ports, their config files in a temp dir. The sentinels declare the master
// down after `downAfterMs` and promote the replica; the test may SIGKILL whichever node is master. Nothing persists.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port.ts';
import { rawCommand } from './private-redis.ts';
import { waitFor } from './wait.ts';

export interface RedisNode {
  readonly port: number;
  /** redis://127.0.0.1:<port> */
  readonly url: string;
  /** Runs one command on this node over a fresh connection; the raw RESP reply. */
  command(...args: string[]): Promise<string>;
  /** SIGKILL; resolves once the process has exited. */
  kill(): Promise<void>;
}

export interface PrivateRedisSentinel {
  /** REDIS_SENTINEL_NAME */
  readonly masterName: string;
  /** REDIS_SENTINELS: the three sentinels, `127.0.0.1:<port>` comma-separated. */
  readonly sentinelsSetting: string;
  /** The primary the replica was started from, then that replica. */
  readonly nodes: readonly [RedisNode, RedisNode];
  /** The node every sentinel names as master (waits, up to `timeoutMs`, until they agree and it says it is one). */
  master(timeoutMs?: number): Promise<RedisNode>;
  /** Waits until the node the sentinels name is not `previous`: the failover has happened and they all agree on it. */
  failedOverFrom(previous: RedisNode, timeoutMs?: number): Promise<RedisNode>;
  /** Waits until the replica has applied every write the master has acknowledged so far (replication offsets). */
  replicated(): Promise<void>;
  stop(): Promise<void>;
}

export interface SentinelTimings {
  /** `sentinel down-after-milliseconds`: how long a master may not answer before it is declared down. */
  readonly downAfterMs: number;
  /** `sentinel failover-timeout`. */
  readonly failoverTimeoutMs: number;
}

const masterName = 'notify';

interface Process {
  readonly child: ChildProcess;
  readonly exited: Promise<void>;
  readonly output: () => string;
}

function startProcess(args: readonly string[]): Process {
  const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.once('error', (error) => {
      output += `could not start: ${error.message}\n`;
      resolve();
    });
  });
  return { child, exited, output: () => output };
}

/** A field of an INFO reply (`role`, `master_repl_offset`...). */
function infoField(info: string, name: string): string | undefined {
  return new RegExp(`^${name}:(.*)\\r$`, 'm').exec(info)?.[1];
}

/** The bulk strings of a RESP array reply, in order. */
function bulkStrings(reply: string): string[] {
  return [...reply.matchAll(/\$\d+\r\n(.*)\r\n/g)].map((match) => match[1] ?? '');
}

export async function startPrivateRedisSentinel(timings: SentinelTimings = { downAfterMs: 1_000, failoverTimeoutMs: 3_000 }): Promise<PrivateRedisSentinel> {
  const dir = mkdtempSync(join(tmpdir(), 'notify-redis-sentinel-'));
  const [primaryPort, replicaPort, ...sentinelPorts] = await Promise.all([freePort(), freePort(), freePort(), freePort(), freePort()]);
  if (primaryPort === undefined || replicaPort === undefined) throw new Error('no free ports');
  const processes = new Map<number, Process>();
  // A test process that dies without stop() must not leave redis-servers behind.
  const killAll = (): void => {
    for (const { child } of processes.values()) child.kill('SIGKILL');
  };
  process.once('exit', killAll);

  const dataArgs = (port: number) => [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    dir,
    '--dbfilename',
    `dump-${port}.rdb`,
    '--loglevel',
    'warning',
  ];
  processes.set(primaryPort, startProcess(dataArgs(primaryPort)));
  processes.set(replicaPort, startProcess([...dataArgs(replicaPort), '--replicaof', '127.0.0.1', String(primaryPort)]));
  for (const port of sentinelPorts) {
    // Each sentinel rewrites its own file with what it learns (the other sentinels, the replica, the new master).
    const file = join(dir, `sentinel-${port}.conf`);
    writeFileSync(
      file,
      [
        `port ${port}`,
        'bind 127.0.0.1',
        `dir ${dir}`,
        `sentinel monitor ${masterName} 127.0.0.1 ${primaryPort} 2`,
        `sentinel down-after-milliseconds ${masterName} ${timings.downAfterMs}`,
        `sentinel failover-timeout ${masterName} ${timings.failoverTimeoutMs}`,
        `sentinel parallel-syncs ${masterName} 1`,
        '',
      ].join('\n'),
    );
    processes.set(port, startProcess([file, '--sentinel', '--loglevel', 'warning']));
  }

  const outputs = (): string => [...processes].map(([port, { output }]) => `--- ${port}\n${output()}`).join('\n');
  const node = (port: number): RedisNode => ({
    port,
    url: `redis://127.0.0.1:${port}`,
    command: (...args) => rawCommand(port, args),
    async kill() {
      const running = processes.get(port);
      running?.child.kill('SIGKILL');
      await running?.exited;
    },
  });
  const nodes = [node(primaryPort), node(replicaPort)] as const;

  /** The master port every sentinel names, when they all name the same one that answers as a master. */
  async function agreedMaster(): Promise<RedisNode | undefined> {
    const named = await Promise.all(
      sentinelPorts.map(async (port) => bulkStrings(await rawCommand(port, ['SENTINEL', 'get-master-addr-by-name', masterName]))[1]),
    );
    const ports = new Set(named);
    if (ports.size !== 1) return undefined;
    const master = nodes.find((candidate) => String(candidate.port) === named[0]);
    if (!master || infoField(await master.command('INFO', 'replication'), 'role') !== 'master') return undefined;
    return master;
  }

  /** The sentinels see each other, the master and its replica in sync: a failover could be agreed and carried out. */
  async function formed(): Promise<boolean> {
    for (const port of sentinelPorts) {
      const fields = bulkStrings(await rawCommand(port, ['SENTINEL', 'master', masterName]));
      const value = (name: string) => fields[fields.indexOf(name) + 1];
      if (value('num-other-sentinels') !== '2' || value('num-slaves') !== '1' || value('flags') !== 'master') return false;
    }
    return infoField(await nodes[1].command('INFO', 'replication'), 'master_link_status') === 'up';
  }

  const sentinel: PrivateRedisSentinel = {
    masterName,
    sentinelsSetting: sentinelPorts.map((port) => `127.0.0.1:${port}`).join(','),
    nodes,
    master: (timeoutMs = 10_000) => waitFor(agreedMaster, { timeoutMs, what: `the sentinels to agree on a master\n${outputs()}` }),
    failedOverFrom: (previous, timeoutMs = 15_000) =>
      waitFor(
        async () => {
          const master = await agreedMaster();
          return master && master.port !== previous.port ? master : undefined;
        },
        { timeoutMs, what: `the sentinels to promote another master than ${previous.port}\n${outputs()}` },
      ),
    async replicated() {
      const master = await sentinel.master();
      const replica = nodes.find((candidate) => candidate !== master);
      if (!replica) throw new Error('no replica');
      const written = Number(infoField(await master.command('INFO', 'replication'), 'master_repl_offset'));
      await waitFor(async () => Number(infoField(await replica.command('INFO', 'replication'), 'slave_repl_offset')) >= written, {
        timeoutMs: 5_000,
        what: `the replica to reach the master's replication offset ${written}`,
      });
    },
    async stop() {
      killAll();
      await Promise.all([...processes.values()].map(({ exited }) => exited));
      process.off('exit', killAll);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await waitFor(formed, { timeoutMs: 20_000, what: `the sentinels to see each other and the replica to sync\n${outputs()}` });
    await sentinel.master();
  } catch (error) {
    await sentinel.stop();
    throw error;
  }
  return sentinel;
}
