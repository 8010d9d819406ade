import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CircuitBreaker } from './circuit-breaker.ts';

function breakerAt(clock: { now: number }) {
  return new CircuitBreaker({ failureThreshold: 3, coolDownMs: 1_000, now: () => clock.now });
}

test('a circuit opens after the threshold of consecutive failures, not before', () => {
  const clock = { now: 0 };
  const breaker = breakerAt(clock);
  breaker.failed();
  breaker.failed();
  assert.equal(breaker.state(), 'closed');
  assert.equal(breaker.tryAcquire(), true);
  breaker.failed();
  assert.equal(breaker.state(), 'open');
  assert.equal(breaker.tryAcquire(), false);
});

test('a success in between starts the count of failures again', () => {
  const breaker = breakerAt({ now: 0 });
  breaker.failed();
  breaker.failed();
  breaker.succeeded();
  breaker.failed();
  breaker.failed();
  assert.equal(breaker.state(), 'closed');
});

test('after the cool-down one probe is let through, and its success closes the circuit', () => {
  const clock = { now: 0 };
  const breaker = breakerAt(clock);
  for (let i = 0; i < 3; i += 1) breaker.failed();
  clock.now = 999;
  assert.equal(breaker.tryAcquire(), false);
  clock.now = 1_000;
  assert.equal(breaker.state(), 'half-open');
  assert.equal(breaker.tryAcquire(), true);
  assert.equal(breaker.tryAcquire(), false, 'one probe at a time');
  breaker.succeeded();
  assert.equal(breaker.state(), 'closed');
  assert.equal(breaker.tryAcquire(), true);
});

test('a failed probe opens the circuit for another cool-down', () => {
  const clock = { now: 0 };
  const breaker = breakerAt(clock);
  for (let i = 0; i < 3; i += 1) breaker.failed();
  clock.now = 1_500;
  assert.equal(breaker.tryAcquire(), true);
  breaker.failed();
  assert.equal(breaker.state(), 'open');
  clock.now = 2_400;
  assert.equal(breaker.tryAcquire(), false);
  clock.now = 2_500;
  assert.equal(breaker.tryAcquire(), true);
});
