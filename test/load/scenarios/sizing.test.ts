import assert from 'node:assert/strict';
import { test } from 'node:test';
import { plans, runLimitMs } from './context.ts';
import { singleSendBacklog } from './delivery.ts';
import { halfSustainedRate } from './end-to-end.ts';
import { replayRate } from './replay.ts';
import { scaleOutBacklog } from './scale-out.ts';
import { tracingRate } from './tracing-cost.ts';

test('replays run at the planned rate unless that is more than half of what the system accepted at saturation', () => {
  assert.equal(replayRate(500, undefined), 500);
  assert.equal(replayRate(500, 3_000), 500);
  assert.equal(replayRate(500, 420), 200);
  assert.equal(replayRate(500, 30), 50);
});

test('the scale-out backlog outlasts every window even at the best rate the sink delay allows', () => {
  for (const plan of Object.values(plans)) {
    const perReplica = (plan.smtpPoolSize * 1_000) / plan.scaleDelayMs;
    const mostConsumed = plan.scaleReplicas.reduce((sum, replicas) => sum + replicas * perReplica * (plan.scaleWindowS + 1 + 3), 0);
    assert.ok(scaleOutBacklog(plan) > mostConsumed, plan.name);
  }
});

test('single sends and batches together make the delivery backlog, the single sends at least as many as the scale-out windows take', () => {
  for (const plan of Object.values(plans)) {
    assert.equal(singleSendBacklog(plan) + plan.batchMessages, plan.deliveryMessages + scaleOutBacklog(plan), plan.name);
    assert.ok(singleSendBacklog(plan) >= scaleOutBacklog(plan), plan.name);
  }
  assert.equal(singleSendBacklog(plans.full), 9_780);
});

test('the tracing cost runs at the planned rate unless that is more than half of what the system accepted at saturation', () => {
  assert.equal(tracingRate(200, undefined), 200);
  assert.equal(tracingRate(200, 663), 200);
  assert.equal(tracingRate(200, 391), 150);
  assert.equal(tracingRate(200, 60), 50);
});

test('the end-to-end run offers half the sustained rate, in whole requests per second and at least one', () => {
  assert.equal(halfSustainedRate(416), 208);
  assert.equal(halfSustainedRate(391.4), 196);
  assert.equal(halfSustainedRate(1), 1);
});

test('a run with CPU profiles is given half as long again before it is stopped', () => {
  assert.equal(runLimitMs(plans.quick, false), 5 * 60_000);
  assert.equal(runLimitMs(plans.quick, true), 7.5 * 60_000);
  assert.equal(runLimitMs(plans.full, true), 1.5 * plans.full.limitMs);
});
