import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { refusalOf } from './address-policy.ts';
import { createOutbound, type OutboundOptions } from './outbound.ts';

const strict: OutboundOptions = { allowPrivate: false, timeoutMs: 2_000, maxBodyBytes: 1_024 };
const local: OutboundOptions = { ...strict, allowPrivate: true };
const post = (url: string, options: OutboundOptions) => createOutbound(options).post(url, { 'webhook-id': 'evt_1' }, '{}');

function refusedWith(result: Awaited<ReturnType<typeof post>>, pattern: RegExp): void {
  assert.equal(result.kind, 'error');
  if (result.kind === 'error') assert.match(result.error, pattern);
}

describe('the address policy', () => {
  const refused = [
    '127.0.0.1',
    '127.8.9.10',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '169.254.1.1',
    '100.100.100.200',
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    '::1',
    '::',
    'fe80::1',
    'fc00::1',
    'fd00:ec2::254',
    '::ffff:127.0.0.1',
    '::ffff:169.254.169.254',
    '64:ff9b::a9fe:a9fe',
    'ff02::1',
  ];
  for (const address of refused) test(`refuses ${address}`, () => assert.ok(refusalOf(address)));
  for (const address of ['93.184.215.14', '8.8.8.8', '172.32.0.1', '2606:2800:21f:cb07:6820:80da:af6b:8b2c']) {
    test(`allows the public address ${address}`, () => assert.equal(refusalOf(address), undefined));
  }
});

describe('a webhook request', () => {
  let server: Server;
  let base = '';
  const hits: string[] = [];
  let connections = 0;
  const requestsOn = new WeakMap<object, number>();
  before(async () => {
    server = createServer((request, response) => {
      hits.push(request.url ?? '');
      const onThisConnection = (requestsOn.get(request.socket) ?? 0) + 1;
      requestsOn.set(request.socket, onThisConnection);
      // As a receiver that closed a kept connection just as the next request was sent on it.
      if (request.url === '/closes-kept' && onThisConnection > 1) request.socket.destroy();
      else if (request.url === '/redirect') response.writeHead(302, { location: '/elsewhere' }).end();
      else if (request.url === '/large') response.writeHead(200).end('x'.repeat(1_000_000));
      else if (request.url === '/silent') return;
      else if (request.url === '/busy') response.writeHead(503, { 'retry-after': '120' }).end('busy');
      else if (request.url === '/nul') response.writeHead(200).end('ok\0done');
      else response.writeHead(204).end();
    });
    server.on('connection', () => (connections += 1));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  test('plain http is refused unless private targets are allowed', async () => {
    refusedWith(await post(`${base}/ok`, strict), /https is required/);
    const allowed = await post(`${base}/ok`, local);
    assert.equal(allowed.kind === 'response' && allowed.status, 204);
  });

  test('an address written in the URL is refused (IPv4 and IPv6)', async () => {
    for (const url of [
      'https://127.0.0.1/',
      'https://10.0.0.1/',
      'https://169.254.169.254/latest/meta-data/',
      'https://[::1]/',
      'https://[fe80::1]/',
      'https://[fd00::1]/',
      'https://[::ffff:127.0.0.1]/',
      'https://0x7f000001/',
      'https://2130706433/',
      'https://017700000001/',
    ]) {
      refusedWith(await post(url, strict), /refused/);
    }
  });

  test('a name resolving to a private or metadata address is refused at connect time', async () => {
    for (const address of ['127.0.0.1', '169.254.169.254', '::1', 'fd00:ec2::254']) {
      const resolve = async () => [{ address, family: address.includes(':') ? 6 : 4 }];
      refusedWith(await post('https://hooks.example.test/', { ...strict, resolve }), /refused: .*private, loopback, link-local or metadata/);
    }
  });

  test('DNS rebinding is refused: the address checked is the one connected to', async () => {
    // The first lookup (as when an endpoint was saved) answers a public address, the one at connect time a private one.
    const answers = ['93.184.215.14', '127.0.0.1'];
    const resolve = async () => [{ address: answers.shift() ?? '127.0.0.1', family: 4 }];
    await resolve();
    refusedWith(await post('https://rebind.example.test/', { ...strict, resolve }), /refused: 127\.0\.0\.1/);
  });

  test('a name with a public and a private address is refused', async () => {
    const resolve = async () => [
      { address: '93.184.215.14', family: 4 },
      { address: '10.0.0.5', family: 4 },
    ];
    refusedWith(await post('https://mixed.example.test/', { ...strict, resolve }), /refused: 10\.0\.0\.5/);
  });

  test('a redirect is returned as it is, not followed', async () => {
    hits.length = 0;
    const result = await post(`${base}/redirect`, local);
    assert.equal(result.kind === 'response' && result.status, 302);
    assert.deepEqual(hits, ['/redirect']);
  });

  test('at most the first KiB of the response is kept', async () => {
    const result = await post(`${base}/large`, local);
    assert.equal(result.kind, 'response');
    if (result.kind === 'response') assert.equal(result.body.length, 1_024);
  });

  test('a receiver that never answers times out', async () => {
    const started = Date.now();
    refusedWith(await post(`${base}/silent`, { ...local, timeoutMs: 300 }), /no response within 300 ms/);
    assert.ok(Date.now() - started < 2_000);
  });

  test('a timeout says so, as the sender slows down an endpoint that times out in a row; a refusal does not', async () => {
    const silent = await post(`${base}/silent`, { ...local, timeoutMs: 300 });
    assert.equal(silent.kind === 'error' && silent.timedOut, true);
    const refused = await post(`${base}/ok`, strict);
    assert.equal(refused.kind === 'error' && refused.timedOut, undefined);
  });

  test('a NUL byte in the response is kept as U+FFFD (the attempts log is text)', async () => {
    const result = await post(`${base}/nul`, local);
    assert.deepEqual(result, { kind: 'response', status: 200, body: 'ok\uFFFDdone', retryAfter: undefined });
  });

  test('Retry-After is returned with the response', async () => {
    const result = await post(`${base}/busy`, local);
    assert.deepEqual(result, { kind: 'response', status: 503, body: 'busy', retryAfter: '120' });
  });

  test('requests to one receiver reuse one connection, and a response not read to its end closes it', async () => {
    const outbound = createOutbound(local);
    try {
      const before = connections;
      for (let request = 0; request < 3; request += 1) {
        const result = await outbound.post(`${base}/ok`, {}, '{}');
        assert.equal(result.kind === 'response' && result.status, 204);
      }
      assert.equal(connections - before, 1, 'three requests, one connection');
      await outbound.post(`${base}/large`, {}, '{}');
      await outbound.post(`${base}/ok`, {}, '{}');
      assert.equal(connections - before, 2, 'the connection of a response cut short is not reused');
    } finally {
      outbound.close();
    }
  });

  test('a kept connection the receiver closed as it was reused is replaced, and the request made once more', async () => {
    const outbound = createOutbound(local);
    try {
      const before = connections;
      assert.equal((await outbound.post(`${base}/closes-kept`, {}, '{}')).kind, 'response');
      hits.length = 0;
      const result = await outbound.post(`${base}/closes-kept`, {}, '{}');
      assert.equal(result.kind === 'response' && result.status, 204);
      assert.deepEqual(hits, ['/closes-kept', '/closes-kept'], 'made on the kept connection, then on a new one');
      assert.equal(connections - before, 2);
    } finally {
      outbound.close();
    }
  });
});
