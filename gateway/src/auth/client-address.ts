// The address failed authentications are counted against: the client's IP as Koa reports it (ctx.ip, which follows
// X-Forwarded-For only for the proxies TRUSTED_PROXY_HOPS declares), reduced to what one client controls. An IPv6 client
// usually holds a whole /64, so every address in it counts as one; an IPv4-mapped IPv6 address is its IPv4 address.
import { isIPv4, isIPv6 } from 'node:net';

/** Longest text kept from an address that is not an IP (a proxy that writes something else must not grow keys). */
const maxOpaqueLength = 64;

export function limitedAddress(ip: string): string {
  const bare = withoutPort(ip.trim());
  const mapped = /^::ffff:([0-9.]+)$/i.exec(bare)?.[1];
  if (mapped !== undefined && isIPv4(mapped)) return mapped;
  if (isIPv4(bare)) return bare;
  if (isIPv6(bare)) return `${ipv6Hextets(bare).slice(0, 4).join(':')}::/64`;
  return bare.slice(0, maxOpaqueLength) || 'unknown';
}

/** Some proxies write `1.2.3.4:5678` or `[2001:db8::1]:5678` into X-Forwarded-For. */
function withoutPort(address: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(address)?.[1];
  if (bracketed !== undefined) return bracketed;
  const v4 = /^([0-9.]+):\d+$/.exec(address)?.[1];
  return v4 !== undefined && isIPv4(v4) ? v4 : address;
}

/** The eight 16-bit groups of a valid IPv6 address, in lower-case hex without leading zeros. */
function ipv6Hextets(address: string): string[] {
  const [head = '', tail] = (address.split('%')[0] ?? '').split('::');
  const groups = (part: string | undefined): string[] => {
    if (!part) return [];
    // A dotted IPv4 tail (`::ffff:1.2.3.4`, `64:ff9b::1.2.3.4`) fills the last two groups.
    return part.split(':').flatMap((group) => {
      if (!group.includes('.')) return [group];
      const [a = 0, b = 0, c = 0, d = 0] = group.split('.').map(Number);
      return [((a << 8) | b).toString(16), ((c << 8) | d).toString(16)];
    });
  };
  const left = groups(head);
  const right = groups(tail);
  const zeros = tail === undefined ? [] : Array.from({ length: 8 - left.length - right.length }, () => '0');
  return [...left, ...zeros, ...right].map((group) => parseInt(group, 16).toString(16));
}
