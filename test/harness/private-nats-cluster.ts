// Three nats-servers of the test's own, clustered on loopback, each with JetStream and its own store, as production
// runs NATS (docs/delivery-guarantees.md): streams and buckets created with NATS_STREAM_REPLICAS=3 have a copy on every
// node, and an acknowledgement means a quorum (two nodes) stored the write. A test may SIGKILL any one node and start it
// again on the same ports and store, and ask which node leads a stream, to kill the leader on purpose.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port.ts';
import { monitor, type NatsProcess, natsProcess, type PrivateNats } from './private-nats.ts';
import { waitFor } from './wait.ts';

/** One node: killed and started as a PrivateNats is; its start() also waits until the cluster is whole and current again. */
export interface ClusterNode extends Pick<PrivateNats, 'url' | 'running' | 'kill' | 'start'> {
  /** The node's server name (its identity in the cluster, kept across restarts). */
  readonly name: string;
}

export interface PrivateNatsCluster {
  /** Every node's URL, comma-separated: what NATS_URL takes, so a client fails over between them. */
  readonly url: string;
  readonly nodes: readonly ClusterNode[];
  /** Every stream (a KV bucket's is `KV_<bucket>`) with its replica count and the index in `nodes` of its leader, if it has one. */
  streams(): Promise<{ name: string; replicas: number; leader: number | undefined }[]>;
  /** The index in `nodes` of the node leading `stream`, once it has a leader. */
  streamLeader(stream: string): Promise<number>;
  /** Waits until a JetStream meta leader is elected and every node is current with it. */
  whole(timeoutMs?: number): Promise<void>;
  /** Kills every node for good and removes the stores. */
  stop(): Promise<void>;
}

interface Jsz {
  meta_cluster?: { leader?: string; replicas?: { name: string; current: boolean; offline?: boolean }[] };
  account_details?: { stream_detail?: { name: string; cluster?: { leader?: string }; config?: { num_replicas: number } }[] }[];
}

const size = 3;

/**
 * Nine ports are picked free and then bound by three processes: another process may take one in between. A node that
 * finds its port taken exits at once; the cluster is then started again on other ports.
 */
export async function startPrivateNatsCluster(): Promise<PrivateNatsCluster> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnFreePorts();
    } catch (error) {
      if (attempt === 3 || !String(error).includes('address already in use')) throw error;
    }
  }
}

async function startOnFreePorts(): Promise<PrivateNatsCluster> {
  const ports: { client: number; route: number; monitor: number }[] = [];
  for (let index = 0; index < size; index++) ports.push({ client: await freePort(), route: await freePort(), monitor: await freePort() });
  const root = mkdtempSync(join(tmpdir(), 'notify-nats-cluster-'));
  const clusterName = `notify-test-${ports[0]?.client}`;
  const names = ports.map((_, index) => `${clusterName}-n${index}`);

  const servers: NatsProcess[] = ports.map((port, index) =>
    natsProcess({
      args: [
        '-a',
        '127.0.0.1',
        '-p',
        String(port.client),
        '-m',
        String(port.monitor),
        '-js',
        '-sd',
        join(root, `n${index}`),
        '-n',
        names[index] ?? '',
        '--cluster_name',
        clusterName,
        '--cluster',
        `nats://127.0.0.1:${port.route}`,
        '--routes',
        ports
          .filter((_, other) => other !== index)
          .map((other) => `nats://127.0.0.1:${other.route}`)
          .join(','),
      ],
      monitorPort: port.monitor,
      // A clustered node answers 200 once it has JetStream; whole() waits for the rest.
      healthPath: '/healthz?js-enabled-only=true',
      label: `private nats-server ${names[index]} on port ${port.client}`,
    }),
  );

  /** /jsz of the first running node that answers. */
  async function jsz(query: string): Promise<Jsz | undefined> {
    for (const [index, server] of servers.entries()) {
      if (!server.running) continue;
      const answer = await monitor(ports[index]?.monitor ?? 0, `/jsz${query}`);
      if (answer?.status === 200) return JSON.parse(answer.body) as Jsz;
    }
    return undefined;
  }

  async function whole(timeoutMs = 30_000): Promise<void> {
    await waitFor(
      async () => {
        // The leader's view: it lists the other nodes with whether they are current.
        const meta = (await jsz(''))?.meta_cluster;
        const leader = meta?.leader;
        if (!leader) return false;
        const leaderIndex = names.indexOf(leader);
        const view = (await monitor(ports[leaderIndex]?.monitor ?? 0, '/jsz'))?.body;
        const replicas = view ? ((JSON.parse(view) as Jsz).meta_cluster?.replicas ?? []) : [];
        if (replicas.length !== size - 1 || !replicas.every((replica) => replica.current && !replica.offline)) return false;
        // And every node has caught up with the streams it holds (healthz checks its streams and consumers).
        for (const port of ports) if ((await monitor(port.monitor, '/healthz'))?.status !== 200) return false;
        return true;
      },
      { timeoutMs, intervalMs: 200, what: `the NATS cluster ${clusterName} to have a meta leader and ${size} current nodes` },
    );
  }

  async function streams(): Promise<{ name: string; replicas: number; leader: number | undefined }[]> {
    const details = (await jsz('?accounts=true&streams=true&config=true'))?.account_details ?? [];
    return details
      .flatMap((account) => account.stream_detail ?? [])
      .map((detail) => {
        const leader = names.indexOf(detail.cluster?.leader ?? '');
        return { name: detail.name, replicas: detail.config?.num_replicas ?? 1, leader: leader >= 0 ? leader : undefined };
      });
  }

  async function stop(): Promise<void> {
    for (const server of servers) await server.stop();
    rmSync(root, { recursive: true, force: true });
  }

  try {
    await Promise.all(servers.map((server) => server.start()));
    await whole();
  } catch (error) {
    await stop();
    throw error;
  }

  return {
    url: ports.map((port) => `nats://127.0.0.1:${port.client}`).join(','),
    nodes: servers.map((server, index) => ({
      name: names[index] ?? '',
      url: `nats://127.0.0.1:${ports[index]?.client}`,
      get running() {
        return server.running;
      },
      kill: (signal) => server.kill(signal),
      async start() {
        await server.start();
        await whole();
      },
    })),
    streams,
    async streamLeader(stream) {
      return waitFor(async () => (await streams()).find((detail) => detail.name === stream)?.leader, {
        timeoutMs: 15_000,
        intervalMs: 200,
        what: `a leader of stream ${stream}`,
      });
    },
    whole,
    stop,
  };
}
