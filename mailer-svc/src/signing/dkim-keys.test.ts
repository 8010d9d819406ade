// The mailer's DKIM key holder against a SigningKeyService served in-process over gRPC: it follows what dispatch-svc
// answers, keeps the last key when dispatch-svc cannot answer, and never writes the key to its logs.
import assert from 'node:assert/strict';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { createLogger, createRegistry, GrpcClient, GrpcServer, OperationalError, UserError } from '@notify/platform';
import { createDataKey } from '@notify/platform/mail';
import { type dispatch, dispatchProto } from '@notify/proto';
import { silentLogger } from '@notify/test/harness/logger.ts';
import { DkimKeys } from './dkim-keys.ts';

const token = 'internal-token-for-dkim-key-tests';
const dataKey = createDataKey(randomBytes(32));
const pem = (): string => generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

/** What the service answers next: a key, no key, or a failure. */
let answer: () => dispatch.SigningKey__Output = () => {
  throw new UserError(status.NOT_FOUND, 'domain_not_found', 'no key');
};
const asked: string[] = [];
const logged: string[] = [];
let server: GrpcServer;
let client: GrpcClient<typeof dispatchProto.SigningKeyService.service>;
let keys: DkimKeys;

before(async () => {
  server = new GrpcServer({ logger: silentLogger(), registry: createRegistry('dkim-keys-test') });
  server.add(
    dispatchProto.SigningKeyService.service,
    {
      GetSigningKey: async (request) => {
        asked.push(request.domain);
        return answer();
      },
    },
    [{ name: 'mailer', token }],
  );
  const port = await server.listen(0, '127.0.0.1');
  client = new GrpcClient(dispatchProto.SigningKeyService.service, `127.0.0.1:${port}`, { token, deadlineMs: 2_000 });
  const logger = createLogger('dkim-keys-test', 'debug', new Writable({ write: (chunk: Buffer, _encoding, done) => done(void logged.push(chunk.toString())) }));
  keys = new DkimKeys({ domain: 'example.com', dataKey, fetch: (request) => client.call('GetSigningKey', request), logger });
});

after(async () => {
  client?.close();
  await server?.close(1_000);
});

describe('the DKIM key of MAIL_FROM’s domain', () => {
  const first = pem();
  const second = pem();
  const serve = (privateKey: string, selector = 'notify', context = 'dkim:example.com') => {
    answer = () => ({ domain: 'example.com', selector, sealedPrivateKey: dataKey.seal(privateKey, context) });
  };

  test('is none until dispatch-svc has one, then the opened key for MAIL_FROM’s domain', async () => {
    await keys.refresh();
    assert.equal(keys.current(), undefined);
    assert.deepEqual(asked, ['example.com']);
    serve(first);
    await keys.refresh();
    assert.deepEqual(keys.current(), { domainName: 'example.com', keySelector: 'notify', privateKey: first });
  });

  test('is kept while dispatch-svc fails, and when the key it answers does not open', async () => {
    answer = () => {
      throw new OperationalError('database down');
    };
    await keys.refresh();
    assert.equal(keys.current()?.privateKey, first);
    serve(second, 's2', 'dkim:other.example.com');
    await keys.refresh();
    assert.equal(keys.current()?.privateKey, first, 'a key sealed for another domain is refused');
    assert.ok(logged.some((line) => /cannot be opened with NOTIFY_DATA_KEY/.test(line)));
  });

  test('follows a new key, and is none again once the domain is removed', async () => {
    serve(second, 's2');
    await keys.refresh();
    assert.deepEqual(keys.current(), { domainName: 'example.com', keySelector: 's2', privateKey: second });
    answer = () => {
      throw new UserError(status.NOT_FOUND, 'domain_not_found', 'no key');
    };
    await keys.refresh();
    assert.equal(keys.current(), undefined);
  });

  test('never reaches the logs', () => {
    assert.ok(logged.length >= 3, 'changes and failures were logged');
    const everything = logged.join('\n');
    assert.doesNotMatch(everything, /PRIVATE KEY/);
    for (const key of [first, second]) assert.ok(!everything.includes(key.split('\n')[1]!), 'no line of a key');
  });
});
