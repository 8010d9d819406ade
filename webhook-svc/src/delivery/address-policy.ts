// Which addresses a webhook may connect to. Checked on the address actually connected to (after DNS resolution, in the
// socket's lookup), so a name that resolves to a public address when an endpoint is saved and to a private one later
// (DNS rebinding) is refused as well.
import { BlockList, isIP } from 'node:net';

// Two lists: a BlockList matches IPv4 addresses against IPv6 rules too (as IPv4-mapped), which ::ffff:0:0/96 would catch.
const refusedV4 = new BlockList();
const refusedV6 = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT (and Alibaba's metadata 100.100.100.200)
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, including the cloud metadata address 169.254.169.254
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments (192.0.0.192 is Oracle's metadata)
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const)
  refusedV4.addSubnet(network, prefix, 'ipv4');
for (const [network, prefix] of [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['::', 96], // IPv4-compatible (deprecated): would reach the IPv4 address inside
  ['::ffff:0:0', 96], // IPv4-mapped: would reach the IPv4 address inside
  ['64:ff9b::', 96], // NAT64: would reach the IPv4 address inside
  ['64:ff9b:1::', 48], // local-use NAT64
  ['fc00::', 7], // unique-local (AWS's metadata fd00:ec2::254 among them)
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
] as const)
  refusedV6.addSubnet(network, prefix, 'ipv6');

/** Why `address` may not be connected to, or undefined when it may. */
export function refusalOf(address: string): string | undefined {
  const family = isIP(address);
  if (family === 0) return `${address} is not an IP address`;
  return (family === 4 ? refusedV4.check(address, 'ipv4') : refusedV6.check(address, 'ipv6'))
    ? `${address} is a private, loopback, link-local or metadata address`
    : undefined;
}
