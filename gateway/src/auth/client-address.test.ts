import assert from 'node:assert/strict';
import { test } from 'node:test';
import { limitedAddress } from './client-address.ts';

test('an IPv4 address is counted as itself, with or without the IPv6 mapping a dual-stack socket reports', () => {
  assert.equal(limitedAddress('203.0.113.7'), '203.0.113.7');
  assert.equal(limitedAddress('::ffff:203.0.113.7'), '203.0.113.7');
  assert.equal(limitedAddress('::FFFF:127.0.0.1'), '127.0.0.1');
});

test('every IPv6 address of one /64 counts as the same client, whatever its spelling', () => {
  const prefix = '2001:db8:85a3:8d3::/64';
  for (const address of ['2001:db8:85a3:8d3::1', '2001:0db8:85a3:08d3:ffff:ffff:ffff:ffff', '2001:DB8:85A3:8D3:1:2:3:4', '2001:db8:85a3:8d3::9%eth0']) {
    assert.equal(limitedAddress(address), prefix, address);
  }
  assert.notEqual(limitedAddress('2001:db8:85a3:8d4::1'), prefix);
  assert.equal(limitedAddress('::1'), '0:0:0:0::/64');
  assert.equal(limitedAddress('2001:db8::'), '2001:db8:0:0::/64');
  assert.equal(limitedAddress('64:ff9b::192.0.2.33'), '64:ff9b:0:0::/64');
});

test('a port written by a proxy is not part of the address', () => {
  assert.equal(limitedAddress('198.51.100.4:51234'), '198.51.100.4');
  assert.equal(limitedAddress('[2001:db8:1:2::5]:443'), '2001:db8:1:2::/64');
  assert.equal(limitedAddress(' 198.51.100.4 '), '198.51.100.4');
});

test('something that is not an IP is kept as a bounded opaque key', () => {
  assert.equal(limitedAddress('unknown'), 'unknown');
  assert.equal(limitedAddress(''), 'unknown');
  assert.equal(limitedAddress('x'.repeat(500)).length, 64);
});
