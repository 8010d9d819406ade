// How a rate decision shows on the response: IETF draft-ietf-httpapi-ratelimit-headers fields, and the seed's 429.
import { ApiError } from '../errors/api-error.ts';
import { text } from '../i18n/messages.ts';
import type { RateDecision } from './limiter.ts';

/** `RateLimit-Policy` and `RateLimit`, on every response counted against the limit. */
export function rateLimitHeaders(decision: RateDecision): Record<string, string> {
  return {
    'RateLimit-Policy': `"${decision.policy}";q=${decision.rate.points};w=${decision.rate.windowSeconds}`,
    RateLimit: `"${decision.policy}";r=${decision.remaining};t=${decision.resetSeconds}`,
  };
}

/** 429 `{detail}` for a refused send or read rate. */
export function throttled(decision: RateDecision): ApiError {
  return throttledFor(decision.resetSeconds);
}

/** 429 `{detail}` whose text and Retry-After name the same whole number of seconds (at least 1). */
export function throttledFor(resetSeconds: number): ApiError {
  const seconds = Math.max(1, Math.ceil(resetSeconds));
  return new ApiError(429, undefined, text('throttled', { seconds }), { headers: { 'Retry-After': String(seconds) } });
}
