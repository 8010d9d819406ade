// runService in a child process of its own (it owns the process: signals, exit codes): /readyz must not say ready
// before the service's start has finished, even when every dependency check it added already passes.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { test } from 'node:test';

// A service whose start adds a passing check, then waits for SIGUSR2 before it finishes.
const service = `
  import { runService } from '@notify/platform';
  runService('start-probe', {}, async ({ addReadinessCheck }) => {
    addReadinessCheck('database', async () => true);
    await new Promise((resolve) => process.once('SIGUSR2', resolve));
  });
`;

test('/readyz is 503 (started: failing) while start is still running, and 200 once it has finished', async () => {
  const child = spawn(process.execPath, ['--input-type=module', '-e', service], {
    env: { ...process.env, METRICS_PORT: '0', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines: Array<Record<string, unknown>> = [];
  const waiters: Array<() => void> = [];
  const wakeAll = (): void => {
    for (const wake of waiters.splice(0)) wake();
  };
  createInterface({ input: child.stdout }).on('line', (line) => {
    lines.push(JSON.parse(line) as Record<string, unknown>);
    wakeAll();
  });
  child.on('exit', wakeAll);
  const logged = async (message: string): Promise<Record<string, unknown>> => {
    for (;;) {
      const found = lines.find((line) => line.msg === message);
      if (found) return found;
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the service exited before logging "${message}"`);
      await new Promise<void>((resolve) => waiters.push(resolve));
    }
  };
  try {
    const { port } = await logged('operations listener ready (/metrics, /healthz, /readyz)');
    const readyz = async () => {
      const response = await fetch(`http://127.0.0.1:${String(port)}/readyz`);
      return { status: response.status, body: (await response.json()) as unknown };
    };
    assert.deepEqual(await readyz(), { status: 503, body: { status: 'unavailable', checks: { started: 'failing', database: 'ok' } } });
    assert.equal((await fetch(`http://127.0.0.1:${String(port)}/healthz`)).status, 200, 'alive while starting');
    child.kill('SIGUSR2');
    await logged('started');
    assert.deepEqual(await readyz(), { status: 200, body: { status: 'ok', checks: { started: 'ok', database: 'ok' } } });
    child.kill('SIGTERM');
    const [code] = (await once(child, 'exit')) as [number | null];
    assert.equal(code, 0);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }
});
