// The statistics' range rules (docs/contract.md, "Statistics"), shared by the gateway, which words each fault for the
// caller, and dispatch-svc, which checks again what reaches it. Every bound is UTC and a bucket's first instant, so a
// bucket is the same hour or day for every caller whatever their time zone.

export const statsGranularities = ['hour', 'day'] as const;
export type StatsGranularity = (typeof statsGranularities)[number];

export const statsBucketMs: Readonly<Record<StatsGranularity, number>> = { hour: 3_600_000, day: 86_400_000 };

/**
 * The most buckets one answer holds: 31 days of hours, a leap year of days. A year of hours (8,760 buckets, about a
 * megabyte of JSON) is 365 calls of a day each or one call by day; the bound keeps every answer small and quick.
 */
export const statsMaxBuckets: Readonly<Record<StatsGranularity, number>> = { hour: 744, day: 366 };

/** `2026-03-01` (midnight) or `2026-03-01T14:00:00Z` (`+00:00` also): UTC only, whole seconds. */
const boundPattern = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2}):(\d{2})(?:Z|\+00:00))?$/;

/** A bound as the API takes it, or undefined when it is not one (a date that does not exist, another offset). */
export function parseStatsBound(text: string): Date | undefined {
  const match = boundPattern.exec(text);
  if (!match) return undefined;
  const [year, month, day, hours, minutes, seconds] = match.slice(1).map((part) => Number(part ?? 0)) as [number, number, number, number, number, number];
  const date = new Date(Date.UTC(year, month - 1, day, hours, minutes, seconds));
  // Date.UTC rolls 2026-02-30 over to March: a date that does not exist is refused rather than moved.
  const real = date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day && hours < 24 && minutes < 60 && seconds < 60;
  return real ? date : undefined;
}

/** What is wrong with one field: `format` not a bound, `alignment` not a bucket's start, `order` to not after from, `span` too many buckets. */
export type StatsFault = { readonly field: 'from' | 'to' | 'granularity'; readonly problem: 'format' | 'alignment' | 'order' | 'span' | 'choice' };

export interface StatsRange {
  readonly from: Date;
  readonly to: Date;
  readonly granularity: StatsGranularity;
}

const isGranularity = (value: string): value is StatsGranularity => (statsGranularities as readonly string[]).includes(value);

/** Judges a range: every fault at once, or the range. */
export function checkStatsRange(query: { from: string; to: string; granularity: string }): { faults: StatsFault[]; range?: StatsRange } {
  const faults: StatsFault[] = [];
  const granularity = isGranularity(query.granularity) ? query.granularity : undefined;
  if (!granularity) faults.push({ field: 'granularity', problem: 'choice' });
  const from = parseStatsBound(query.from);
  const to = parseStatsBound(query.to);
  if (!from) faults.push({ field: 'from', problem: 'format' });
  if (!to) faults.push({ field: 'to', problem: 'format' });
  if (granularity && from && from.getTime() % statsBucketMs[granularity] !== 0) faults.push({ field: 'from', problem: 'alignment' });
  if (granularity && to && to.getTime() % statsBucketMs[granularity] !== 0) faults.push({ field: 'to', problem: 'alignment' });
  if (from && to && to <= from) faults.push({ field: 'to', problem: 'order' });
  else if (granularity && from && to && (to.getTime() - from.getTime()) / statsBucketMs[granularity] > statsMaxBuckets[granularity])
    faults.push({ field: 'to', problem: 'span' });
  return faults.length > 0 || !granularity || !from || !to ? { faults } : { faults, range: { from, to, granularity } };
}
