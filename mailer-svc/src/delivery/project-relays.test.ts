// The mailer's copy of projects' own relays against a RelayRouteService served in-process over gRPC: it opens what
// dispatch-svc answers, keeps the last lists when dispatch-svc cannot answer or a list does not open, and never writes
// a relay's credentials to its logs.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { after, before, test } from 'node:test';
import { createLogger, createRegistry, GrpcClient, GrpcServer, OperationalError } from '@notify/platform';
import { createDataKey, projectRelaySealContext } from '@notify/platform/mail';
import { type dispatch, dispatchProto } from '@notify/proto';
import { silentLogger } from '@notify/test/harness/logger.ts';
import { ProjectRelays } from './project-relays.ts';

const token = 'internal-token-for-project-relay-tests';
const dataKey = createDataKey(randomBytes(32));
const bulk = 'smtps://bulk:hunter2@pool-b.example.net,smtp://bulk:hunter2@pool-c.example.net:2525';

let answer: () => dispatch.ListProjectRelaysResponse__Output = () => ({ projects: [] });
const logged: string[] = [];
let server: GrpcServer;
let client: GrpcClient<typeof dispatchProto.RelayRouteService.service>;
let relays: ProjectRelays;

const sealed = (projectId: number, urls: string, context = projectRelaySealContext(projectId)) => ({ projectId, sealedSmtpUrl: dataKey.seal(urls, context) });

before(async () => {
  server = new GrpcServer({ logger: silentLogger(), registry: createRegistry('project-relays-test') });
  server.add(dispatchProto.RelayRouteService.service, { ListProjectRelays: async () => answer() }, [{ name: 'mailer', token }]);
  const port = await server.listen(0, '127.0.0.1');
  client = new GrpcClient(dispatchProto.RelayRouteService.service, `127.0.0.1:${port}`, { token, deadlineMs: 2_000 });
  const logger = createLogger(
    'project-relays-test',
    'debug',
    new Writable({ write: (chunk: Buffer, _encoding, done) => done(void logged.push(chunk.toString())) }),
  );
  relays = new ProjectRelays({ dataKey, fetch: () => client.call('ListProjectRelays', {}), logger });
});

after(async () => {
  client?.close();
  await server?.close(1_000);
});

test("a project's relays are opened in order; a project without any uses the default ones", async () => {
  answer = () => ({ projects: [sealed(7, bulk)] });
  assert.equal(await relays.refresh(), true);
  assert.deepEqual(relays.urls(7), ['smtps://bulk:hunter2@pool-b.example.net', 'smtp://bulk:hunter2@pool-c.example.net:2525']);
  assert.equal(relays.urls(8), undefined);
  assert.deepEqual([...relays.named()].length, 2);
  assert.equal(await relays.refresh(), false, 'nothing changed');
});

test('the last lists are kept while dispatch-svc fails, and for a list that does not open', async () => {
  answer = () => {
    throw new OperationalError('database down');
  };
  assert.equal(await relays.refresh(), false);
  assert.equal(relays.urls(7)?.length, 2);
  // Sealed for another project: refused, and project 7 keeps what it had.
  answer = () => ({ projects: [sealed(7, 'smtp://elsewhere.example.net', projectRelaySealContext(9))] });
  await relays.refresh();
  assert.equal(relays.urls(7)?.length, 2);
  assert.ok(logged.some((line) => /cannot be opened with NOTIFY_DATA_KEY/.test(line)));
});

test('a project cleared goes back to the default relays, and no credential reaches the logs', async () => {
  answer = () => ({ projects: [] });
  assert.equal(await relays.refresh(), true);
  assert.equal(relays.urls(7), undefined);
  const everything = logged.join('\n');
  assert.match(everything, /pool-b\.example\.net:465/);
  assert.doesNotMatch(everything, /hunter2/);
});
