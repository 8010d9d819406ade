import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiError } from '../errors/api-error.ts';
import { ensurePlanAllowsSend, MonthlyUsageMemory } from './plan.ts';

/** A memory over a fake clock and a fake GetUsage that counts its calls. */
function memory(answers: Map<number, number>, start = Date.parse('2026-03-15T12:00:00Z')) {
  const clock = { now: start };
  const asked: number[] = [];
  const usage = new MonthlyUsageMemory({
    ask: async (organizationId) => {
      asked.push(organizationId);
      return answers.get(organizationId) ?? 0;
    },
    ttlMs: 5_000,
    now: () => clock.now,
  });
  return { usage, asked, clock };
}

const plan = (monthlyQuota: number, suspended = false) => ({ planId: 1, name: 'basic', suspended, monthlyQuota });

test('the first question asks dispatch-svc; the answer is remembered for the TTL, and each new figure restarts it', async () => {
  const { usage, asked, clock } = memory(new Map([[7, 3]]));
  assert.equal(await usage.acceptedThisMonth(7), 3);
  assert.equal(await usage.acceptedThisMonth(7), 3);
  assert.deepEqual(asked, [7]);
  clock.now += 4_000;
  usage.record(7, 4);
  clock.now += 4_000;
  assert.equal(usage.acceptedThisMonth(7), 4, 'a figure from a Send answer, 4 s old: no call');
  clock.now += 1_000;
  assert.equal(await usage.acceptedThisMonth(7), 3, 'no figure for 5 s: asked again');
  assert.deepEqual(asked, [7, 7]);
});

test('the higher of two figures of a month is kept: counts only grow, and every figure is a lower bound', async () => {
  const { usage } = memory(new Map());
  usage.record(7, 10);
  usage.record(7, 8);
  assert.equal(usage.remembered(7), 10);
  usage.record(7, 12);
  assert.equal(usage.remembered(7), 12);
});

test('a figure of last month does not answer for this one', async () => {
  const { usage, asked, clock } = memory(new Map([[7, 0]]), Date.parse('2026-03-31T23:59:59Z'));
  usage.record(7, 100);
  clock.now += 2_000;
  assert.equal(usage.remembered(7), undefined);
  assert.equal(await usage.acceptedThisMonth(7), 0);
  assert.deepEqual(asked, [7]);
});

test('concurrent questions about a cold organization share one call', async () => {
  const { usage, asked } = memory(
    new Map([
      [7, 2],
      [8, 5],
    ]),
  );
  assert.deepEqual(
    await Promise.all([usage.acceptedThisMonth(7), usage.acceptedThisMonth(7), usage.acceptedThisMonth(8), usage.acceptedThisMonth(7)]),
    [2, 2, 5, 2],
  );
  assert.deepEqual(asked, [7, 8]);
});

test('a failed question is not remembered: the next one asks again', async () => {
  let fail = true;
  const asked: number[] = [];
  const usage = new MonthlyUsageMemory({
    ask: async (organizationId) => {
      asked.push(organizationId);
      if (fail) throw new Error('dispatch-svc down');
      return 1;
    },
  });
  await assert.rejects(async () => usage.acceptedThisMonth(7), /dispatch-svc down/);
  fail = false;
  assert.equal(await usage.acceptedThisMonth(7), 1);
  assert.deepEqual(asked, [7, 7]);
});

test('check 5: suspended or quota used up is plan_blocked; an unlimited plan never asks for its usage', async () => {
  const { usage, asked } = memory(new Map([[7, 3]]));
  const ask = () => usage.acceptedThisMonth(7);
  await ensurePlanAllowsSend(null, ask);
  await ensurePlanAllowsSend(plan(0), ask);
  assert.deepEqual(asked, []);
  await assert.rejects(ensurePlanAllowsSend(plan(0, true), ask), (error) => error instanceof ApiError && error.code === 'plan_blocked');
  await ensurePlanAllowsSend(plan(4), ask);
  await assert.rejects(ensurePlanAllowsSend(plan(3), ask), (error) => error instanceof ApiError && error.status === 403 && error.code === 'plan_blocked');
  assert.deepEqual(asked, [7]);
});
