import assert from 'node:assert/strict';
import { test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { UserError } from '@notify/platform';
import { Checks } from './validation.ts';

function faultsOf(check: (checks: Checks) => void): readonly string[] {
  const checks = new Checks();
  check(checks);
  try {
    checks.done();
    return [];
  } catch (error) {
    assert.ok(error instanceof UserError);
    assert.equal(error.status, status.INVALID_ARGUMENT);
    assert.equal(error.reason, 'invalid_argument');
    return error.fields;
  }
}

test('a name is trimmed and accepted when printable and short enough', () => {
  const checks = new Checks();
  assert.equal(checks.name('name', '  Acme Corp  ', 10), 'Acme Corp');
  assert.equal(checks.name('name', 'Ñandú 🚀', 10), 'Ñandú 🚀');
  checks.done();
});

test('empty, overlong and unprintable names are refused with the field named', () => {
  assert.deepEqual(
    faultsOf((c) => c.name('name', '   ', 10)),
    ['name: must not be empty'],
  );
  assert.deepEqual(
    faultsOf((c) => c.name('name', 'x'.repeat(11), 10)),
    ['name: must be at most 10 characters'],
  );
  assert.deepEqual(
    faultsOf((c) => c.name('name', 'a\u0000b', 10)),
    ['name: must not contain control characters'],
  );
  assert.deepEqual(
    faultsOf((c) => c.name('name', 'evil\u202egpj.exe', 20)),
    ['name: must not contain control characters'],
  );
});

test('every fault of a request is reported at once', () => {
  const faults = faultsOf((c) => {
    c.name('name', '', 100);
    c.quota('monthly_quota', -1);
    c.id('plan_id', 0);
  });
  assert.deepEqual(faults, ['name: must not be empty', 'monthly_quota: must be 0 (unlimited) or a positive number', 'plan_id: must be a positive id']);
});

test('a quota of zero means unlimited and is valid', () => {
  assert.deepEqual(
    faultsOf((c) => c.quota('monthly_quota', 0)),
    [],
  );
  assert.deepEqual(
    faultsOf((c) => c.quota('monthly_quota', 1.5)),
    ['monthly_quota: must be 0 (unlimited) or a positive number'],
  );
});
