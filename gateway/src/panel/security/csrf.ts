// Cross-site request forgery. Every form of a signed-in user carries the session's synchronizer token; the sign-in
// form, before any session exists, carries a token that must equal the one in a SameSite=Strict cookie set with the
// form (double submit). Independently, a browser's own Sec-Fetch-Site header must not say "cross-site".
import { timingSafeEqual } from 'node:crypto';
import type { ParameterizedContext } from 'koa';

export const csrfField = '_csrf';

export function tokensMatch(presented: string | undefined, expected: string | undefined): boolean {
  if (!presented || !expected) return false;
  const a = Buffer.from(presented);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** False for a request a browser says another site started; other clients do not send the header (and are not browsers). */
export function sameSiteRequest(ctx: ParameterizedContext): boolean {
  const site = ctx.get('Sec-Fetch-Site');
  return site === '' || site === 'same-origin' || site === 'none';
}
