// nats-server 2.9 removes an account's store directory when the account's last stream is deleted, and a stream created
// at that moment fails (`could not create storage directory - mkdir .../jetstream/$G/streams: no such file or
// directory`; seen once on this machine's shared NATS). The suites create and delete their own streams at the same
// time, so the shared account can reach zero streams while another is being made: `npm test` keeps one small stream of
// its own for as long as it runs, and deletes it at the end.
import { randomBytes } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';

/** Holds a stream in the account of `natsUrl`; resolves to what deletes it. Without NATS, holds nothing (the suites will say so). */
export async function holdJetStreamAccount(natsUrl: string): Promise<() => Promise<void>> {
  const name = `NOTIFY_SUITE_ANCHOR_${randomBytes(4).toString('hex').toUpperCase()}`;
  try {
    const connection = await connect({ servers: natsUrl, timeout: 2_000 });
    const jsm = await jetstreamManager(connection);
    await jsm.streams.add({ name, subjects: [`notify-suite-anchor.${name.toLowerCase()}`], max_msgs: 1 });
    return async () => {
      await jsm.streams.delete(name).catch(() => false);
      await connection.close();
    };
  } catch (error) {
    console.warn(`npm test: no JetStream stream held at ${natsUrl} (${(error as Error).message})`);
    return async () => {};
  }
}
