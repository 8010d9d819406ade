import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseOrganizationId } from './organization-header.ts';

test('a positive decimal integer is an organization id', () => {
  assert.deepEqual(parseOrganizationId('1'), { ok: true, id: 1 });
  assert.deepEqual(parseOrganizationId('4096'), { ok: true, id: 4096 });
  assert.deepEqual(parseOrganizationId(String(Number.MAX_SAFE_INTEGER)), { ok: true, id: Number.MAX_SAFE_INTEGER });
});

test('an absent header is reported as missing', () => {
  assert.deepEqual(parseOrganizationId(undefined), { ok: false, reason: 'organization.missing' });
  assert.deepEqual(parseOrganizationId(''), { ok: false, reason: 'organization.missing' });
});

test('anything but a positive integer is invalid', () => {
  for (const header of ['0', '-1', '+1', '01', '1.0', '1e3', ' 1', '1, 2', 'abc', '0x10', '١٢', '1234567890123456789', '9007199254740993']) {
    assert.deepEqual(parseOrganizationId(header), { ok: false, reason: 'organization.invalid' }, header);
  }
});
