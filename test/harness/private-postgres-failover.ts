// A PostgreSQL that fails over, of the test's own: a primary (initdb, `wal_level=replica`; initdb's trust pg_hba already
// admits replication connections from 127.0.0.1) and a streaming standby cloned from it with `pg_basebackup -R`, each
// on its own free port, behind a TCP forwarder standing in for CloudNativePG's `-rw` Service. Replication is
// synchronous (`synchronous_standby_names='*'`, `synchronous_commit=on`, as CloudNativePG's `minSyncReplicas: 1`
// configures): a commit is acknowledged only once the standby has it, so promoting the standby loses no commit.
// The test crashes the primary, promotes the standby and switches the forwarder to it.

import { rmSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { freePort } from './free-port.ts';
import { binDirectory, clusterRoot, type PostgresServer, postgresProgram, postgresServer, serverOptions } from './private-postgres.ts';
import { startTcpForwarder, type TcpForwarder } from './tcp-forwarder.ts';
import { waitFor } from './wait.ts';

export interface PostgresNode {
  readonly port: number;
  /** postgres://postgres@127.0.0.1:<port>/postgres */
  readonly adminUrl: string;
  /** One query on a fresh connection to this node: its rows. */
  query<R extends pg.QueryResultRow>(sql: string, values?: unknown[]): Promise<R[]>;
}

export interface PrivatePostgresFailover {
  /** The forwarder's admin URL: what resources.ts creates the run's database through, and the services reach. */
  readonly adminUrl: string;
  readonly forwarder: TcpForwarder;
  readonly primary: PostgresNode;
  readonly standby: PostgresNode;
  /** `pg_ctl stop -m immediate` on the primary: a crash, its clients' connections cut, nothing more streamed. */
  crashPrimary(): Promise<void>;
  /** `pg_ctl promote` on the standby, then waits until `pg_is_in_recovery()` is false. */
  promoteStandby(): Promise<void>;
  destroy(): Promise<void>;
}

function node(port: number): PostgresNode {
  const adminUrl = `postgres://postgres@127.0.0.1:${port}/postgres`;
  return {
    port,
    adminUrl,
    async query<R extends pg.QueryResultRow>(sql: string, values: unknown[] = []) {
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      try {
        return (await client.query<R>(sql, values)).rows;
      } finally {
        await client.end();
      }
    },
  };
}

export async function startPrivatePostgresFailover(): Promise<PrivatePostgresFailover> {
  const bin = binDirectory();
  const [primaryPort, standbyPort] = await Promise.all([freePort(), freePort()]);
  const root = await clusterRoot();
  const [primaryDir, standbyDir] = [join(root, 'primary'), join(root, 'standby')];
  const servers: PostgresServer[] = [];
  let forwarder: TcpForwarder | undefined;
  const destroy = async (): Promise<void> => {
    await forwarder?.close();
    for (const server of servers) await server.release();
    rmSync(root, { recursive: true, force: true });
  };
  try {
    await postgresProgram(join(bin, 'initdb'), ['-D', primaryDir, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--no-locale', '--no-sync']);
    const replication = "-c wal_level=replica -c max_wal_senders=4 -c synchronous_commit=on -c synchronous_standby_names='*'";
    const primaryServer = postgresServer(bin, primaryDir, join(root, 'primary.log'), `${serverOptions(primaryPort, root)} ${replication}`);
    servers.push(primaryServer);
    await primaryServer.start();
    await postgresProgram(join(bin, 'pg_basebackup'), [
      '-D',
      standbyDir,
      '-h',
      '127.0.0.1',
      '-p',
      String(primaryPort),
      '-U',
      'postgres',
      '-R',
      '-X',
      'stream',
      '-c',
      'fast',
      '--no-sync',
    ]);
    // Until it is promoted: once it is, it has no standby of its own to wait for (the operator would add one).
    const standbyServer = postgresServer(bin, standbyDir, join(root, 'standby.log'), `${serverOptions(standbyPort, root)} -c synchronous_standby_names=`);
    servers.push(standbyServer);
    await standbyServer.start();
    const primary = node(primaryPort);
    const standby = node(standbyPort);
    await waitFor(
      async () =>
        (await primary.query<{ sync_state: string }>("SELECT sync_state FROM pg_stat_replication WHERE state = 'streaming'"))[0]?.sync_state === 'sync',
      {
        timeoutMs: 15_000,
        what: 'the standby to stream synchronously from the primary',
      },
    );
    forwarder = await startTcpForwarder(primaryPort);
    return {
      adminUrl: `postgres://postgres@127.0.0.1:${forwarder.port}/postgres`,
      forwarder,
      primary,
      standby,
      crashPrimary: () => primaryServer.stop('immediate'),
      async promoteStandby() {
        await postgresProgram(join(bin, 'pg_ctl'), ['-D', standbyDir, '-w', '-t', '30', 'promote']);
        await waitFor(async () => (await standby.query<{ recovering: boolean }>('SELECT pg_is_in_recovery() AS recovering'))[0]?.recovering === false, {
          timeoutMs: 15_000,
          intervalMs: 50,
          what: 'the standby to leave recovery',
        });
      },
      destroy,
    };
  } catch (error) {
    await destroy();
    throw error;
  }
}
