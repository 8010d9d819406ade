// The NATS side of least privilege, against a real nats-server running the authorization block of docs/operations.md
// ("NATS credentials and permissions"): each service connects with its own credentials (connectNats with NATS_USER and
// NATS_PASSWORD, or an NKey seed), and only dispatch-svc can put a delivery job in the jobs stream.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { nkeys } from '@nats-io/transport-node';
import { ConfigError } from '@notify/platform';
import { connectNats, ensureStream, type NatsConnection } from '@notify/platform/nats';
import { streamDeclarations, topology } from '@notify/proto';
import { silentLogger } from '../harness/logger.ts';
import { type PrivateNats, startPrivateNats } from '../harness/private-nats.ts';
import { repoRoot } from '../helm/tools.ts';

const logger = silentLogger('nats-permissions');
const names = topology('');
// nats-server reads `$NAME` as a configuration value: a password must not start with a digit (or must come quoted).
const passwords = Object.fromEntries(
  ['DISPATCH', 'MAILER', 'WEBHOOK', 'AUTH', 'GATEWAY'].map((name) => [`NATS_${name}_PASSWORD`, `p${randomBytes(12).toString('hex')}`]),
);
const mailerNkey = nkeys.createUser();
let dir: string;
let server: PrivateNats;
const open: NatsConnection[] = [];

/** The ```conf block of the docs' NATS section, plus one NKey user: the docs say NKeys replace user and password. */
async function documentedConfig(): Promise<string> {
  const docs = await readFile(join(repoRoot, 'docs', 'operations.md'), 'utf8');
  const section = docs.slice(docs.indexOf('### NATS credentials and permissions'));
  const block = /```conf\n([\s\S]*?)```/.exec(section)?.[1];
  assert.ok(block, 'docs/operations.md shows the NATS authorization block');
  const nkeyUser = `{ nkey: ${mailerNkey.getPublicKey()}, permissions: { publish: { deny: ["notify.jobs.>"] } } }`;
  return block.replace(/\n {2}\]\n\}/, `\n    ${nkeyUser}\n  ]\n}`);
}

async function as(user: string, password: string): Promise<NatsConnection> {
  const connection = await connectNats(server.url, user, logger, { natsUser: user, natsPassword: password, natsNkeySeed: '' });
  open.push(connection);
  return connection;
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'notify-nats-auth-'));
  const config = join(dir, 'nats.conf');
  await writeFile(config, await documentedConfig());
  server = await startPrivateNats({ config, env: passwords });
  const dispatch = await as('dispatch-svc', passwords.NATS_DISPATCH_PASSWORD ?? '');
  await ensureStream(await jetstreamManager(dispatch), streamDeclarations(names).jobs, 1);
});

after(async () => {
  for (const connection of open) await connection.close();
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

async function jobsStored(connection: NatsConnection): Promise<number> {
  return (await (await jetstreamManager(connection)).streams.info(names.jobsStream)).state.messages;
}

test('dispatch-svc publishes delivery jobs; the mailer, by password or NKey, and the gateway are refused', async () => {
  const dispatch = await as('dispatch-svc', passwords.NATS_DISPATCH_PASSWORD ?? '');
  await jetstream(dispatch).publish(names.jobsSubject, 'job');
  const before = await jobsStored(dispatch);

  const mailer = await as('mailer-svc', passwords.NATS_MAILER_PASSWORD ?? '');
  const mailerByNkey = await connectNats(server.url, 'mailer-svc', logger, {
    natsUser: '',
    natsPassword: '',
    natsNkeySeed: new TextDecoder().decode(mailerNkey.getSeed()),
  });
  open.push(mailerByNkey);
  const gateway = await as('gateway', passwords.NATS_GATEWAY_PASSWORD ?? '');
  for (const [who, connection] of [
    ['mailer-svc', mailer],
    ['mailer-svc by NKey', mailerByNkey],
    ['gateway', gateway],
  ] as const) {
    await assert.rejects(jetstream(connection, { timeout: 2_000 }).publish(names.jobsSubject, 'forged job'), `${who} may not publish a job`);
  }
  // What matters: nothing reached the stream. The mailer still reads the stream's state, as it does at start.
  assert.equal(await jobsStored(mailer), before);
  // The mailers publish delivery events as before.
  await mailer.publish(names.eventsSubject(1), 'event');
  await mailer.flush();
});

test('a wrong password is refused, and half a set of credentials is a configuration error', async () => {
  await assert.rejects(
    connectNats(server.url, 'mailer-svc', logger, { natsUser: 'mailer-svc', natsPassword: 'not-the-password', natsNkeySeed: '' }),
    /Authorization/i,
  );
  await assert.rejects(
    connectNats(server.url, 'mailer-svc', logger, { natsUser: 'mailer-svc', natsPassword: '', natsNkeySeed: '' }),
    (error: unknown) => error instanceof ConfigError && /NATS_USER and NATS_PASSWORD go together/.test(error.message),
  );
  await assert.rejects(
    connectNats(server.url, 'mailer-svc', logger, { natsUser: 'mailer-svc', natsPassword: 'x', natsNkeySeed: 'SU' }),
    (error: unknown) => error instanceof ConfigError && /NATS_NKEY_SEED/.test(error.message),
  );
});
