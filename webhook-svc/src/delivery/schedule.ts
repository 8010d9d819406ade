// When a failed webhook attempt is tried again (CONTRACT.md, "Webhooks"): after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and
// 10 h, each with jitter, then the delivery is recorded failed. 429, 502, 503 and 504 honour Retry-After when it asks
// for later than the schedule does.
import { parseDuration } from '@notify/platform';

export const contractSchedule = '5s,5m,30m,2h,5h,10h,10h';

/** Delays of the retries, in order: `5s,5m,...` (WEBHOOK_RETRY_SCHEDULE). */
export function parseSchedule(value: string): number[] {
  const delays = value.split(',').map((part) => parseDuration(part.trim()));
  if (delays.length === 0 || delays.some((delay) => !Number.isFinite(delay) || delay <= 0)) throw new Error('a comma-separated list of positive durations');
  return delays;
}

/** Each delay is spread by up to this fraction either way, so the retries of many events do not arrive together. */
const jitter = 0.1;
/** A Retry-After asking for longer than this is held to it (a receiver cannot park an event for ever). */
const maxRetryAfterMs = 24 * 3_600_000;

const honoursRetryAfter = new Set([429, 502, 503, 504]);

/** Milliseconds a Retry-After header asks for (seconds or an HTTP date), or undefined when it is absent or unreadable. */
export function retryAfterMs(value: string | undefined, now: number): number | undefined {
  if (value === undefined) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1_000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/**
 * The delay before the retry after attempt number `attempts` (1 for the first attempt), or undefined when the schedule
 * is used up and the delivery fails.
 */
export function nextRetryDelay(
  schedule: readonly number[],
  attempts: number,
  response: { status?: number; retryAfter?: string },
  now: number,
  random = Math.random,
): number | undefined {
  const base = schedule[attempts - 1];
  if (base === undefined) return undefined;
  const scheduled = Math.round(base * (1 - jitter + 2 * jitter * random()));
  const asked = response.status !== undefined && honoursRetryAfter.has(response.status) ? retryAfterMs(response.retryAfter, now) : undefined;
  return asked !== undefined && asked > scheduled ? Math.min(asked, maxRetryAfterMs) : scheduled;
}
