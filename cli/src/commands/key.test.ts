// notifyctl key --from-domains against an AuthAdminService served in-process: the list goes out as given (auth-svc
// normalizes and judges it against the organization's sending domains), comes back in the FROM DOMAINS column, and a
// domain the organization lacks is auth-svc's refusal, printed with exit 1.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { createRegistry, GrpcServer, UserError } from '@notify/platform';
import { type auth, authProto } from '@notify/proto';
import { apiKeyRecord } from '@notify/test/harness/api-key-record.ts';
import { standIn } from '@notify/test/harness/grpc-stand-in.ts';
import { silentLogger } from '@notify/test/harness/logger.ts';
import { notifyctl, requestOf } from '../testing/notifyctl.ts';

test('create --from-domains sends the comma-separated domains, trimmed; without it, none (no limit)', async () => {
  const request = await requestOf(['key', 'create', '--project', '9', '--name', 'news', '--from-domains', ' news.example.com, Mail.Example.com ,']);
  assert.deepEqual((request as auth.CreateApiKeyRequest).fromDomains, ['news.example.com', 'Mail.Example.com']);
  assert.deepEqual(((await requestOf(['key', 'create', '--project', '9', '--name', 'any'])) as auth.CreateApiKeyRequest).fromDomains, []);
});

describe('notifyctl key: against an AuthAdminService', () => {
  const token = 'admin-token-for-notifyctl-key-tests';
  const received: auth.CreateApiKeyRequest__Output[] = [];
  let server: GrpcServer;
  let env: Record<string, string>;

  before(async () => {
    server = new GrpcServer({ logger: silentLogger(), registry: createRegistry('notifyctl-key-test') });
    server.add(
      authProto.AuthAdminService.service,
      standIn(authProto.AuthAdminService.service, {
        CreateApiKey: async (request) => {
          received.push(request);
          const unknown = request.fromDomains.filter((domain) => domain !== 'news.example.com');
          if (unknown.length > 0)
            throw new UserError(
              status.INVALID_ARGUMENT,
              'from_domain_unknown',
              `from_domains: not a sending domain of the organization: ${unknown.join(', ')}`,
            );
          return { key: apiKeyRecord({ fromDomains: request.fromDomains }), apiKey: 'nk_0123456789abcdef.secret' };
        },
        ListApiKeys: async () => ({ keys: [apiKeyRecord(), apiKeyRecord({ id: 13, fromDomains: ['mail.example.com', 'news.example.com'] })] }),
      }),
      [{ name: 'admin', token }],
    );
    env = { ADMIN_TOKEN: token, AUTH_SVC_ADDR: `127.0.0.1:${await server.listen(0, '127.0.0.1')}` };
  });

  after(async () => {
    await server?.close(1_000);
  });

  test('create prints the key with its domains; list shows them, or any', async () => {
    const created = await notifyctl(['key', 'create', '--project', '9', '--name', 'news', '--from-domains', 'news.example.com'], env);
    assert.equal(created.code, 0, created.stderr);
    assert.deepEqual(received.at(-1)?.fromDomains, ['news.example.com']);
    assert.match(created.stdout, /FROM DOMAINS/);
    assert.match(created.stdout, /send,messages:read\s+default\s+news\.example\.com\s/);

    const listed = await notifyctl(['key', 'list', '--project', '9'], env);
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, /^ID\s+PROJECT\s+NAME\s+PREFIX\s+TEST\s+SCOPES\s+RATE\s+FROM DOMAINS\s+CREATED/m);
    assert.match(listed.stdout, /^12\s.*send,messages:read\s+default\s+any\s/m);
    assert.match(listed.stdout, /^13\s.*send,messages:read\s+default\s+mail\.example\.com,news\.example\.com\s/m);
    assert.deepEqual(JSON.parse((await notifyctl(['key', 'list', '--project', '9', '--json'], env)).stdout).keys[1].fromDomains, [
      'mail.example.com',
      'news.example.com',
    ]);
  });

  test("a domain the organization lacks is auth-svc's refusal: exit 1, named on stderr, nothing on stdout", async () => {
    const refused = await notifyctl(['key', 'create', '--project', '9', '--name', 'news', '--from-domains', 'news.example.com,shop.example.com'], env);
    assert.equal(refused.code, 1);
    assert.equal(refused.stdout, '');
    assert.match(refused.stderr, /from_domain_unknown: from_domains: not a sending domain of the organization: shop\.example\.com/);
  });
});
