// docs/contract.md "Rate limit": a malformed NOTIFY_PUBLIC_SEND_RATE stops the gateway at start with a clear message. Only
// gateway processes, no system: a configuration the gateway refuses never reaches its dependencies. (Every unit spelling
// is parsed in platform/src/rate.test.ts; the running gateways of contract-rate-limit.test.ts use `min` and
// `second`.)
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type GatewayExit, runGatewayExpectingExit } from '../harness/gateway-process.ts';

/** What a gateway needs to get past its configuration; ports 0 so that a gateway that wrongly starts binds nothing in use. */
function gatewayEnvironment(overrides: Record<string, string>): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    LOG_LEVEL: 'warn',
    HTTP_PORT: '0',
    METRICS_PORT: '0',
    GATEWAY_TOKEN: 'a-token-of-twenty-four-chars',
    ...overrides,
  };
}

/** Runs `run` for every item, three processes at a time (the machine has two cores), results in item order. */
async function inBatches<T>(
  items: readonly T[],
  run: (item: T) => Promise<GatewayExit & { timedOut: boolean }>,
): Promise<Array<GatewayExit & { timedOut: boolean }>> {
  const results: Array<GatewayExit & { timedOut: boolean }> = [];
  for (let start = 0; start < items.length; start += 3) results.push(...(await Promise.all(items.slice(start, start + 3).map(run))));
  return results;
}

test('a malformed NOTIFY_PUBLIC_SEND_RATE stops the gateway at start with a message naming the variable and the expected form', async () => {
  const malformed = ['abc', '5', '0/min', '5/fortnight', '1.5/min', '5/min/x'];
  const runs = await inBatches(malformed, (rate) => runGatewayExpectingExit(gatewayEnvironment({ NOTIFY_PUBLIC_SEND_RATE: rate })));
  runs.forEach((run, index) => {
    const rate = malformed[index];
    assert.equal(run.timedOut, false, `${rate}: the gateway kept running:\n${run.stdout}${run.stderr}`);
    assert.notEqual(run.code, 0, `${rate}: exit code`);
    assert.match(run.stderr, /NOTIFY_PUBLIC_SEND_RATE/, `${rate}: stderr names the variable:\n${run.stderr}`);
    assert.match(run.stderr, /<count>\/<unit>|at least 1/, `${rate}: stderr says what is expected:\n${run.stderr}`);
    // The rest of the environment is valid: the rate is the only fault reported.
    assert.doesNotMatch(run.stderr, /GATEWAY_TOKEN|HTTP_PORT|METRICS_PORT|REDIS_URL/, `${rate}: only the rate is at fault:\n${run.stderr}`);
  });
});
