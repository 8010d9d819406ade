import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { test } from 'node:test';
import { reservePorts } from './ports.ts';

test('free ports are distinct and a port asked for explicitly is kept', async () => {
  const [first] = await reservePorts([{ name: 'probe', port: 0 }]);
  const ports = await reservePorts([
    { name: 'a', port: 0 },
    { name: 'b', port: first as number },
    { name: 'c', port: 0 },
  ]);
  assert.equal(new Set(ports).size, 3);
  assert.equal(ports[1], first);
});

test('a busy port is refused, naming the port and what wanted it', async () => {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
  const { port } = server.address() as { port: number };
  try {
    await assert.rejects(
      reservePorts([
        { name: 'gateway HTTP', port },
        { name: 'other', port: 0 },
      ]),
      { message: `port already in use: ${port} (gateway HTTP)` },
    );
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
});
