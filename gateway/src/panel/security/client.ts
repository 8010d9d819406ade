// Who is on the other end of a panel request: their address (for the sign-in limit) and whether they reached us over
// HTTPS (for the Secure cookie). Forwarded headers are believed only with PANEL_TRUST_PROXY, since anyone can send them.
import type { ParameterizedContext } from 'koa';

export interface ProxyTrust {
  /** One trusted reverse proxy sits in front of the gateway. */
  readonly trustProxy: boolean;
}

/** The last X-Forwarded-For entry is the one the trusted proxy wrote; entries before it are the client's own claims. */
export function clientAddress(ctx: ParameterizedContext, trust: ProxyTrust): string {
  if (trust.trustProxy) {
    const forwarded = ctx.get('X-Forwarded-For').split(',').map((entry) => entry.trim()).filter(Boolean).at(-1);
    if (forwarded) return forwarded;
  }
  return ctx.req.socket.remoteAddress ?? 'unknown';
}

export function cameOverHttps(ctx: ParameterizedContext, trust: ProxyTrust): boolean {
  if (ctx.req.socket && 'encrypted' in ctx.req.socket && ctx.req.socket.encrypted) return true;
  if (!trust.trustProxy) return false;
  return ctx.get('X-Forwarded-Proto').split(',')[0]?.trim().toLowerCase() === 'https';
}
