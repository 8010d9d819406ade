import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatRetention, parseRetention } from './retention.ts';

test('a retention is days or hours, held as hours', () => {
  assert.equal(parseRetention('30d'), 720);
  assert.equal(parseRetention('36h'), 36);
  assert.equal(parseRetention(' 1h '), 1);
  assert.equal(parseRetention('3650d'), 87_600);
});

test('anything else is refused with a readable reason', () => {
  for (const raw of ['', '30', '30m', '2w', '-1d', '1.5d', 'd', '30 days', '1e3h'])
    assert.throws(() => parseRetention(raw), /must be a number of days or hours, such as 30d or 36h/, raw);
  assert.throws(() => parseRetention('0d'), /at least 1h/);
  assert.throws(() => parseRetention('0h'), /at least 1h/);
  assert.throws(() => parseRetention('3651d'), /at most 3650d/);
});

test('hours are written back in days when they are whole days', () => {
  assert.equal(formatRetention(720), '30d');
  assert.equal(formatRetention(36), '36h');
  assert.equal(formatRetention(parseRetention('48h')), '2d');
});
