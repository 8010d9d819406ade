// Relay selection against real SMTP servers (smtp-server, and raw sockets for a session that breaks after DATA and for
// one that watches how commands arrive): the order of a list, failover when a relay cannot be reached, the circuit that
// skips it and lets it back, projects routed through their own relays, and the SMTP session itself: the envelope and
// DATA pipelined where the relay offers PIPELINING (RFC 2920), one connection kept for many messages.
import assert from 'node:assert/strict';
import { type AddressInfo, createServer, type Server } from 'node:net';
import { after, test } from 'node:test';
import { createRegistry } from '@notify/platform';
import { silentLogger } from '@notify/test/harness/logger.ts';
import { SMTPServer } from 'smtp-server';
import { createRelayMetrics } from './relay-metrics.ts';
import { type RelayOptions, Relays } from './relays.ts';

interface Relay {
  readonly url: string;
  readonly received: string[];
  stop(): Promise<void>;
  start(): Promise<void>;
}

const open: { close(): void }[] = [];
const running: Relay[] = [];
after(async () => {
  for (const relays of open) relays.close();
  for (const relay of running) await relay.stop();
});

/** A relay that accepts everything except recipients starting with `refuse`, and can be stopped and started on its port. */
async function startRelay(port = 0): Promise<Relay> {
  const received: string[] = [];
  let server: SMTPServer | undefined;
  let boundPort = port;
  const relay: Relay = {
    get url() {
      return `smtp://127.0.0.1:${boundPort}`;
    },
    received,
    async start() {
      server = new SMTPServer({
        disabledCommands: ['STARTTLS', 'AUTH'],
        logger: false,
        onRcptTo(address, _session, callback) {
          callback(address.address.startsWith('refuse') ? Object.assign(new Error('5.1.1 no such user'), { responseCode: 550 }) : null);
        },
        onData(stream, session, callback) {
          stream.resume();
          stream.on('end', () => {
            received.push(session.envelope.rcptTo.map((rcpt) => rcpt.address).join(','));
            callback(null);
          });
        },
      });
      await new Promise<void>((ready) => server?.listen(boundPort, '127.0.0.1', ready));
      boundPort = (server.server.address() as AddressInfo).port;
    },
    async stop() {
      const closing = server;
      server = undefined;
      if (closing) await new Promise<void>((done) => closing.close(() => done()));
    },
  };
  await relay.start();
  running.push(relay);
  return relay;
}

/** A relay that takes the message's data, then drops the connection instead of answering it. */
async function startDroppingRelay(): Promise<{ url: string; server: Server }> {
  const server = createServer((socket) => {
    let inData = false;
    let buffered = '';
    socket.write('220 dropping relay\r\n');
    socket.on('data', (chunk) => {
      buffered += chunk.toString();
      if (inData) {
        if (buffered.includes('\r\n.\r\n')) socket.destroy();
        return;
      }
      for (let newline = buffered.indexOf('\r\n'); newline >= 0; newline = buffered.indexOf('\r\n')) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 2);
        if (/^EHLO/i.test(line)) socket.write('250 dropping relay\r\n');
        else if (/^DATA/i.test(line)) {
          inData = true;
          socket.write('354 go ahead\r\n');
          return;
        } else socket.write('250 ok\r\n');
      }
    });
    socket.on('error', () => {});
  });
  await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready));
  open.push({ close: () => server.close() });
  return { url: `smtp://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

/**
 * A relay offering PIPELINING that records, for each read from a connection outside DATA, the commands it held, and
 * how many connections were opened; it answers every command once it has read it.
 */
async function startPipeliningRelay(): Promise<{ url: string; reads: string[][]; connections: () => number; messages: () => number }> {
  const reads: string[][] = [];
  let connections = 0;
  let messages = 0;
  const server = createServer((socket) => {
    connections += 1;
    let inData = false;
    let buffered = '';
    socket.write('220 pipelining relay\r\n');
    socket.on('data', (chunk) => {
      buffered += chunk.toString('latin1');
      const commands: string[] = [];
      for (;;) {
        if (inData) {
          const end = buffered.indexOf('\r\n.\r\n');
          if (end < 0) break;
          buffered = buffered.slice(end + 5);
          inData = false;
          messages += 1;
          socket.write('250 2.0.0 queued\r\n');
          continue;
        }
        const newline = buffered.indexOf('\r\n');
        if (newline < 0) break;
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 2);
        const verb = (line.split(/[ :]/)[0] ?? '').toUpperCase();
        commands.push(verb);
        if (verb === 'EHLO') socket.write('250-pipelining relay\r\n250-PIPELINING\r\n250 8BITMIME\r\n');
        else if (verb === 'DATA') {
          inData = true;
          socket.write('354 go ahead\r\n');
        } else if (verb === 'QUIT') socket.end('221 bye\r\n');
        else socket.write('250 ok\r\n');
      }
      if (commands.length > 0) reads.push(commands);
    });
    socket.on('error', () => {});
  });
  await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready));
  open.push({ close: () => server.close() });
  return { url: `smtp://127.0.0.1:${(server.address() as AddressInfo).port}`, reads, connections: () => connections, messages: () => messages };
}

function relaysFor(defaultUrls: string[], overrides: Partial<RelayOptions> = {}) {
  const metrics = createRelayMetrics(createRegistry('relays-test'));
  const relays = new Relays({
    defaultUrls,
    projects: { urls: () => undefined, named: () => [] },
    poolSize: 1,
    failureThreshold: 2,
    coolDownMs: 300,
    metrics,
    logger: silentLogger('relays-test'),
    ...overrides,
  });
  open.push(relays);
  return { relays, metrics };
}

let sequence = 0;
function nextRecipient(): string {
  sequence += 1;
  return `someone${sequence}@example.com`;
}
const send = (relays: Relays, to = nextRecipient(), projectId = 1) =>
  relays.send(projectId, { from: 'no-reply@example.com', to, subject: 'hello', text: 'hello', envelope: { from: 'no-reply@example.com', to: [to] } });

const count = async (
  metric: { get(): Promise<{ values: { labels: Record<string, unknown>; value: number }[] }> },
  labels: Record<string, string>,
): Promise<number> => (await metric.get()).values.find((value) => Object.entries(labels).every(([name, label]) => value.labels[name] === label))?.value ?? 0;

test('a message whose first relay refuses connections is delivered through the second in the same attempt', async () => {
  const first = await startRelay();
  const second = await startRelay();
  await first.stop();
  const { relays, metrics } = relaysFor([first.url, second.url]);
  const outcome = await send(relays, 'ana@example.com');
  assert.equal(outcome.kind, 'accepted');
  assert.deepEqual(second.received, ['ana@example.com']);
  const firstAddress = first.url.replace('smtp://', '');
  assert.equal(await count(metrics.failovers, { relay: firstAddress }), 1);
  assert.equal(await count(metrics.sends, { relay: firstAddress, result: 'unreached' }), 1);
});

test('a relay that failed the threshold is skipped until its cool-down, and used again once it is back', async () => {
  const first = await startRelay();
  const second = await startRelay();
  await first.stop();
  const { relays, metrics } = relaysFor([first.url, second.url]);
  const firstAddress = first.url.replace('smtp://', '');
  await send(relays);
  await send(relays);
  assert.deepEqual(
    relays.states().map((relay) => relay.state),
    ['open', 'closed'],
  );
  assert.equal((await send(relays)).kind, 'accepted');
  assert.equal(await count(metrics.sends, { relay: firstAddress, result: 'unreached' }), 2, 'the open circuit was not tried');
  assert.equal(second.received.length, 3);

  await first.start();
  await new Promise((resolve) => setTimeout(resolve, 350));
  assert.equal(relays.states()[0]?.state, 'half-open');
  assert.equal((await send(relays, 'back@example.com')).kind, 'accepted');
  assert.deepEqual(first.received, ['back@example.com']);
  assert.equal(relays.states()[0]?.state, 'closed');
});

test('a refusal of the message is its own outcome: it is not offered to the next relay', async () => {
  const first = await startRelay();
  const second = await startRelay();
  const { relays } = relaysFor([first.url, second.url]);
  const outcome = await send(relays, 'refuse@example.com');
  assert.equal(outcome.kind, 'permanent');
  assert.equal(outcome.smtpCode, 550);
  assert.deepEqual(second.received, []);
  assert.equal(relays.states()[0]?.state, 'closed');
});

test('a session that breaks after the data was sent is deferred, never offered to the next relay (the first may have accepted it)', async () => {
  const dropping = await startDroppingRelay();
  const second = await startRelay();
  const { relays } = relaysFor([dropping.url, second.url]);
  const outcome = await send(relays, 'maybe@example.com');
  assert.equal(outcome.kind, 'temporary');
  assert.deepEqual(second.received, []);
});

test('with every circuit of the list open the attempt is deferred without connecting', async () => {
  const first = await startRelay();
  const second = await startRelay();
  await first.stop();
  await second.stop();
  const { relays, metrics } = relaysFor([first.url, second.url], { coolDownMs: 60_000 });
  await send(relays);
  await send(relays);
  const outcome = await send(relays);
  assert.equal(outcome.kind, 'temporary');
  assert.match(outcome.kind === 'temporary' ? outcome.reason : '', /no relay available/);
  assert.equal(await count(metrics.sends, { relay: first.url.replace('smtp://', ''), result: 'unreached' }), 2);
});

test('a single relay is tried even with its circuit open, as before failover existed', async () => {
  const only = await startRelay();
  await only.stop();
  const { relays } = relaysFor([only.url], { coolDownMs: 60_000 });
  await send(relays);
  await send(relays);
  assert.equal(relays.states()[0]?.state, 'open');
  await only.start();
  assert.equal((await send(relays, 'still@example.com')).kind, 'accepted');
  assert.deepEqual(only.received, ['still@example.com']);
  assert.equal(relays.states()[0]?.state, 'closed');
});

test('a project with its own relays sends through them, another project through the default ones; prune closes a dropped relay', async () => {
  const shared = await startRelay();
  const own = await startRelay();
  let routes = new Map<number, string[]>([[7, [own.url]]]);
  const { relays } = relaysFor([shared.url], { projects: { urls: (projectId) => routes.get(projectId), named: () => [...routes.values()].flat() } });
  await send(relays, 'seven@example.com', 7);
  await send(relays, 'eight@example.com', 8);
  assert.deepEqual(own.received, ['seven@example.com']);
  assert.deepEqual(shared.received, ['eight@example.com']);
  assert.equal(relays.states().length, 2);
  routes = new Map();
  relays.prune();
  assert.deepEqual(
    relays.states().map((relay) => relay.address),
    [shared.url.replace('smtp://', '')],
  );
  await send(relays, 'seven-again@example.com', 7);
  assert.deepEqual(shared.received, ['eight@example.com', 'seven-again@example.com']);
});

test('a relay offering PIPELINING gets MAIL FROM, RCPT TO and DATA in one write, and one connection carries 150 messages', async () => {
  const relay = await startPipeliningRelay();
  const { relays } = relaysFor([relay.url]);
  const raw = Buffer.from('From: no-reply@example.com\r\nTo: ana@example.com\r\nSubject: hello\r\n\r\nhello\r\n');
  for (let index = 0; index < 150; index += 1) {
    const outcome = await relays.send(1, { envelope: { from: 'no-reply@example.com', to: [`ana${index}@example.com`] }, raw });
    assert.equal(outcome.kind, 'accepted', JSON.stringify(outcome));
  }
  assert.equal(relay.messages(), 150);
  const envelopes = relay.reads.filter((commands) => commands.includes('MAIL'));
  assert.equal(envelopes.length, 150);
  for (const commands of envelopes) assert.deepEqual(commands, ['MAIL', 'RCPT', 'DATA'], 'the envelope and DATA arrive together, before any reply');
  assert.equal(relay.connections(), 1, 'no reconnection every 100 messages');
});
