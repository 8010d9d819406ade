import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseRate } from './rate.ts';

test('the default 120/min is 120 requests per 60 seconds', () => {
  assert.deepEqual(parseRate('120/min'), { points: 120, windowSeconds: 60 });
});

test('every unit spelling of the contract is understood', () => {
  const cases: Array<[string, number]> = [
    ['s', 1],
    ['sec', 1],
    ['second', 1],
    ['m', 60],
    ['min', 60],
    ['minute', 60],
    ['h', 3_600],
    ['hour', 3_600],
    ['d', 86_400],
    ['day', 86_400],
  ];
  for (const [unit, windowSeconds] of cases) assert.deepEqual(parseRate(`5/${unit}`), { points: 5, windowSeconds }, unit);
});

test('spaces around the parts and the unit case do not matter', () => {
  assert.deepEqual(parseRate(' 10 / Hour '), { points: 10, windowSeconds: 3_600 });
});

test('a malformed rate is refused with a message naming the expected form', () => {
  for (const raw of ['', '120', '/min', '120/', '120/week', '120/mins', '1.5/s', '-1/s', 'ten/min', '120/min/2', '120/constructor', '120/__proto__']) {
    assert.throws(() => parseRate(raw), /must be <count>\/<unit> with unit s, sec, second, m, min, minute, h, hour, d or day/, raw);
  }
  assert.throws(() => parseRate('0/min'), /at least 1 request/);
});
