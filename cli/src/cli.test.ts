import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type ServiceDefinition, status } from '@grpc/grpc-js';
import { createRegistry, GrpcServer, UserError } from '@notify/platform';
import { authProto, dispatchProto } from '@notify/proto';
import { silentLogger } from '@notify/test/harness/logger.ts';
import { groups, resolve } from './cli.ts';
import { notifyctl, requestOf } from './testing/notifyctl.ts';

const dir = mkdtempSync(join(tmpdir(), 'notifyctl-test-'));
after(() => rmSync(dir, { recursive: true, force: true }));
function file(name: string, content: string): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

describe('help', () => {
  test('notifyctl help lists every group and the environment it reads', async () => {
    const outcome = await notifyctl(['help']);
    assert.equal(outcome.code, 0);
    for (const word of ['plan', 'org', 'project', 'key', 'template', 'messages', 'AUTH_SVC_ADDR', 'DISPATCH_SVC_ADDR', 'ADMIN_TOKEN']) {
      assert.match(outcome.stdout, new RegExp(`\\b${word}\\b`));
    }
    assert.equal(outcome.stderr, '');
  });

  test('a group with --help lists its commands with their usage lines', async () => {
    const outcome = await notifyctl(['plan', '--help']);
    assert.equal(outcome.code, 0);
    assert.match(outcome.stdout, /notifyctl plan create --name NAME \[--monthly-quota N\] \[--suspended\] \[--json\]/);
    assert.match(outcome.stdout, /notifyctl plan update --id ID/);
    assert.match(outcome.stdout, /ADMIN_TOKEN/);
  });

  test('help followed by a group or command shows the same text as --help', async () => {
    assert.deepEqual(await notifyctl(['help', 'key']), await notifyctl(['key', '--help']));
    assert.deepEqual(await notifyctl(['help', 'key', 'create']), await notifyctl(['key', 'create', '-h']));
  });

  test('command help marks required options and says which token the group uses', async () => {
    const outcome = await notifyctl(['messages', 'list', '--help']);
    assert.equal(outcome.code, 0);
    assert.match(outcome.stdout, /--project ID\s+project id \(required\)/);
    assert.match(outcome.stdout, /--state scheduled\|queued\|sending\|deferred\|sent\|failed/);
    assert.match(outcome.stdout, /\$ADMIN_TOKEN/);
  });

  test('--help wins over missing required options', async () => {
    assert.equal((await notifyctl(['org', 'create', '--help'])).code, 0);
  });
});

describe('usage errors exit 2 with one line and a hint, never a stack trace', () => {
  const cases: [string, string[], string][] = [
    ['no command at all', [], "notifyctl: missing command\nRun 'notifyctl help' for usage.\n"],
    ['an unknown group', ['plans', 'list'], "notifyctl: unknown command 'plans'\nRun 'notifyctl help' for usage.\n"],
    ['an unknown command in a group', ['plan', 'delete'], "notifyctl: unknown command 'plan delete'\nRun 'notifyctl plan --help' for usage.\n"],
    ['a group without its command', ['org'], "notifyctl: missing command after 'org' (one of: create, list, update)\nRun 'notifyctl org --help' for usage.\n"],
    ['an unknown flag', ['plan', 'list', '--all'], "notifyctl: unknown option '--all'\nRun 'notifyctl plan list --help' for usage.\n"],
    [
      'a flag without its value',
      ['org', 'create', '--plan', '1', '--name'],
      "notifyctl: option '--name <value>' argument missing\nRun 'notifyctl org create --help' for usage.\n",
    ],
    [
      'a positional argument',
      ['plan', 'list', 'extra'],
      "notifyctl: unexpected argument 'extra'. This command does not take positional arguments\nRun 'notifyctl plan list --help' for usage.\n",
    ],
    [
      'a missing required flag',
      ['org', 'create', '--name', 'Acme'],
      "notifyctl: missing required option --plan\nRun 'notifyctl org create --help' for usage.\n",
    ],
    [
      'a non-integer id',
      ['key', 'revoke', '--id', 'abc'],
      "notifyctl: --id must be a positive integer, got 'abc'\nRun 'notifyctl key revoke --help' for usage.\n",
    ],
    ['a zero id', ['project', 'list', '--org', '0'], "notifyctl: --org must be a positive integer, got '0'\nRun 'notifyctl project list --help' for usage.\n"],
    [
      'a fractional id',
      ['key', 'list', '--project', '1.5'],
      "notifyctl: --project must be a positive integer, got '1.5'\nRun 'notifyctl key list --help' for usage.\n",
    ],
    [
      'a negative quota',
      ['plan', 'create', '--name', 'x', '--monthly-quota=-1'],
      "notifyctl: --monthly-quota must be a non-negative integer, got '-1'\nRun 'notifyctl plan create --help' for usage.\n",
    ],
    [
      'a suspended value that is not a boolean',
      ['plan', 'update', '--id', '1', '--suspended', 'maybe'],
      "notifyctl: --suspended must be true or false, got 'maybe'\nRun 'notifyctl plan update --help' for usage.\n",
    ],
    [
      'an unknown message state',
      ['messages', 'list', '--project', '1', '--state', 'lost'],
      "notifyctl: --state must be one of scheduled, queued, sending, deferred, sent, failed, bounced, complained, canceled, got 'lost'\nRun 'notifyctl messages list --help' for usage.\n",
    ],
    [
      'a page larger than the service serves',
      ['messages', 'list', '--project', '1', '--limit', '501'],
      "notifyctl: --limit must be a positive integer up to 500, got '501'\nRun 'notifyctl messages list --help' for usage.\n",
    ],
    ['an empty name', ['plan', 'create', '--name', ' '], "notifyctl: --name must not be empty\nRun 'notifyctl plan create --help' for usage.\n"],
    [
      'a key rate not in the NOTIFY_PUBLIC_SEND_RATE grammar',
      ['key', 'update', '--id', '1', '--rate', '600/fortnight'],
      "notifyctl: --rate must be <count>/<unit> with unit s, sec, second, m, min, minute, h, hour, d or day (for example 120/min), or default; got '600/fortnight'\nRun 'notifyctl key update --help' for usage.\n",
    ],
    [
      'a key rate of nothing per window',
      ['key', 'create', '--project', '1', '--name', 'k', '--rate', '0/min'],
      "notifyctl: --rate must allow at least 1 request per window, or default; got '0/min'\nRun 'notifyctl key create --help' for usage.\n",
    ],
    [
      'a key update without its rate',
      ['key', 'update', '--id', '1'],
      "notifyctl: missing required option --rate\nRun 'notifyctl key update --help' for usage.\n",
    ],
  ];
  for (const [what, argv, expected] of cases) {
    test(`${what} is reported as a usage error`, async () => {
      const outcome = await notifyctl(argv, { ADMIN_TOKEN: 'unused-admin-token' });
      assert.deepEqual(outcome, { code: 2, stdout: '', stderr: expected });
    });
  }

  test('an unreadable template file names the flag and the path', async () => {
    const missing = join(dir, 'missing.html');
    const outcome = await notifyctl([
      'template',
      'put',
      '--project',
      '1',
      '--slug',
      'welcome',
      '--subject',
      'Hi',
      '--html-file',
      missing,
      '--text-file',
      missing,
    ]);
    assert.equal(outcome.code, 2);
    assert.equal(outcome.stderr, `notifyctl: cannot read --html-file '${missing}': no such file\nRun 'notifyctl template put --help' for usage.\n`);
  });

  test('a schema file that is not JSON is refused before anything is sent', async () => {
    const schema = file('broken.json', '{"type": "object",');
    const outcome = await notifyctl([
      'template',
      'put',
      '--project',
      '1',
      '--slug',
      'w',
      '--subject',
      'Hi',
      '--html-file',
      file('a.html', 'x'),
      '--text-file',
      file('a.txt', 'x'),
      '--schema-file',
      schema,
    ]);
    assert.equal(outcome.code, 2);
    assert.match(
      outcome.stderr,
      new RegExp(`^notifyctl: --schema-file '${schema}' is not a valid JSON Schema: .*JSON.*\nRun 'notifyctl template put --help' for usage.\n$`),
    );
  });

  test('a schema file that is JSON but not a valid schema is refused', async () => {
    const html = file('b.html', 'x');
    const text = file('b.txt', 'x');
    for (const content of ['{"type": "strng"}', '{"type": "object", "requried": ["name"]}', '["name"]']) {
      const outcome = await notifyctl([
        'template',
        'put',
        '--project',
        '1',
        '--slug',
        'w',
        '--subject',
        'Hi',
        '--html-file',
        html,
        '--text-file',
        text,
        '--schema-file',
        file('bad.json', content),
      ]);
      assert.equal(outcome.code, 2, content);
      assert.match(outcome.stderr, /is not a valid JSON Schema: /, content);
    }
  });

  test('the subject must be given once, either inline or from a file', async () => {
    const common = ['template', 'put', '--project', '1', '--slug', 'w', '--html-file', file('c.html', 'x'), '--text-file', file('c.txt', 'x')];
    const both = await notifyctl([...common, '--subject', 'Hi', '--subject-file', file('s.txt', 'Hi')]);
    assert.equal(both.stderr, "notifyctl: give either --subject or --subject-file, not both\nRun 'notifyctl template put --help' for usage.\n");
    const neither = await notifyctl(common);
    assert.equal(neither.stderr, "notifyctl: missing required option --subject (or --subject-file)\nRun 'notifyctl template put --help' for usage.\n");
  });

  test('a missing ADMIN_TOKEN is a usage error naming the variable', async () => {
    const outcome = await notifyctl(['plan', 'list']);
    assert.equal(outcome.code, 2);
    assert.match(outcome.stderr, /^notifyctl: ADMIN_TOKEN is not set: /);
  });

  test('messages list asks for ADMIN_TOKEN too', async () => {
    const outcome = await notifyctl(['messages', 'list', '--project', '1'], { GATEWAY_TOKEN: 'gateway-token-present' });
    assert.equal(outcome.code, 2);
    assert.match(outcome.stderr, /^notifyctl: ADMIN_TOKEN is not set: listing messages needs the admin token/);
  });
});

describe('requests built from flags', () => {
  test('plan create defaults to an unlimited, active plan', async () => {
    assert.deepEqual(await requestOf(['plan', 'create', '--name', 'free']), { name: 'free', monthlyQuota: 0, suspended: false });
    assert.deepEqual(await requestOf(['plan', 'create', '--name', 'pro', '--monthly-quota', '10000', '--suspended']), {
      name: 'pro',
      monthlyQuota: 10000,
      suspended: true,
    });
  });

  test('plan update sends only the fields that were given', async () => {
    assert.deepEqual(await requestOf(['plan', 'update', '--id', '3']), { id: 3 });
    assert.deepEqual(await requestOf(['plan', 'update', '--id', '3', '--suspended', 'false']), { id: 3, suspended: false });
    assert.deepEqual(await requestOf(['plan', 'update', '--id', '3', '--monthly-quota', '0']), { id: 3, monthlyQuota: 0 });
  });

  test('org, project and key commands carry their ids as numbers', async () => {
    assert.deepEqual(await requestOf(['org', 'create', '--name', 'Acme', '--plan', '2']), { name: 'Acme', planId: 2 });
    assert.deepEqual(await requestOf(['project', 'create', '--org', '7', '--name', 'web']), { organizationId: 7, name: 'web' });
    assert.deepEqual(await requestOf(['key', 'create', '--project', '9', '--name', 'ci']), {
      projectId: 9,
      name: 'ci',
      test: false,
      sendRate: '',
      scopes: ['send', 'messages:read'],
      fromDomains: [],
    });
    assert.deepEqual(
      await requestOf(['key', 'create', '--project', '9', '--name', 'ci', '--test', '--rate', ' 600/min ', '--scopes', 'keys:manage, sending']),
      {
        projectId: 9,
        name: 'ci',
        test: true,
        sendRate: '600/min',
        scopes: ['send', 'messages:read', 'keys:manage'],
        fromDomains: [],
      },
    );
    await assert.rejects(requestOf(['key', 'create', '--project', '9', '--name', 'ci', '--scopes', 'send,admin']), /--scopes: unknown scope "admin"/);
    assert.deepEqual(await requestOf(['key', 'update', '--id', '12', '--rate', '10/s']), { id: 12, sendRate: '10/s' });
    assert.deepEqual(await requestOf(['key', 'update', '--id', '12', '--rate', 'default']), { id: 12, sendRate: '' });
    assert.deepEqual(await requestOf(['key', 'revoke', '--id', '12', '--json']), { id: 12 });
  });

  test('template put reads the files, trims a subject file and normalizes the schema', async () => {
    const request = await requestOf([
      'template',
      'put',
      '--project',
      '4',
      '--slug',
      'welcome',
      '--subject-file',
      file('subject.txt', 'Welcome, {{ name }}!\n'),
      '--html-file',
      file('welcome.html', '<p>Hello {{ name }}</p>\n'),
      '--text-file',
      file('welcome.txt', 'Hello {{ name }}\n'),
      '--schema-file',
      file('schema.json', '{\n  "type": "object",\n  "required": ["name"],\n  "properties": {"name": {"type": "string"}}\n}\n'),
      '--activate',
    ]);
    assert.deepEqual(request, {
      projectId: 4,
      slug: 'welcome',
      subject: 'Welcome, {{ name }}!',
      html: '<p>Hello {{ name }}</p>\n',
      text: 'Hello {{ name }}\n',
      variablesSchemaJson: '{"type":"object","required":["name"],"properties":{"name":{"type":"string"}}}',
      active: true,
    });
  });

  test('a schema using formats is accepted, as dispatch-svc accepts it', async () => {
    const schema = { type: 'object', properties: { email: { type: 'string', format: 'email' }, at: { type: 'string', format: 'date-time' } } };
    const request = await requestOf([
      'template',
      'put',
      '--project',
      '1',
      '--slug',
      'w',
      '--subject',
      'Hi',
      '--html-file',
      file('e.html', 'x'),
      '--text-file',
      file('e.txt', 'x'),
      '--schema-file',
      file('formats.json', JSON.stringify(schema)),
    ]);
    assert.equal((request as { variablesSchemaJson: string }).variablesSchemaJson, JSON.stringify(schema));
  });

  test('template put without --activate leaves the active flag to the service', async () => {
    const request = await requestOf([
      'template',
      'put',
      '--project',
      '4',
      '--slug',
      'w',
      '--subject',
      'Hi',
      '--html-file',
      file('d.html', 'x'),
      '--text-file',
      file('d.txt', 'y'),
    ]);
    assert.equal('active' in request, false);
    assert.equal((request as { variablesSchemaJson: string }).variablesSchemaJson, '');
  });

  test('template slugs follow the public API rule', async () => {
    await assert.rejects(resolve(['template', 'activate', '--project', '1', '--slug', 'no spaces']), /--slug must be 1-100 characters/);
    assert.deepEqual(await requestOf(['template', 'deactivate', '--project', '1', '--slug', 'order_shipped-v2']), {
      projectId: 1,
      slug: 'order_shipped-v2',
      active: false,
    });
  });

  test('messages list pages with --before and filters by state', async () => {
    assert.deepEqual(await requestOf(['messages', 'list', '--project', '5']), { projectId: 5, state: '', limit: 50, beforeId: 0 });
    assert.deepEqual(await requestOf(['messages', 'list', '--project', '5', '--state', 'deferred', '--limit', '10', '--before', '900']), {
      projectId: 5,
      state: 'deferred',
      limit: 10,
      beforeId: 900,
    });
  });

  test('messages erase names one project and one address, both required', async () => {
    assert.deepEqual(await requestOf(['messages', 'erase', '--project', '5', '--address', 'Ana@example.com']), { projectId: 5, address: 'Ana@example.com' });
    await assert.rejects(resolve(['messages', 'erase', '--project', '5']), /missing required option --address/);
  });
});

describe('remote failures', () => {
  test('an unreachable service exits 1 naming the address and the variable that sets it', async () => {
    const server = createServer();
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    const { port } = server.address() as { port: number };
    await new Promise((done) => server.close(done));
    const outcome = await notifyctl(['template', 'list', '--project', '1'], { ADMIN_TOKEN: 'some-admin-token', DISPATCH_SVC_ADDR: `127.0.0.1:${port}` });
    assert.equal(outcome.code, 1);
    assert.equal(outcome.stdout, '');
    assert.match(outcome.stderr, new RegExp(`^notifyctl: cannot reach dispatch-svc at 127\\.0\\.0\\.1:${port} \\(DISPATCH_SVC_ADDR\\): .*ECONNREFUSED.*\n$`));
  });
});

describe('every command family exits 1 with the refusal of its service as one line on stderr, nothing on stdout', () => {
  // Every admin service of auth-svc and dispatch-svc, each method refusing as a real one refuses an unknown id.
  const token = 'family-admin-token';
  let server: GrpcServer;
  let env: Record<string, string>;
  before(async () => {
    server = new GrpcServer({ logger: silentLogger(), registry: createRegistry('notifyctl-families') });
    const refuse = new Proxy({}, { get: () => async () => Promise.reject(new UserError(status.NOT_FOUND, 'not_found', 'no such thing')) });
    const services = [authProto.AuthAdminService, ...Object.values(dispatchProto).filter((service) => typeof service === 'function')];
    for (const service of services) server.add((service as { service: ServiceDefinition }).service, refuse, [{ name: 'admin', token }]);
    const port = await server.listen(0, '127.0.0.1');
    env = { ADMIN_TOKEN: token, AUTH_SVC_ADDR: `127.0.0.1:${port}`, DISPATCH_SVC_ADDR: `127.0.0.1:${port}` };
  });
  after(() => server?.close(1_000));

  const families: Record<string, string[][]> = {
    plan: [['plan', 'list']],
    org: [['org', 'update', '--id', '9', '--retention', '30d']],
    project: [['project', 'list', '--org', '9']],
    key: [['key', 'revoke', '--id', '9']],
    template: [['template', 'deactivate', '--project', '9', '--slug', 'welcome']],
    messages: [
      ['messages', 'list', '--project', '9'],
      ['messages', 'erase', '--project', '9', '--address', 'a@example.com'],
      ['messages', 'purge'],
    ],
    'dead-letters': [['dead-letters', 'list', '--project', '9']],
    suppression: [['suppression', 'remove', '--project', '9', '--address', 'a@example.com']],
    webhook: [['webhook', 'delete', '--id', '9']],
    domain: [['domain', 'remove', '--org', '9', '--domain', 'mail.example.com']],
    'panel-user': [['panel-user', 'disable', '--id', '9']],
    audit: [['audit', 'list', '--organization', '9']],
  };

  test('the table names every command family', () => {
    assert.deepEqual(Object.keys(families).sort(), groups.map((group) => group.name).sort());
  });

  for (const [family, commands] of Object.entries(families)) {
    test(family, async () => {
      for (const argv of commands) {
        const outcome = await notifyctl(argv, env);
        assert.equal(outcome.code, 1, `${argv.join(' ')}: ${outcome.stderr}`);
        assert.equal(outcome.stdout, '', argv.join(' '));
        assert.match(outcome.stderr, /^notifyctl: not_found: no such thing\n$/, argv.join(' '));
      }
    });
  }
});
